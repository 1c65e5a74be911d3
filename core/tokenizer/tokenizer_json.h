// A tokenizer.json read for the loaders (byte_level_bpe.cpp, word_piece.cpp): the parsed
// document and its path, and field accessors that throw TokenizerError naming the file and the
// field's JSON path. Internal to core/tokenizer (it exposes nlohmann::json).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace mt::tok {

using Json = nlohmann::json;

class TokenizerJson {
public:
  // Throws TokenizerError for a missing or unreadable file, or text that is not JSON.
  static TokenizerJson read(const std::string& path);
  TokenizerJson(std::string path, Json root) : path_(std::move(path)), root_(std::move(root)) {}

  const std::string& path() const { return path_; }
  const Json& root() const { return root_; }

  [[noreturn]] void fail(const std::string& field, const std::string& why) const;

  // The member `key` of `object` (whose JSON path is `field`), nullptr when absent or null.
  // Throws when `object` is not an object.
  const Json* member(const Json& object, const std::string& field, const char* key) const;
  // The same, required and non-null.
  const Json& required(const Json& object, const std::string& field, const char* key) const;
  std::string string_member(const Json& object, const std::string& field, const char* key) const;
  std::optional<std::string> optional_string(const Json& object, const std::string& field,
                                             const char* key) const;
  bool bool_member(const Json& object, const std::string& field, const char* key,
                   bool fallback) const;
  std::optional<uint64_t> optional_unsigned(const Json& object, const std::string& field,
                                            const char* key) const;
  // The "type" of the component `key` of the root ("" when it is absent or null).
  std::string component_type(const char* key) const;

private:
  std::string path_;
  Json root_;
};

// "field.key", or "key" at the root.
std::string json_path(const std::string& field, const std::string& key);

} // namespace mt::tok
