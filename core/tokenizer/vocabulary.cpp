// A tokenizer's vocabulary: the model's tokens and the added ones, looked up both ways.
#include "core/tokenizer/vocabulary.h"

#include <utility>

namespace mt::tok {

Vocabulary::Vocabulary(std::unordered_map<std::string, TokenId> model, AddedVocabulary added)
    : model_(std::move(model)), added_(std::move(added)) {
  for (const auto& [token, id] : model_)
    model_by_id_.emplace(id, token);
}

std::optional<TokenId> Vocabulary::model_id(const std::string& token) const {
  auto it = model_.find(token);
  if (it == model_.end()) return std::nullopt;
  return it->second;
}

std::optional<TokenId> Vocabulary::token_to_id(std::string_view token) const {
  if (auto id = added_.token_to_id(token)) return id;
  return model_id(std::string(token));
}

std::optional<std::string> Vocabulary::id_to_token(TokenId id) const {
  if (const AddedToken* t = added_.find(id)) return t->content;
  auto it = model_by_id_.find(id);
  if (it == model_by_id_.end()) return std::nullopt;
  return it->second;
}

bool Vocabulary::is_special(std::string_view token) const {
  const std::optional<TokenId> id = added_.token_to_id(token);
  return id && added_.find(*id)->special;
}

size_t Vocabulary::size() const {
  size_t n = model_.size();
  for (const AddedToken& t : added_.tokens())
    if (!model_.count(t.content)) ++n;
  return n;
}

} // namespace mt::tok
