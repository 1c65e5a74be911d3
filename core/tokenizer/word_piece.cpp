#include "core/tokenizer/word_piece.h"

#include <fstream>

#include "core/tokenizer/bert_pre_tokenizer.h"
#include "core/tokenizer/tokenizer_error.h"
#include "core/tokenizer/tokenizer_json.h"
#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"

namespace mt::tok {

namespace {

size_t utf8_char_count(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// The tokenizers crate's WordPiece decoder cleanup, applied to each token as it does.
std::string cleanup(std::string s) {
  static const std::pair<const char*, const char*> kReplacements[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kReplacements) {
    const std::string_view f(from), t(to);
    std::string out;
    for (size_t i = 0;;) {
      const size_t at = s.find(f, i);
      out.append(s, i, at == std::string::npos ? std::string::npos : at - i);
      if (at == std::string::npos) break;
      out.append(t);
      i = at + f.size();
    }
    s = std::move(out);
  }
  return s;
}

// Trailing White_Space removed, as the tokenizers crate reads vocab.txt lines (trim_end).
std::string trim_end(const std::string& line) {
  const std::u32string chars = decode_utf8(line);
  size_t end = chars.size();
  while (end > 0 && is_white_space(chars[end - 1]))
    --end;
  return encode_utf8(std::u32string_view(chars).substr(0, end));
}

std::unordered_map<std::string, TokenId> read_vocab(const TokenizerJson& doc, const Json& model) {
  const Json& vocab = doc.required(model, "model", "vocab");
  if (!vocab.is_object()) doc.fail("model.vocab", "is not an object of token: id");
  std::unordered_map<std::string, TokenId> out;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_unsigned() || it.value().get<uint64_t>() > UINT32_MAX)
      doc.fail("model.vocab", "entry '" + it.key() + "' is not a token id");
    out.emplace(it.key(), it.value().get<TokenId>());
  }
  return out;
}

BertNormalizerOptions read_bert_normalizer(const TokenizerJson& doc, const Json& n) {
  BertNormalizerOptions o;
  o.clean_text = doc.bool_member(n, "normalizer", "clean_text", true);
  o.handle_chinese_chars = doc.bool_member(n, "normalizer", "handle_chinese_chars", true);
  o.lowercase = doc.bool_member(n, "normalizer", "lowercase", true);
  if (const Json* s = doc.member(n, "normalizer", "strip_accents")) {
    if (!s->is_boolean()) doc.fail("normalizer.strip_accents", "is not a boolean or null");
    o.strip_accents = s->get<bool>();
  }
  return o;
}

} // namespace

WordPiece::WordPiece(std::unordered_map<std::string, TokenId> vocab, WordPieceOptions options,
                     std::vector<AddedToken> added_tokens, PostProcessor post_processor,
                     std::string source)
    : options_(std::move(options)), post_processor_(std::move(post_processor)),
      source_(std::move(source)) {
  AddedVocabulary::Normalizer normalize;
  if (options_.normalizer)
    normalize = [n = BertNormalizer(*options_.normalizer)](std::string_view s) { return n(s); };
  vocab_ =
      Vocabulary(std::move(vocab), AddedVocabulary(std::move(added_tokens), std::move(normalize)));
  const std::optional<TokenId> unk = vocab_.model_id(options_.unk_token);
  if (!unk)
    throw TokenizerError(source_, "unk_token",
                         "'" + options_.unk_token + "' is not in the vocabulary");
  unk_id_ = *unk;
}

WordPiece WordPiece::from_vocab_txt(const std::string& path, WordPieceOptions options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError(path, "", "cannot be opened");
  std::unordered_map<std::string, TokenId> vocab;
  std::string line;
  for (TokenId index = 0; std::getline(in, line); ++index) {
    std::string token;
    try {
      token = trim_end(line);
    } catch (const std::invalid_argument& e) {
      throw TokenizerError(path, "line " + std::to_string(index + 1),
                           std::string("has ") + e.what());
    }
    vocab.insert_or_assign(std::move(token), index); // a repeated token keeps its last line
  }
  if (vocab.empty()) throw TokenizerError(path, "", "is empty (no tokens)");
  std::vector<AddedToken> specials;
  for (const char* name : {"[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]"}) {
    std::string content = name == std::string_view("[UNK]") ? options.unk_token : name;
    if (auto it = vocab.find(content); it != vocab.end()) {
      AddedToken t;
      t.content = content;
      t.id = it->second;
      t.special = true;
      specials.push_back(std::move(t));
    }
  }
  PostProcessor post;
  auto cls = vocab.find("[CLS]"), sep = vocab.find("[SEP]");
  if (cls != vocab.end() && sep != vocab.end())
    post = PostProcessor::bert(cls->second, sep->second);
  return WordPiece(std::move(vocab), std::move(options), std::move(specials), std::move(post),
                   path);
}

