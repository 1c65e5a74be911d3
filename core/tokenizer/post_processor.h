// What encode(text, add_special_tokens = true) puts around the ids of one sequence, and
// encode_pair around two (a sentence pair, with each token's type id -- what a BERT model
// takes as token_type_ids): the tokenizer.json post_processor (TemplateProcessing's "single"
// and "pair", BertProcessing's [CLS] A [SEP] and [CLS] A [SEP] B [SEP] with B's part of type 1,
// RobertaProcessing's <s> A </s> and <s> A </s> </s> B </s>, every type 0; ByteLevel adds
// nothing), or for a bare vocab.txt BERT's. Without special tokens (or a post-processor that
// adds none) a pair is A then B, of types 0 and 1 (RobertaProcessing: 0), as Hugging Face's
// tokenizers encodes it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tokenizer/added_vocabulary.h"

namespace mt::tok {

// Ids and, per id, its type (the segment of a pair it belongs to).
struct Encoding {
  std::vector<TokenId> ids;
  std::vector<uint32_t> type_ids;
};

// One piece of a pair template: sequence A or B, or special tokens, with the type id its
// tokens get.
struct TemplatePiece {
  enum class Kind { A, B, Special };
  Kind kind = Kind::Special;
  std::vector<TokenId> ids; // Special only
  uint32_t type_id = 0;
};

class PostProcessor {
public:
  PostProcessor() = default; // adds nothing
  // `pair` empty: a pair gets no special tokens (A then B); `types_all_zero`: RobertaProcessing.
  PostProcessor(std::vector<TokenId> prefix, std::vector<TokenId> suffix,
                std::vector<TemplatePiece> pair = {}, bool types_all_zero = false)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)), pair_(std::move(pair)),
        types_all_zero_(types_all_zero) {}
  // One that encodes single sequences but refuses pairs, saying why (apply_pair throws
  // std::invalid_argument with `why`).
  static PostProcessor without_pairs(std::vector<TokenId> prefix, std::vector<TokenId> suffix,
                                     std::string why);
  // [CLS] A [SEP], and [CLS] A [SEP] B [SEP] with B [SEP] of type 1.
  static PostProcessor bert(TokenId cls, TokenId sep);

  std::vector<TokenId> apply(std::span<const TokenId> ids) const;
  Encoding apply_pair(std::span<const TokenId> a, std::span<const TokenId> b,
                      bool add_special_tokens) const;
  const std::vector<TokenId>& prefix() const { return prefix_; }
  const std::vector<TokenId>& suffix() const { return suffix_; }
  const std::vector<TemplatePiece>& pair() const { return pair_; }
  bool types_all_zero() const { return types_all_zero_; }
  const std::string& pair_error() const { return pair_error_; }

private:
  std::vector<TokenId> prefix_, suffix_;
  std::vector<TemplatePiece> pair_;
  bool types_all_zero_ = false;
  std::string pair_error_; // non-empty: pairs are refused with it
};

class TokenizerJson;
// The post_processor of tokenizer.json (absent or null: adds nothing). Throws TokenizerError
// naming post_processor for a type other than those above.
PostProcessor read_post_processor(const TokenizerJson& doc);

} // namespace mt::tok
