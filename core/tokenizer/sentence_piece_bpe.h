// BPE over SentencePiece pieces, as Hugging Face's tokenizers runs the tokenizer.json that
// transformers converts from a SentencePiece BPE model (Llama 2, Mistral, TinyLlama, Gemma):
// spaces written as U+2581 "▁" (a normalizer of Prepend and Replace steps, or the Metaspace
// pre-tokenizer; Gemma's a Split on " " after them), no byte-level mapping, characters missing from
// the vocabulary spelled as their UTF-8 bytes' tokens "<0xXX>" (model.byte_fallback) or the unknown
// token, and a decoder chain that turns "▁" back into spaces and byte tokens back into UTF-8
// (Replace, ByteFallback, Fuse, Strip; or Metaspace). Added tokens split off first
// (added_vocabulary.h), as everywhere.
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

class TokenizerJson;

// One step of the normalizer: Prepend (`text` before a non-empty piece) or Replace (every
// `text` by `content`).
struct PieceNormalizerStep {
  enum class Kind { Prepend, Replace } kind = Kind::Replace;
  std::string text, content;
};

// One step of the decoder chain, over the tokens' strings.
struct PieceDecoderStep {
  enum class Kind { Replace, ByteFallback, Fuse, Strip, Metaspace } kind = Kind::Fuse;
  std::string text, content;       // Replace: every `text` by `content`; Metaspace: replacement
  char32_t strip = U' ';           // Strip: the character removed
  size_t start = 0, stop = 0;      // Strip: at most this many from the start and the end
  bool strip_first_prefix = false; // Metaspace: the first token's replacements dropped
};

struct SentencePieceBpeOptions {
  std::vector<PieceNormalizerStep> normalizer;
  // pre_tokenizer Metaspace: spaces to `replacement`, the replacement put before the piece at
  // the start of the text (prepend_scheme "first"), before every piece ("always") or never, and
  // with `split` the piece cut before each replacement.
  bool metaspace = false;
  std::string replacement = "\u2581";
  enum class Prepend { Always, First, Never } prepend = Prepend::First;
  bool split = false;
  // pre_tokenizer Split with a string pattern (Gemma's: " " merged with the previous piece;
  // after its normalizer has made every space a "▁", it finds none): each piece cut at every
  // occurrence of `split_on`, the occurrence kept as `split_behavior` says.
  std::string split_on;
  enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
  SplitBehavior split_behavior = SplitBehavior::MergedWithPrevious;
  bool byte_fallback = false;           // model.byte_fallback
  bool fuse_unk = false;                // model.fuse_unk
  bool ignore_merges = false;           // model.ignore_merges
  std::optional<std::string> unk_token; // model.unk_token
  // The decoder chain; without one decode() joins the tokens with spaces.
  std::vector<PieceDecoderStep> decoder;
  bool has_decoder = false;
};

class SentencePieceBpe {
public:
  // Throws TokenizerError (naming `source` and "model.merges[i]") for a merge whose parts or
  // result are not in the vocabulary, or an unk_token that is not.
  SentencePieceBpe(std::unordered_map<std::string, TokenId> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   SentencePieceBpeOptions options, std::vector<AddedToken> added_tokens,
                   PostProcessor post_processor, std::string source);

  // Whether a tokenizer.json of model.type "BPE" is of this form (SentencePiece's) rather than
  // byte-level: byte_fallback, a Metaspace pre-tokenizer or decoder, a Prepend or Replace
  // normalizer, or a ByteFallback decoder.
  static bool is_its_form(const TokenizerJson& doc);
  // Reads such a tokenizer.json. Throws TokenizerError naming the file and the field for what
  // it does not support: normalizers other than Prepend and Replace of strings, pre-tokenizers
  // other than Metaspace, decoders other than Replace, ByteFallback, Fuse, Strip and Metaspace,
  // BPE dropout, continuing_subword_prefix, end_of_word_suffix.
  static SentencePieceBpe from_tokenizer_json(const TokenizerJson& doc);

  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = false) const;
  const PostProcessor& post_processor() const { return post_processor_; }
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = true) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  size_t vocab_size() const;
  const std::string& source() const { return source_; }

  // What the BPE model is given: the added tokens (id set) and the normalized, "▁"-spelled
  // pieces between them.
  std::vector<TextPiece> pre_tokenize(std::string_view text) const;
  // The BPE of one piece.
  std::vector<TokenId> tokenize_word(std::string_view word) const;

private:
  std::string normalize(std::string_view piece) const;
  void pre_tokenize_piece(std::string piece, bool first, std::vector<TextPiece>& out) const;
  void split_on_string(std::string piece, std::vector<TextPiece>& out) const;

  Vocabulary vocab_;
  BpeMerges merges_;
  SentencePieceBpeOptions options_;
  std::optional<TokenId> unk_id_;
  std::vector<std::optional<TokenId>> byte_ids_; // "<0xXX>" per byte value, when in the vocab
  PostProcessor post_processor_;
  std::string source_;
};

} // namespace mt::tok
