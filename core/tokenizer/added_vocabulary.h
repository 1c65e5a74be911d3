// Added tokens (tokenizer.json's "added_tokens": special tokens such as <|endoftext|> or
// [CLS], and tokens added after training): found in the text before it is pre-tokenized and
// never split, as the tokenizers crate's AddedVocabulary does. Those with normalized=false
// match the raw text; those with normalized=true match the normalized text (their own content
// normalized the same way). Matching is leftmost-longest; single_word, lstrip and rstrip
// behave as in the crate, with \w taken as letters, marks, decimal and letter numbers,
// connector punctuation and ZWNJ/ZWJ, and \s as White_Space.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mt::tok {

using TokenId = uint32_t;

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false; // skipped by decode(skip_special_tokens)
};

// A piece of the input: an added token (id set) or text for the model (id empty).
struct TextPiece {
  std::string text;
  std::optional<TokenId> id;
};

// The ids of pre-tokenized pieces: an added token's own id, `tokenize_word`'s ids for the
// text between them.
std::vector<TokenId>
encode_pieces(const std::vector<TextPiece>& pieces,
              const std::function<std::vector<TokenId>(std::string_view)>& tokenize_word);

class AddedVocabulary {
public:
  using Normalizer = std::function<std::string(std::string_view)>;

  AddedVocabulary() = default;
  // `normalize` is the tokenizer's normalizer (identity when empty): it turns the raw pieces
  // into what the normalized tokens and the model see.
  AddedVocabulary(std::vector<AddedToken> tokens, Normalizer normalize);

  // `text` split at the added tokens, the pieces between them normalized.
  std::vector<TextPiece> split(std::string_view text) const;

  const AddedToken* find(TokenId id) const;
  std::optional<TokenId> token_to_id(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

private:
  struct Pattern {
    std::string text; // the content, normalized for normalized tokens
    size_t token;     // index in tokens_
  };
  void split_with(std::string_view text, const std::vector<Pattern>& patterns,
                  std::vector<TextPiece>& out) const;

  std::vector<AddedToken> tokens_;
  Normalizer normalize_;
  std::vector<Pattern> raw_patterns_, normalized_patterns_;
  std::unordered_map<TokenId, size_t> by_id_;
  std::unordered_map<std::string, TokenId> by_content_;
};

class TokenizerJson;
// tokenizer.json's "added_tokens" (absent or null: none). Throws TokenizerError naming
// added_tokens[i] for an entry without content or id.
std::vector<AddedToken> read_added_tokens(const TokenizerJson& doc);

} // namespace mt::tok
