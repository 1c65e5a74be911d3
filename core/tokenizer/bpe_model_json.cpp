#include "core/tokenizer/bpe_model_json.h"

#include "core/tokenizer/tokenizer_error.h"

namespace mt::tok {

std::unordered_map<std::string, TokenId> read_bpe_vocab(const TokenizerJson& doc,
                                                        const Json& model) {
  const Json& vocab = doc.required(model, "model", "vocab");
  if (!vocab.is_object()) doc.fail("model.vocab", "is not an object of token: id");
  std::unordered_map<std::string, TokenId> out;
  out.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_unsigned() || it.value().get<uint64_t>() > UINT32_MAX)
      doc.fail("model.vocab", "entry '" + it.key() + "' is not a token id");
    out.emplace(it.key(), it.value().get<TokenId>());
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> read_bpe_merges(const TokenizerJson& doc,
                                                                 const Json& model) {
  const Json* merges = doc.member(model, "model", "merges");
  std::vector<std::pair<std::string, std::string>> out;
  if (!merges) return out;
  if (!merges->is_array()) doc.fail("model.merges", "is not an array");
  out.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const Json& m = (*merges)[i];
    const std::string field = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        doc.fail(field, "is not two tokens separated by one space: \"" + s + "\"");
      out.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      doc.fail(field, "is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return out;
}

BpeMerges bpe_merges_of(const Vocabulary& vocab,
                        const std::vector<std::pair<std::string, std::string>>& merges,
                        const std::string& source) {
  BpeMerges out;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const std::string field = "model.merges[" + std::to_string(rank) + "]";
    const std::optional<TokenId> l = vocab.model_id(left), r = vocab.model_id(right),
                                 m = vocab.model_id(left + right);
    if (!l) throw TokenizerError(source, field, "'" + left + "' is not in model.vocab");
    if (!r) throw TokenizerError(source, field, "'" + right + "' is not in model.vocab");
    if (!m)
      throw TokenizerError(source, field, "merged '" + left + right + "' is not in model.vocab");
    out.add(*l, *r, *m, static_cast<uint32_t>(rank));
  }
  return out;
}

std::optional<TokenId> bpe_unk_id(const Vocabulary& vocab, const std::optional<std::string>& unk,
                                  const std::string& source) {
  if (!unk) return std::nullopt;
  const std::optional<TokenId> id = vocab.model_id(*unk);
  if (!id) throw TokenizerError(source, "model.unk_token", "'" + *unk + "' is not in model.vocab");
  return id;
}

void refuse_bpe_field(const TokenizerJson& doc, const Json& model, const char* key,
                      const char* why) {
  const Json* v = doc.member(model, "model", key);
  if (!v) return;
  const bool unset = (v->is_string() && v->get<std::string>().empty()) ||
                     (v->is_boolean() && !v->get<bool>()) ||
                     (v->is_number() && v->get<double>() == 0.0);
  if (!unset) doc.fail(json_path("model", key), std::string("is set: ") + why);
}

} // namespace mt::tok
