// What encode(text, add_special_tokens = true) puts around the ids of one sequence: the
// tokenizer.json post_processor for a single sequence (TemplateProcessing's "single",
// BertProcessing's [CLS] A [SEP], RobertaProcessing's <s> A </s>; ByteLevel adds nothing), or
// for a bare vocab.txt the BERT template [CLS] A [SEP]. Pairs of sequences are not supported.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/tokenizer/added_vocabulary.h"

namespace mt::tok {

class PostProcessor {
public:
  PostProcessor() = default; // adds nothing
  PostProcessor(std::vector<TokenId> prefix, std::vector<TokenId> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}

  std::vector<TokenId> apply(std::span<const TokenId> ids) const;
  const std::vector<TokenId>& prefix() const { return prefix_; }
  const std::vector<TokenId>& suffix() const { return suffix_; }

private:
  std::vector<TokenId> prefix_, suffix_;
};

class TokenizerJson;
// The post_processor of tokenizer.json (absent or null: adds nothing). Throws TokenizerError
// naming post_processor for a type other than those above.
PostProcessor read_post_processor(const TokenizerJson& doc);

} // namespace mt::tok
