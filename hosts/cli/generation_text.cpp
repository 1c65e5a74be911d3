// The text side of generation (see generation_text.h).
#include "hosts/cli/generation_text.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace mt::cli {

std::optional<tok::Tokenizer> tokenizer_of(const std::string& tokenizer_dir,
                                           const std::string& hf_dir) {
  const std::string dir = !tokenizer_dir.empty() ? tokenizer_dir : hf_dir;
  if (dir.empty()) return std::nullopt;
  namespace fs = std::filesystem;
  if (tokenizer_dir.empty() && !fs::exists(fs::path(dir) / "tokenizer.json") &&
      !fs::exists(fs::path(dir) / "vocab.txt"))
    return std::nullopt;
  return tok::Tokenizer::load(dir);
}

std::vector<int32_t> eos_ids(const std::string& hf_dir) {
  std::vector<int32_t> out;
  if (hf_dir.empty()) return out;
  for (const char* file : {"config.json", "generation_config.json"}) {
    std::ifstream in(std::filesystem::path(hf_dir) / file);
    if (!in) continue;
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("eos_token_id")) continue;
    const nlohmann::json& e = j["eos_token_id"];
    std::vector<nlohmann::json> ids =
        e.is_array() ? e.get<std::vector<nlohmann::json>>() : std::vector<nlohmann::json>{e};
    for (const nlohmann::json& x : ids)
      if (x.is_number_integer() && std::find(out.begin(), out.end(), x.get<int32_t>()) == out.end())
        out.push_back(x.get<int32_t>());
  }
  return out;
}

void TextStream::push(int32_t id) {
  if (!t_.id_to_token(static_cast<tok::TokenId>(id))) { // beyond the tokenizer's vocabulary
    std::printf("<%d>", id);
    std::fflush(stdout);
    ids_.clear();
    printed_.clear();
    return;
  }
  ids_.push_back(static_cast<tok::TokenId>(id));
  std::string text = t_.decode(ids_);
  static const std::string kReplacement = "\xEF\xBF\xBD";
  bool partial = text.size() >= 3 && text.compare(text.size() - 3, 3, kReplacement) == 0;
  if (partial || text.compare(0, printed_.size(), printed_) != 0) return;
  std::fputs(text.c_str() + printed_.size(), stdout);
  std::fflush(stdout);
  printed_ = std::move(text);
}

void TextStream::finish() {
  if (ids_.empty()) return;
  std::string text = t_.decode(ids_);
  if (text.size() <= printed_.size() || text.compare(0, printed_.size(), printed_) != 0) return;
  std::fputs(text.c_str() + printed_.size(), stdout);
  std::fflush(stdout);
  printed_ = std::move(text);
}

} // namespace mt::cli
