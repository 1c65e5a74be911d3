#include "core/tokenizer/tokenizer.h"

#include <filesystem>

#include "core/tokenizer/tokenizer_error.h"
#include "core/tokenizer/tokenizer_json.h"

namespace mt::tok {

Tokenizer Tokenizer::from_tokenizer_json(const std::string& path) {
  const TokenizerJson doc = TokenizerJson::read(path);
  const Json& model = doc.required(doc.root(), "", "model");
  const std::string type = doc.string_member(model, "model", "type");
  if (type == "BPE" && SentencePieceBpe::is_its_form(doc))
    return Tokenizer(SentencePieceBpe::from_tokenizer_json(doc));
  if (type == "BPE") return Tokenizer(ByteLevelBpe::from_tokenizer_json(doc));
  if (type == "WordPiece") return Tokenizer(WordPiece::from_tokenizer_json(doc));
  doc.fail("model.type", "'" + type + "' is not supported (supported: BPE, WordPiece)");
}

Tokenizer Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec)) throw TokenizerError(path, "", "does not exist");
    if (fs::path(path).filename() == "vocab.txt") return Tokenizer(WordPiece::from_vocab_txt(path));
    return from_tokenizer_json(path);
  }
  const fs::path json = fs::path(path) / "tokenizer.json";
  if (fs::exists(json, ec)) return from_tokenizer_json(json.string());
  const fs::path vocab = fs::path(path) / "vocab.txt";
  if (fs::exists(vocab, ec)) return Tokenizer(WordPiece::from_vocab_txt(vocab.string()));
  throw TokenizerError(path, "", "has no tokenizer.json or vocab.txt");
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return std::visit([&](const auto& t) { return t.encode(text, add_special_tokens); }, impl_);
}

Encoding Tokenizer::encode_pair(std::string_view a, std::string_view b,
                                bool add_special_tokens) const {
  return std::visit(
      [&](const auto& t) {
        const PostProcessor& post = t.post_processor();
        if (!post.pair_error().empty())
          throw TokenizerError(source(), "",
                               "cannot encode a pair of sequences: " + post.pair_error());
        return post.apply_pair(t.encode(a), t.encode(b), add_special_tokens);
      },
      impl_);
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  return std::visit([&](const auto& t) { return t.decode(ids, skip_special_tokens); }, impl_);
}

std::vector<TextPiece> Tokenizer::pre_tokenize(std::string_view text) const {
  return std::visit([&](const auto& t) { return t.pre_tokenize(text); }, impl_);
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  return std::visit([&](const auto& t) { return t.token_to_id(token); }, impl_);
}

std::optional<std::string> Tokenizer::id_to_token(TokenId id) const {
  return std::visit([&](const auto& t) { return t.id_to_token(id); }, impl_);
}

size_t Tokenizer::vocab_size() const {
  return std::visit([](const auto& t) { return t.vocab_size(); }, impl_);
}

const char* Tokenizer::kind() const {
  if (std::holds_alternative<ByteLevelBpe>(impl_)) return "byte-level BPE";
  if (std::holds_alternative<SentencePieceBpe>(impl_)) return "SentencePiece BPE";
  return "WordPiece";
}

const std::string& Tokenizer::source() const {
  return std::visit([](const auto& t) -> const std::string& { return t.source(); }, impl_);
}

} // namespace mt::tok
