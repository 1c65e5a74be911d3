// Byte-level BPE, as Hugging Face's tokenizers runs a tokenizer.json with model.type "BPE",
// pre_tokenizer ByteLevel and decoder ByteLevel (GPT-2), or -- Llama 3, Qwen2 -- pre_tokenizer
// Sequence [Split by their pattern, ByteLevel without its own split] and optionally the NFC
// normalizer: added tokens split off first (added_vocabulary.h), the rest normalized, then each
// piece -- with a space in front when add_prefix_space and it does not start with one -- cut
// by the GPT-2 pattern (gpt2_split.h, when use_regex) or Llama 3's (cl100k_split.h), its UTF-8
// bytes written as GPT-2's byte characters (byte_unicode_map.h) and merged by the BPE ranks
// (bpe_merges.h). Decoding maps the characters back to bytes, as UTF-8 with U+FFFD for
// ill-formed sequences.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizer/added_vocabulary.h"
#include "core/tokenizer/bpe_merges.h"
#include "core/tokenizer/post_processor.h"
#include "core/tokenizer/vocabulary.h"

namespace mt::tok {

// How a piece between added tokens is cut before its bytes are merged.
enum class BpeSplit {
  None,       // ByteLevel with use_regex false alone: the whole piece
  Gpt2,       // ByteLevel with use_regex: gpt2_split.h
  Cl100k,     // Sequence [Split (Llama 3's or Qwen2's pattern), ByteLevel]: cl100k_split.h
  DigitsGpt2, // Sequence [Digits, ByteLevel with use_regex]: numbers apart, then GPT-2's split
};

struct ByteLevelBpeOptions {
  bool nfc = false;              // normalizer NFC (Qwen2)
  bool add_prefix_space = false; // pre_tokenizer.add_prefix_space
  BpeSplit split = BpeSplit::Gpt2;
  size_t max_digits = 3;         // BpeSplit::Cl100k: the longest run of numbers in a piece
  bool individual_digits = false; // BpeSplit::DigitsGpt2: each number a piece, not each run
  bool ignore_merges = false;    // model.ignore_merges: a word in the vocabulary is one token
  std::optional<std::string> unk_token; // model.unk_token (none: unknown characters dropped)
  bool fuse_unk = false;                // model.fuse_unk: consecutive unknowns as one
  // decoder ByteLevel; without one (decoder null) decode() joins the tokens with spaces, as
  // the tokenizers crate does.
  bool byte_level_decoder = true;
};

class ByteLevelBpe {
public:
  // `merges` are pairs of vocabulary tokens in rank order. Throws TokenizerError (naming
  // `source` and "model.merges[i]") for a merge whose parts or result are not in the vocabulary.
  ByteLevelBpe(std::unordered_map<std::string, TokenId> vocab,
               const std::vector<std::pair<std::string, std::string>>& merges,
               ByteLevelBpeOptions options, std::vector<AddedToken> added_tokens,
               PostProcessor post_processor, std::string source);

  // Reads a tokenizer.json of model.type "BPE". Throws TokenizerError naming the file and the
  // field for what it does not support: a normalizer other than NFC, a pre_tokenizer other
  // than ByteLevel or Sequence [Split (Llama 3's or Qwen2's pattern, Isolated), ByteLevel
  // (use_regex false)], a decoder other than ByteLevel, BPE dropout, continuing_subword_prefix,
  // end_of_word_suffix or byte_fallback.
  static ByteLevelBpe from_tokenizer_json(const TokenizerJson& doc);

  // add_special_tokens: the post-processor's tokens around the ids (post_processor.h).
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = false) const;
  // What add_special_tokens adds (encode_pair uses it on two sequences).
  const PostProcessor& post_processor() const { return post_processor_; }
  // skip_special_tokens: leave out the added tokens marked special. Ids with no token are
  // skipped.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = true) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  // Distinct tokens, the model's and the added ones (tokenizers' get_vocab_size(True)).
  size_t vocab_size() const;
  const std::string& source() const { return source_; }

  // What the BPE model is given: the added tokens (id set) and the pieces between them
  // in byte characters (as the Python package's pre_tokenizer.pre_tokenize_str shows them).
  std::vector<TextPiece> pre_tokenize(std::string_view text) const;
  // The BPE of one pre-tokenized piece, already in byte characters.
  std::vector<TokenId> tokenize_word(std::string_view byte_chars) const;

private:
  void pre_tokenize_piece(std::string_view text, std::vector<TextPiece>& out) const;

  Vocabulary vocab_;
  BpeMerges merges_;
  ByteLevelBpeOptions options_;
  std::optional<TokenId> unk_id_;
  PostProcessor post_processor_;
  std::string source_;
};

} // namespace mt::tok
