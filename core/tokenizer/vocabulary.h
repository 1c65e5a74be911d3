// A tokenizer's vocabulary: the model's tokens (tokenizer.json's model.vocab, or vocab.txt)
// and the added tokens on top of them (added_vocabulary.h), looked up both ways. The BPE and
// WordPiece models share it, so an id means the same token, and vocab_size counts the same
// way, whichever model holds it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/tokenizer/added_vocabulary.h"

namespace mt::tok {

class Vocabulary {
public:
  Vocabulary() = default;
  Vocabulary(std::unordered_map<std::string, TokenId> model, AddedVocabulary added);

  // A token of the model's own vocabulary (what BPE merges and WordPiece look up).
  std::optional<TokenId> model_id(const std::string& token) const;
  // The added token first, then the model's, as the tokenizers crate looks them up.
  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  // An added token marked special (skipped by decode(skip_special_tokens)).
  bool is_special(std::string_view token) const;
  // Distinct tokens, the model's and the added ones (tokenizers' get_vocab_size(True)).
  size_t size() const;

  const AddedVocabulary& added() const { return added_; }

private:
  std::unordered_map<std::string, TokenId> model_;
  std::unordered_map<TokenId, std::string> model_by_id_;
  AddedVocabulary added_;
};

} // namespace mt::tok
