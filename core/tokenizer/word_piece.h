// BERT WordPiece, as Hugging Face's tokenizers runs BertWordPieceTokenizer(vocab.txt) or a
// tokenizer.json with model.type "WordPiece": added (special) tokens split off first, then
// each piece normalized (bert_normalizer.h) and cut into words (bert_pre_tokenizer.h), each
// word split greedily into the longest vocabulary entries from the left, pieces after the first
// carrying the "##" prefix. A word longer than max_input_chars_per_word characters, or one
// with a part that no entry covers, becomes the unknown token as a whole.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/added_vocabulary.h"
#include "core/tokenizer/bert_normalizer.h"
#include "core/tokenizer/post_processor.h"
#include "core/tokenizer/vocabulary.h"

namespace mt::tok {

struct WordPieceOptions {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
  // normalizer BertNormalizer; unset: none (a tokenizer.json with normalizer null).
  std::optional<BertNormalizerOptions> normalizer = BertNormalizerOptions{};
  // decoder WordPiece: tokens joined by spaces, the prefix dropped from continuations, then
  // with `cleanup` the spaces before . ? ! , and in English contractions removed.
  std::string decoder_prefix = "##";
  bool decoder_cleanup = true;
};

class WordPiece {
public:
  // Throws TokenizerError naming `source` when unk_token is not in `vocab`.
  WordPiece(std::unordered_map<std::string, TokenId> vocab, WordPieceOptions options,
            std::vector<AddedToken> added_tokens, PostProcessor post_processor, std::string source);

  // A BERT vocab.txt (one token a line, the line number its id) set up as
  // BertWordPieceTokenizer does: [UNK], [SEP], [CLS], [PAD] and [MASK], where present, are
  // special added tokens (found in the raw text, never split, skipped by decode), and
  // add_special_tokens puts [CLS] before and [SEP] after (BERT's template; both must be in the
  // vocabulary for it to add anything). Throws TokenizerError naming the file.
  static WordPiece from_vocab_txt(const std::string& path, WordPieceOptions options = {});
  // A tokenizer.json of model.type "WordPiece" with normalizer BertNormalizer (or none),
  // pre_tokenizer BertPreTokenizer and decoder WordPiece (or none); anything else is refused
  // with a TokenizerError naming the file and the field.
  static WordPiece from_tokenizer_json(const TokenizerJson& doc);

  // add_special_tokens: the post-processor's tokens around the ids ([CLS] ... [SEP]).
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = false) const;
  // What add_special_tokens adds (encode_pair uses it on two sequences).
  const PostProcessor& post_processor() const { return post_processor_; }
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = true) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  size_t vocab_size() const;
  const std::string& source() const { return source_; }

  // What the WordPiece model is given: the added tokens (id set) and the words of the
  // normalized text between them.
  std::vector<TextPiece> pre_tokenize(std::string_view text) const;
  // The WordPiece split of one pre-tokenized word.
  std::vector<TokenId> tokenize_word(std::string_view word) const;

private:
  Vocabulary vocab_;
  WordPieceOptions options_;
  TokenId unk_id_ = 0;
  PostProcessor post_processor_;
  std::string source_;
};

} // namespace mt::tok