WordPiece WordPiece::from_tokenizer_json(const TokenizerJson& doc) {
  const Json& root = doc.root();
  const Json& model = doc.required(root, "", "model");
  if (const std::string type = doc.string_member(model, "model", "type"); type != "WordPiece")
    doc.fail("model.type", "'" + type + "' is not WordPiece");
  WordPieceOptions options;
  const std::string normalizer = doc.component_type("normalizer");
  if (normalizer == "BertNormalizer")
    options.normalizer = read_bert_normalizer(doc, root["normalizer"]);
  else if (normalizer.empty())
    options.normalizer.reset();
  else
    doc.fail("normalizer", "'" + normalizer + "' is not supported (supported: BertNormalizer)");
  const std::string pre = doc.component_type("pre_tokenizer");
  if (pre != "BertPreTokenizer")
    doc.fail("pre_tokenizer", (pre.empty() ? std::string("(none)") : "'" + pre + "'") +
                                  " is not supported (supported: BertPreTokenizer)");
  const std::string decoder = doc.component_type("decoder");
  if (decoder == "WordPiece") {
    const Json& d = root["decoder"];
    options.decoder_prefix = doc.optional_string(d, "decoder", "prefix").value_or("##");
    options.decoder_cleanup = doc.bool_member(d, "decoder", "cleanup", true);
  } else if (decoder.empty()) {
    options.decoder_prefix.clear(); // no decoder: tokens joined by spaces
    options.decoder_cleanup = false;
  } else {
    doc.fail("decoder", "'" + decoder + "' is not supported (supported: WordPiece)");
  }
  options.unk_token = doc.optional_string(model, "model", "unk_token").value_or("[UNK]");
  options.continuing_subword_prefix =
      doc.optional_string(model, "model", "continuing_subword_prefix").value_or("##");
  if (auto m = doc.optional_unsigned(model, "model", "max_input_chars_per_word"))
    options.max_input_chars_per_word = *m;
  std::unordered_map<std::string, TokenId> vocab = read_vocab(doc, model);
  if (!vocab.count(options.unk_token))
    doc.fail("model.unk_token", "'" + options.unk_token + "' is not in model.vocab");
  return WordPiece(std::move(vocab), std::move(options), read_added_tokens(doc),
                   read_post_processor(doc), doc.path());
}

std::vector<TokenId> WordPiece::tokenize_word(std::string_view word) const {
  if (utf8_char_count(word) > options_.max_input_chars_per_word) return {unk_id_};
  std::vector<TokenId> ids;
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    std::optional<TokenId> found;
    while (start < end) {
      candidate.clear();
      if (start > 0) candidate = options_.continuing_subword_prefix;
      candidate.append(word.substr(start, end - start));
      if ((found = vocab_.model_id(candidate))) break;
      do
        --end; // back to the previous character boundary
      while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (!found) return {unk_id_};
    ids.push_back(*found);
    start = end;
  }
  return ids;
}

std::vector<TextPiece> WordPiece::pre_tokenize(std::string_view text) const {
  decode_utf8(text); // ill-formed input is refused with its byte offset before anything else
  std::vector<TextPiece> words;
  for (TextPiece& piece : vocab_.added().split(text)) {
    if (piece.id) {
      words.push_back(std::move(piece));
      continue;
    }
    for (std::string& word : bert_pre_tokenize(piece.text))
      words.push_back({std::move(word), std::nullopt});
  }
  return words;
}

std::vector<TokenId> WordPiece::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<TokenId> ids =
      encode_pieces(pre_tokenize(text), [this](std::string_view w) { return tokenize_word(w); });
  return add_special_tokens ? post_processor_.apply(ids) : ids;
}

std::string WordPiece::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::string out;
  bool first = true;
  const std::string& prefix = options_.decoder_prefix;
  for (TokenId id : ids) {
    std::optional<std::string> token = id_to_token(id);
    if (!token) continue;
    if (skip_special_tokens && vocab_.is_special(*token)) continue;
    std::string t = std::move(*token);
    if (!first) {
      if (!prefix.empty() && t.starts_with(prefix))
        t.erase(0, prefix.size());
      else
        t = " " + t;
    }
    first = false;
    out += options_.decoder_cleanup ? cleanup(std::move(t)) : t;
  }
  return out;
}

std::optional<TokenId> WordPiece::token_to_id(std::string_view token) const {
  return vocab_.token_to_id(token);
}

std::optional<std::string> WordPiece::id_to_token(TokenId id) const {
  return vocab_.id_to_token(id);
}

size_t WordPiece::vocab_size() const {
  return vocab_.size();
}

} // namespace mt::tok
