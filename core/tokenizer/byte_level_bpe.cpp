#include "core/tokenizer/byte_level_bpe.h"

#include "core/tokenizer/bpe_model_json.h"
#include "core/tokenizer/byte_unicode_map.h"
#include "core/tokenizer/cl100k_split.h"
#include "core/tokenizer/gpt2_split.h"
#include "core/tokenizer/tokenizer_error.h"
#include "core/tokenizer/tokenizer_json.h"
#include "core/tokenizer/unicode_normalize.h"
#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"

namespace mt::tok {

namespace {

// The byte length of the UTF-8 sequence starting with `lead` (well-formed text).
size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// pre_tokenizer: ByteLevel; Sequence [Split (a pattern cl100k_split.h knows, Isolated, not
// inverted), ByteLevel (use_regex false)] -- Llama 3's and Qwen2's; or Sequence [Digits,
// ByteLevel (use_regex true)] -- SmolLM's and StarCoder's.
void read_pre_tokenizer(const TokenizerJson& doc, ByteLevelBpeOptions& options) {
  const Json& root = doc.root();
  const std::string pre = doc.component_type("pre_tokenizer");
  const auto byte_level = [&](const Json& p, const std::string& field) {
    // The tokenizers crate's defaults where a field is missing.
    options.add_prefix_space = doc.bool_member(p, field, "add_prefix_space", true);
    options.split = doc.bool_member(p, field, "use_regex", true) ? BpeSplit::Gpt2 : BpeSplit::None;
  };
  if (pre == "ByteLevel") {
    byte_level(root["pre_tokenizer"], "pre_tokenizer");
    return;
  }
  const std::string supported = " (supported: ByteLevel, or Sequence [Split, ByteLevel] as Llama 3 "
                                "and Qwen2 write it, or Sequence [Digits, ByteLevel] as SmolLM "
                                "and StarCoder do)";
  if (pre != "Sequence")
    doc.fail("pre_tokenizer", (pre.empty() ? std::string("(none)") : "'" + pre + "'") +
                                  " is not supported" + supported);
  const Json& steps = doc.required(root["pre_tokenizer"], "pre_tokenizer", "pretokenizers");
  const auto type_of = [&](size_t i) {
    const Json& step = steps[i];
    return step.is_object() && step.contains("type") && step["type"].is_string()
               ? step["type"].get<std::string>()
               : std::string();
  };
  if (!steps.is_array() || steps.size() != 2 || (type_of(0) != "Split" && type_of(0) != "Digits") ||
      type_of(1) != "ByteLevel")
    doc.fail("pre_tokenizer.pretokenizers",
             steps.dump().substr(0, 200) + " is not supported" + supported);
  const std::string field = "pre_tokenizer.pretokenizers[0]";
  const std::string second = "pre_tokenizer.pretokenizers[1]";
  byte_level(steps[1], second);
  if (options.add_prefix_space)
    doc.fail(second + ".add_prefix_space",
             "true after a " + type_of(0) + " is not supported (the checkpoints set it false)");
  if (type_of(0) == "Digits") {
    if (options.split != BpeSplit::Gpt2)
      doc.fail(second + ".use_regex", "false after Digits is not supported (SmolLM and "
                                      "StarCoder set it true)");
    options.split = BpeSplit::DigitsGpt2;
    options.individual_digits = doc.bool_member(steps[0], field, "individual_digits", false);
    return;
  }
  const Json& split = steps[0];
  const Json& pattern = doc.required(split, field, "pattern");
  if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
    doc.fail(field + ".pattern", pattern.dump().substr(0, 200) + " is not supported (a Regex)");
  const std::optional<size_t> digits = cl100k_digits(pattern["Regex"].get<std::string>());
  if (!digits)
    doc.fail(field + ".pattern.Regex", "\"" + pattern["Regex"].get<std::string>().substr(0, 200) +
                                           "\" is not supported (Llama 3's and Qwen2's patterns)");
  if (const std::string b = doc.string_member(split, field, "behavior"); b != "Isolated")
    doc.fail(field + ".behavior", "'" + b + "' is not supported (Isolated)");
  if (doc.bool_member(split, field, "invert", false))
    doc.fail(field + ".invert", "true is not supported");
  if (options.split != BpeSplit::None)
    doc.fail(second + ".use_regex",
             "true after a Split is not supported (Llama 3 and Qwen2 set it false)");
  options.split = BpeSplit::Cl100k;
  options.max_digits = *digits;
}

// The Digits pre-tokenizer (numbers cut out: each alone, or each run) and then the GPT-2 split
// of every stretch between them, as ByteLevel with use_regex runs on each piece it is given.
std::vector<std::pair<size_t, size_t>> digits_then_gpt2_split(std::u32string_view text,
                                                              bool individual) {
  std::vector<std::pair<size_t, size_t>> pieces;
  for (size_t i = 0; i < text.size();) {
    size_t end = i;
    const bool number = is_number(general_category(text[i]));
    while (end < text.size() && is_number(general_category(text[end])) == number &&
           !(number && individual && end > i))
      ++end;
    if (number) {
      pieces.emplace_back(i, end);
    } else {
      for (const auto& [b, e] : gpt2_split(text.substr(i, end - i)))
        pieces.emplace_back(i + b, i + e);
    }
    i = end;
  }
  return pieces;
}

} // namespace

ByteLevelBpe::ByteLevelBpe(std::unordered_map<std::string, TokenId> vocab,
                           const std::vector<std::pair<std::string, std::string>>& merges,
                           ByteLevelBpeOptions options, std::vector<AddedToken> added_tokens,
                           PostProcessor post_processor, std::string source)
    : vocab_(std::move(vocab),
             AddedVocabulary(std::move(added_tokens),
                             options.nfc ? AddedVocabulary::Normalizer([](std::string_view s) {
                               return encode_utf8(nfc(decode_utf8(s)));
                             })
                                         : AddedVocabulary::Normalizer())),
      options_(std::move(options)), post_processor_(std::move(post_processor)),
      source_(std::move(source)) {
  merges_ = bpe_merges_of(vocab_, merges, source_);
  unk_id_ = bpe_unk_id(vocab_, options_.unk_token, source_);
}

ByteLevelBpe ByteLevelBpe::from_tokenizer_json(const TokenizerJson& doc) {
  const Json& root = doc.root();
  const Json& model = doc.required(root, "", "model");
  if (const std::string type = doc.string_member(model, "model", "type"); type != "BPE")
    doc.fail("model.type", "'" + type + "' is not BPE");
  ByteLevelBpeOptions options;
  if (const std::string n = doc.component_type("normalizer"); n == "NFC")
    options.nfc = true;
  else if (!n.empty())
    doc.fail("normalizer",
             "'" + n + "' is not supported with a byte-level BPE (supported: none, NFC)");
  read_pre_tokenizer(doc, options);
  if (const std::string d = doc.component_type("decoder"); !d.empty() && d != "ByteLevel")
    doc.fail("decoder", "'" + d + "' is not supported (supported: ByteLevel)");
  options.ignore_merges = doc.bool_member(model, "model", "ignore_merges", false);
  options.fuse_unk = doc.bool_member(model, "model", "fuse_unk", false);
  options.unk_token = doc.optional_string(model, "model", "unk_token");
  options.byte_level_decoder = !doc.component_type("decoder").empty();
  refuse_bpe_field(doc, model, "dropout", "BPE dropout is random, not supported");
  refuse_bpe_field(doc, model, "continuing_subword_prefix", "not supported with a byte-level BPE");
  refuse_bpe_field(doc, model, "end_of_word_suffix", "not supported with a byte-level BPE");
  refuse_bpe_field(doc, model, "byte_fallback", "not supported with a byte-level BPE");
  return ByteLevelBpe(read_bpe_vocab(doc, model), read_bpe_merges(doc, model), std::move(options),
                      read_added_tokens(doc), read_post_processor(doc), doc.path());
}

std::vector<TokenId> ByteLevelBpe::tokenize_word(std::string_view byte_chars) const {
  if (options_.ignore_merges)
    if (auto id = vocab_.model_id(std::string(byte_chars))) return {*id};
  std::vector<TokenId> symbols;
  bool last_unknown = false;
  for (size_t i = 0; i < byte_chars.size();) {
    const size_t n = utf8_length(static_cast<unsigned char>(byte_chars[i]));
    const std::optional<TokenId> id = vocab_.model_id(std::string(byte_chars.substr(i, n)));
    i += n;
    if (id) {
      symbols.push_back(*id);
      last_unknown = false;
    } else if (unk_id_) {
      if (!(options_.fuse_unk && last_unknown)) symbols.push_back(*unk_id_);
      last_unknown = true;
    }
  }
  return merges_.merge(std::move(symbols));
}

void ByteLevelBpe::pre_tokenize_piece(std::string_view text, std::vector<TextPiece>& out) const {
  if (text.empty()) return;
  std::u32string chars = decode_utf8(text);
  if (options_.add_prefix_space && chars.front() != U' ') chars.insert(chars.begin(), U' ');
  std::vector<std::pair<size_t, size_t>> pieces;
  if (options_.split == BpeSplit::Gpt2)
    pieces = gpt2_split(chars);
  else if (options_.split == BpeSplit::DigitsGpt2)
    pieces = digits_then_gpt2_split(chars, options_.individual_digits);
  else if (options_.split == BpeSplit::Cl100k)
    pieces = cl100k_split(chars, options_.max_digits);
  else
    pieces.emplace_back(0, chars.size());
  const ByteUnicodeMap& map = byte_unicode_map();
  for (const auto& [begin, end] : pieces) {
    const std::string bytes = encode_utf8(std::u32string_view(chars).substr(begin, end - begin));
    std::string byte_chars;
    for (char b : bytes)
      append_utf8(byte_chars, map.to_char(static_cast<uint8_t>(b)));
    out.push_back({std::move(byte_chars), std::nullopt});
  }
}

std::vector<TextPiece> ByteLevelBpe::pre_tokenize(std::string_view text) const {
  decode_utf8(text); // ill-formed input is refused with its byte offset before anything else
  std::vector<TextPiece> words;
  for (TextPiece& piece : vocab_.added().split(text)) {
    if (piece.id)
      words.push_back(std::move(piece));
    else
      pre_tokenize_piece(piece.text, words);
  }
  return words;
}

std::vector<TokenId> ByteLevelBpe::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<TokenId> ids =
      encode_pieces(pre_tokenize(text), [this](std::string_view w) { return tokenize_word(w); });
  return add_special_tokens ? post_processor_.apply(ids) : ids;
}

