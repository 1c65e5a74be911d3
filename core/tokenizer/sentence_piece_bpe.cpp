#include "core/tokenizer/sentence_piece_bpe.h"

#include <algorithm>
#include <stdexcept>

#include "core/tokenizer/bpe_model_json.h"
#include "core/tokenizer/tokenizer_error.h"
#include "core/tokenizer/tokenizer_json.h"
#include "core/tokenizer/utf8_codec.h"

namespace mt::tok {

namespace {

using Prepend = SentencePieceBpeOptions::Prepend;

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  if (from.empty()) return s;
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size())
    out.append(s, at, hit - at).append(to);
  return out.append(s, at, std::string::npos);
}

std::string normalize_with(const std::vector<PieceNormalizerStep>& steps, std::string_view piece) {
  std::string s(piece);
  for (const PieceNormalizerStep& step : steps) {
    if (step.kind == PieceNormalizerStep::Kind::Prepend) {
      if (!s.empty()) s = step.text + s;
    } else {
      s = replace_all(std::move(s), step.text, step.content);
    }
  }
  return s;
}

size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

bool well_formed(std::string_view bytes) {
  try {
    decode_utf8(bytes);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The byte of a byte-fallback token "<0xXX>" (as the crate reads it: six bytes, "<0x", two
// characters that Rust's from_str_radix(16) accepts -- a '+' then one digit too -- and ">").
std::optional<uint8_t> fallback_byte(std::string_view t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t.back() != '>') return std::nullopt;
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = digit(t[3]), lo = digit(t[4]);
  if (t[3] == '+' && lo >= 0) return static_cast<uint8_t>(lo);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

// The decoder chain's steps, each over the whole list of token strings as the crate's
// decode_chain does.
std::vector<std::string> byte_fallback(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string bytes;
  const auto flush = [&] {
    if (bytes.empty()) return;
    if (well_formed(bytes))
      out.push_back(bytes);
    else
      out.insert(out.end(), bytes.size(), "\xEF\xBF\xBD"); // one U+FFFD per byte token
    bytes.clear();
  };
  for (const std::string& t : tokens) {
    if (std::optional<uint8_t> b = fallback_byte(t)) {
      bytes.push_back(static_cast<char>(*b));
      continue;
    }
    flush();
    out.push_back(t);
  }
  flush();
  return out;
}

// Strip: up to `start` leading and `stop` trailing `c`; the crate keeps (byte length - cuts)
// characters after the leading cut, which is what is mirrored here.
std::string strip(const std::string& token, char32_t c, size_t start, size_t stop) {
  const std::u32string chars = decode_utf8(token);
  size_t start_cut = 0, stop_cut = 0;
  for (size_t i = 0; i < std::min(start, chars.size()) && chars[i] == c; ++i)
    start_cut = i + 1;
  for (size_t i = 0; i < std::min(stop, chars.size()) && chars[chars.size() - 1 - i] == c; ++i)
    stop_cut = i + 1;
  const size_t keep = start_cut + stop_cut > token.size() ? std::u32string::npos
                                                          : token.size() - start_cut - stop_cut;
  return encode_utf8(std::u32string_view(chars).substr(start_cut, keep));
}

std::vector<std::string> apply(const PieceDecoderStep& step, std::vector<std::string> tokens) {
  using Kind = PieceDecoderStep::Kind;
  switch (step.kind) {
  case Kind::Replace:
    for (std::string& t : tokens)
      t = replace_all(std::move(t), step.text, step.content);
    return tokens;
  case Kind::ByteFallback:
    return byte_fallback(tokens);
  case Kind::Fuse: {
    std::string all;
    for (const std::string& t : tokens)
      all += t;
    return {all};
  }
  case Kind::Strip:
    for (std::string& t : tokens)
      t = strip(t, step.strip, step.start, step.stop);
    return tokens;
  case Kind::Metaspace:
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(std::move(tokens[i]), step.text,
                              i == 0 && step.strip_first_prefix ? "" : " ");
    return tokens;
  }
  return tokens;
}

// --- tokenizer.json ---

std::string type_of(const Json& component) {
  return component.is_object() && component.contains("type") && component["type"].is_string()
             ? component["type"].get<std::string>()
             : std::string();
}

// A {"String": s} pattern (Replace's); a Regex one is refused.
std::string string_pattern(const TokenizerJson& doc, const Json& step, const std::string& field) {
  const Json& pattern = doc.required(step, field, "pattern");
  if (!pattern.is_object() || !pattern.contains("String") || !pattern["String"].is_string())
    doc.fail(field + ".pattern", pattern.dump().substr(0, 200) + " is not supported (a String)");
  return pattern["String"].get<std::string>();
}

PieceNormalizerStep normalizer_step(const TokenizerJson& doc, const Json& n,
                                    const std::string& field) {
  const std::string type = type_of(n);
  PieceNormalizerStep step;
  if (type == "Prepend") {
    step.kind = PieceNormalizerStep::Kind::Prepend;
    step.text = doc.string_member(n, field, "prepend");
  } else if (type == "Replace") {
    step.text = string_pattern(doc, n, field);
    step.content = doc.string_member(n, field, "content");
  } else {
    doc.fail(field, "'" + type +
                        "' is not supported with a SentencePiece BPE (supported: Prepend, Replace, "
                        "a Sequence of them)");
  }
  return step;
}

std::vector<PieceNormalizerStep> read_normalizer(const TokenizerJson& doc) {
  const Json* n = doc.member(doc.root(), "", "normalizer");
  if (!n) return {};
  if (type_of(*n) != "Sequence") return {normalizer_step(doc, *n, "normalizer")};
  const Json& list = doc.required(*n, "normalizer", "normalizers");
  if (!list.is_array()) doc.fail("normalizer.normalizers", "is not an array");
  std::vector<PieceNormalizerStep> steps;
  for (size_t i = 0; i < list.size(); ++i)
    steps.push_back(
        normalizer_step(doc, list[i], "normalizer.normalizers[" + std::to_string(i) + "]"));
  return steps;
}

// A Split pre-tokenizer on a string pattern (Gemma's), its behavior, not inverted.
void read_string_split(const TokenizerJson& doc, const Json& split, SentencePieceBpeOptions& o) {
  using B = SentencePieceBpeOptions::SplitBehavior;
  const Json& pattern = doc.required(split, "pre_tokenizer", "pattern");
  const Json* text = doc.member(pattern, "pre_tokenizer.pattern", "String");
  if (!text || !text->is_string() || text->get<std::string>().empty())
    doc.fail("pre_tokenizer.pattern",
             "a Split before a SentencePiece BPE must split on a non-empty String (a Regex is not "
             "supported here)");
  o.split_on = text->get<std::string>();
  if (doc.bool_member(split, "pre_tokenizer", "invert", false))
    doc.fail("pre_tokenizer.invert", "true is not supported");
  const std::string behavior = doc.string_member(split, "pre_tokenizer", "behavior");
  if (behavior == "Removed")
    o.split_behavior = B::Removed;
  else if (behavior == "Isolated")
    o.split_behavior = B::Isolated;
  else if (behavior == "MergedWithPrevious")
    o.split_behavior = B::MergedWithPrevious;
  else if (behavior == "MergedWithNext")
    o.split_behavior = B::MergedWithNext;
  else if (behavior == "Contiguous")
    o.split_behavior = B::Contiguous;
  else
    doc.fail("pre_tokenizer.behavior", "'" + behavior +
                                           "' (Removed, Isolated, MergedWithPrevious, "
                                           "MergedWithNext, Contiguous)");
}

// Metaspace's fields (pre-tokenizer and decoder alike): replacement, prepend_scheme (or the
// older add_prefix_space), split. Defaults as the crate's.
void read_metaspace(const TokenizerJson& doc, const Json& m, const std::string& field,
                    std::string& replacement, Prepend& prepend, bool& split) {
  replacement = doc.optional_string(m, field, "replacement").value_or("\u2581");
  if (decode_utf8(replacement).size() != 1)
    doc.fail(field + ".replacement", "'" + replacement + "' is not one character");
  prepend = Prepend::Always;
  if (const std::optional<std::string> scheme = doc.optional_string(m, field, "prepend_scheme")) {
    if (*scheme == "always")
      prepend = Prepend::Always;
    else if (*scheme == "first")
      prepend = Prepend::First;
    else if (*scheme == "never")
      prepend = Prepend::Never;
    else
      doc.fail(field + ".prepend_scheme", "'" + *scheme + "' (always, first, never)");
  } else if (!doc.bool_member(m, field, "add_prefix_space", true)) {
    prepend = Prepend::Never;
  }
  split = doc.bool_member(m, field, "split", true);
}

PieceDecoderStep decoder_step(const TokenizerJson& doc, const Json& d, const std::string& field) {
  using Kind = PieceDecoderStep::Kind;
  const std::string type = type_of(d);
  PieceDecoderStep step;
  if (type == "Replace") {
    step.kind = Kind::Replace;
    step.text = string_pattern(doc, d, field);
    step.content = doc.string_member(d, field, "content");
  } else if (type == "ByteFallback") {
    step.kind = Kind::ByteFallback;
  } else if (type == "Fuse") {
    step.kind = Kind::Fuse;
  } else if (type == "Strip") {
    step.kind = Kind::Strip;
    const std::u32string c = decode_utf8(doc.string_member(d, field, "content"));
    if (c.size() != 1) doc.fail(field + ".content", "is not one character");
    step.strip = c[0];
    step.start = doc.optional_unsigned(d, field, "start").value_or(0);
    step.stop = doc.optional_unsigned(d, field, "stop").value_or(0);
  } else if (type == "Metaspace") {
    step.kind = Kind::Metaspace;
    Prepend prepend = Prepend::Always;
    bool split = true;
    read_metaspace(doc, d, field, step.text, prepend, split);
    step.strip_first_prefix = prepend != Prepend::Never;
  } else {
    doc.fail(field, "'" + type +
                        "' is not supported with a SentencePiece BPE (supported: Replace, "
                        "ByteFallback, Fuse, Strip, Metaspace, a Sequence of them)");
  }
  return step;
}

void read_decoder(const TokenizerJson& doc, SentencePieceBpeOptions& o) {
  const Json* d = doc.member(doc.root(), "", "decoder");
  o.has_decoder = d != nullptr;
  if (!d) return;
  if (type_of(*d) != "Sequence") {
    o.decoder.push_back(decoder_step(doc, *d, "decoder"));
    return;
  }
  const Json& list = doc.required(*d, "decoder", "decoders");
  if (!list.is_array()) doc.fail("decoder.decoders", "is not an array");
  for (size_t i = 0; i < list.size(); ++i)
    o.decoder.push_back(decoder_step(doc, list[i], "decoder.decoders[" + std::to_string(i) + "]"));
}

bool contains_type(const Json& component, const char* list,
                   std::initializer_list<const char*> types) {
  const auto is = [&](const Json& c) {
    const std::string t = type_of(c);
    return std::any_of(types.begin(), types.end(), [&](const char* x) { return t == x; });
  };
  if (is(component)) return true;
  if (type_of(component) != "Sequence" || !component.contains(list) || !component[list].is_array())
    return false;
  return std::any_of(component[list].begin(), component[list].end(), is);
}

} // namespace

bool SentencePieceBpe::is_its_form(const TokenizerJson& doc) {
  const Json& root = doc.root();
  const Json null;
  const auto get = [&](const char* key) -> const Json& {
    return root.contains(key) ? root[key] : null;
  };
  const Json& model = get("model");
  if (model.is_object() && model.contains("byte_fallback") && model["byte_fallback"].is_boolean() &&
      model["byte_fallback"].get<bool>())
    return true;
  return type_of(get("pre_tokenizer")) == "Metaspace" ||
         contains_type(get("normalizer"), "normalizers", {"Prepend", "Replace"}) ||
         contains_type(get("decoder"), "decoders", {"ByteFallback", "Metaspace"});
}

SentencePieceBpe::SentencePieceBpe(std::unordered_map<std::string, TokenId> vocab,
                                   const std::vector<std::pair<std::string, std::string>>& merges,
                                   SentencePieceBpeOptions options,
                                   std::vector<AddedToken> added_tokens,
                                   PostProcessor post_processor, std::string source)
    : vocab_(std::move(vocab),
             AddedVocabulary(
                 std::move(added_tokens),
                 options.normalizer.empty()
                     ? AddedVocabulary::Normalizer()
                     : [steps = options.normalizer](
                           std::string_view s) { return normalize_with(steps, s); })),
      options_(std::move(options)), post_processor_(std::move(post_processor)),
      source_(std::move(source)) {
  merges_ = bpe_merges_of(vocab_, merges, source_);
  unk_id_ = bpe_unk_id(vocab_, options_.unk_token, source_);
  static const char* const kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b)
    byte_ids_.push_back(vocab_.model_id(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">"));
}

SentencePieceBpe SentencePieceBpe::from_tokenizer_json(const TokenizerJson& doc) {
  const Json& root = doc.root();
  const Json& model = doc.required(root, "", "model");
  if (const std::string type = doc.string_member(model, "model", "type"); type != "BPE")
    doc.fail("model.type", "'" + type + "' is not BPE");
  SentencePieceBpeOptions options;
  options.normalizer = read_normalizer(doc);
  if (const Json* pre = doc.member(root, "", "pre_tokenizer")) {
    if (type_of(*pre) == "Split") {
      read_string_split(doc, *pre, options);
    } else if (type_of(*pre) == "Metaspace") {
      options.metaspace = true;
      read_metaspace(doc, *pre, "pre_tokenizer", options.replacement, options.prepend,
                     options.split);
    } else {
      doc.fail("pre_tokenizer", "'" + type_of(*pre) +
                                    "' is not supported with a SentencePiece BPE (supported: none, "
                                    "Metaspace, Split on a string)");
    }
  }
  read_decoder(doc, options);
  options.byte_fallback = doc.bool_member(model, "model", "byte_fallback", false);
  options.fuse_unk = doc.bool_member(model, "model", "fuse_unk", false);
  options.ignore_merges = doc.bool_member(model, "model", "ignore_merges", false);
  options.unk_token = doc.optional_string(model, "model", "unk_token");
  refuse_bpe_field(doc, model, "dropout", "BPE dropout is random, not supported");
  refuse_bpe_field(doc, model, "continuing_subword_prefix", "not supported");
  refuse_bpe_field(doc, model, "end_of_word_suffix", "not supported");
  return SentencePieceBpe(read_bpe_vocab(doc, model), read_bpe_merges(doc, model),
                          std::move(options), read_added_tokens(doc), read_post_processor(doc),
                          doc.path());
}

std::vector<TokenId> SentencePieceBpe::tokenize_word(std::string_view word) const {
  if (options_.ignore_merges)
    if (auto id = vocab_.model_id(std::string(word))) return {*id};
  std::vector<TokenId> symbols;
  // As the crate's merge_word: an unknown character's unk waits until the next known one (or
  // the end), so that fuse_unk joins a run; byte-fallback tokens do not end the run.
  bool unk_pending = false;
  for (size_t i = 0; i < word.size();) {
    const size_t n = utf8_length(static_cast<unsigned char>(word[i]));
    const std::string_view c = word.substr(i, n);
    i += n;
    if (const std::optional<TokenId> id = vocab_.model_id(std::string(c))) {
      if (unk_pending) symbols.push_back(*unk_id_);
      unk_pending = false;
      symbols.push_back(*id);
      continue;
    }
    if (options_.byte_fallback && std::all_of(c.begin(), c.end(), [&](char b) {
          return byte_ids_[static_cast<uint8_t>(b)].has_value();
        })) {
      for (char b : c)
        symbols.push_back(*byte_ids_[static_cast<uint8_t>(b)]);
      continue;
    }
    if (!unk_id_) continue;
    if (unk_pending && !options_.fuse_unk) symbols.push_back(*unk_id_);
    unk_pending = true;
  }
  if (unk_pending) symbols.push_back(*unk_id_);
  return merges_.merge(std::move(symbols));
}

void SentencePieceBpe::pre_tokenize_piece(std::string piece, bool first,
                                          std::vector<TextPiece>& out) const {
  if (options_.metaspace) {
    const std::string& r = options_.replacement;
    piece = replace_all(std::move(piece), " ", r);
    const bool prepend =
        options_.prepend == Prepend::Always || (options_.prepend == Prepend::First && first);
    if (prepend && !piece.starts_with(r)) piece = r + piece;
    if (options_.split) {
      // Cut before each replacement (the crate's MergedWithNext).
      size_t begin = 0;
      for (size_t at = piece.find(r, 1); at != std::string::npos; at = piece.find(r, at + 1)) {
        if (at > begin) out.push_back({piece.substr(begin, at - begin), std::nullopt});
        begin = at;
      }
      if (begin < piece.size()) out.push_back({piece.substr(begin), std::nullopt});
      return;
    }
  }
  if (!options_.split_on.empty()) return split_on_string(std::move(piece), out);
  if (!piece.empty()) out.push_back({std::move(piece), std::nullopt});
}

// The crate's Split on a string: the text between occurrences, each occurrence dropped, alone,
// or joined to the piece before or after it (Contiguous: a run of them alone, as one).
void SentencePieceBpe::split_on_string(std::string piece, std::vector<TextPiece>& out) const {
  using B = SentencePieceBpeOptions::SplitBehavior;
  const std::string& d = options_.split_on;
  const B how = options_.split_behavior;
  auto emit = [&](std::string s) {
    if (!s.empty()) out.push_back({std::move(s), std::nullopt});
  };
  std::string pending; // MergedWithNext: the delimiter waiting for the text after it
  size_t begin = 0;
  for (size_t at = piece.find(d); at != std::string::npos; at = piece.find(d, begin)) {
    std::string before = piece.substr(begin, at - begin);
    size_t end = at + d.size();
    if (how == B::Contiguous)
      while (piece.compare(end, d.size(), d) == 0)
        end += d.size();
    const std::string delim = piece.substr(at, end - at);
    switch (how) {
    case B::Removed:
      emit(pending + before);
      pending.clear();
      break;
    case B::Isolated:
    case B::Contiguous:
      emit(before);
      emit(delim);
      break;
    case B::MergedWithPrevious:
      emit(before + delim);
      break;
    case B::MergedWithNext:
      emit(pending + before);
      pending = delim;
      break;
    }
    begin = end;
  }
  emit(pending + piece.substr(begin));
}

std::vector<TextPiece> SentencePieceBpe::pre_tokenize(std::string_view text) const {
  decode_utf8(text); // ill-formed input is refused with its byte offset before anything else
  std::vector<TextPiece> words;
  std::vector<TextPiece> pieces = vocab_.added().split(text);
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].id)
      words.push_back(std::move(pieces[i]));
    else
      // "first" (Metaspace's prepend_scheme): the piece the text begins with.
      pre_tokenize_piece(std::move(pieces[i].text), i == 0, words);
  }
  return words;
}

std::vector<TokenId> SentencePieceBpe::encode(std::string_view text,
                                              bool add_special_tokens) const {
  std::vector<TokenId> ids =
      encode_pieces(pre_tokenize(text), [this](std::string_view w) { return tokenize_word(w); });
  return add_special_tokens ? post_processor_.apply(ids) : ids;
}

std::string SentencePieceBpe::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  for (TokenId id : ids) {
    std::optional<std::string> token = id_to_token(id);
    if (!token || (skip_special_tokens && vocab_.is_special(*token))) continue;
    tokens.push_back(std::move(*token));
  }
  if (!options_.has_decoder) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i)
      joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  for (const PieceDecoderStep& step : options_.decoder)
    tokens = apply(step, std::move(tokens));
  std::string text;
  for (const std::string& t : tokens)
    text += t;
  return text;
}

std::optional<TokenId> SentencePieceBpe::token_to_id(std::string_view token) const {
  return vocab_.token_to_id(token);
}

std::optional<std::string> SentencePieceBpe::id_to_token(TokenId id) const {
  return vocab_.id_to_token(id);
}

size_t SentencePieceBpe::vocab_size() const {
  return vocab_.size();
}

} // namespace mt::tok
