// The tokenizer of a checkpoint folder: Tokenizer::load(dir) picks tokenizer.json (a
// byte-level BPE such as GPT-2's, Llama 3's or Qwen2's, a BPE over SentencePiece pieces such as
// Llama 2's or Mistral's, or a BERT WordPiece) or else vocab.txt (BERT WordPiece set
// up as BertWordPieceTokenizer does), and gives the same ids as Hugging Face's tokenizers for
// what it supports (docs/tokenizers.md); everything else is refused by name.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/tokenizer/byte_level_bpe.h"
#include "core/tokenizer/sentence_piece_bpe.h"
#include "core/tokenizer/word_piece.h"

namespace mt::tok {

class Tokenizer {
public:
  explicit Tokenizer(ByteLevelBpe bpe) : impl_(std::move(bpe)) {}
  explicit Tokenizer(SentencePieceBpe bpe) : impl_(std::move(bpe)) {}
  explicit Tokenizer(WordPiece word_piece) : impl_(std::move(word_piece)) {}

  // From a folder: DIR/tokenizer.json if present, else DIR/vocab.txt; a path to either file
  // works too. Throws TokenizerError naming the file (or the folder, when it has neither).
  static Tokenizer load(const std::string& path);
  // A tokenizer.json of model.type "BPE" (byte-level, or over SentencePiece pieces: see
  // SentencePieceBpe::is_its_form) or "WordPiece".
  static Tokenizer from_tokenizer_json(const std::string& path);

  // The ids of `text` (UTF-8; ill-formed text throws std::invalid_argument). With
  // add_special_tokens, the post-processor's tokens go around them: [CLS] ... [SEP] for BERT,
  // whatever tokenizer.json's post_processor says otherwise (nothing for GPT-2). Off by
  // default, unlike the Python package's encode().
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = false) const;
  // A pair of sequences (a question and a passage, two sentences) as one: each encoded as
  // encode() does, then joined by the post-processor's pair template ([CLS] A [SEP] B [SEP] for
  // BERT), with each id's type id (0 for A's part, 1 for B's in BERT; post_processor.h).
  // Throws TokenizerError naming the file where its post-processor has no pair form.
  Encoding encode_pair(std::string_view a, std::string_view b,
                       bool add_special_tokens = false) const;
  // The text of `ids`; with skip_special_tokens (the default, as in the Python package) the
  // special added tokens are left out.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = true) const;

  // The words the model is given (added tokens with their id; byte characters for a
  // byte-level BPE, normalized words for WordPiece): what the text was cut into.
  std::vector<TextPiece> pre_tokenize(std::string_view text) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  // Distinct tokens, the model's and the added ones.
  size_t vocab_size() const;
  // "byte-level BPE", "SentencePiece BPE" or "WordPiece".
  const char* kind() const;
  // The file it was read from.
  const std::string& source() const;

  const ByteLevelBpe* byte_level_bpe() const { return std::get_if<ByteLevelBpe>(&impl_); }
  const SentencePieceBpe* sentence_piece_bpe() const {
    return std::get_if<SentencePieceBpe>(&impl_);
  }
  const WordPiece* word_piece() const { return std::get_if<WordPiece>(&impl_); }

private:
  std::variant<ByteLevelBpe, SentencePieceBpe, WordPiece> impl_;
};

} // namespace mt::tok