std::string ByteLevelBpe::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  const ByteUnicodeMap& map = byte_unicode_map();
  std::string bytes;
  bool first = true;
  for (TokenId id : ids) {
    std::optional<std::string> token = id_to_token(id);
    if (!token) continue;
    if (skip_special_tokens && vocab_.is_special(*token)) continue;
    if (!options_.byte_level_decoder) { // no decoder: the tokens joined by spaces
      bytes += (first ? "" : " ") + *token;
      first = false;
      continue;
    }
    // A token whose characters are not all byte characters stands for its own UTF-8.
    const std::u32string chars = decode_utf8(*token);
    std::string decoded;
    bool all_bytes = true;
    for (char32_t c : chars) {
      const std::optional<uint8_t> b = map.to_byte(c);
      if (!b) {
        all_bytes = false;
        break;
      }
      decoded.push_back(static_cast<char>(*b));
    }
    bytes += all_bytes ? decoded : *token;
  }
  return utf8_lossy(bytes);
}

std::optional<TokenId> ByteLevelBpe::token_to_id(std::string_view token) const {
  return vocab_.token_to_id(token);
}

std::optional<std::string> ByteLevelBpe::id_to_token(TokenId id) const {
  return vocab_.id_to_token(id);
}

size_t ByteLevelBpe::vocab_size() const {
  return vocab_.size();
}

} // namespace mt::tok
