#include "core/tokenizer/tokenizer_json.h"

#include <fstream>
#include <sstream>

#include "core/tokenizer/tokenizer_error.h"

namespace mt::tok {

namespace {

const char* kind_of(const Json& v) {
  switch (v.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::object:
    return "an object";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
  case Json::value_t::number_float:
    return "a number";
  default:
    return "not a JSON value";
  }
}

} // namespace

std::string json_path(const std::string& field, const std::string& key) {
  return field.empty() ? key : field + "." + key;
}

TokenizerJson TokenizerJson::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError(path, "", "cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  Json root;
  try {
    root = Json::parse(text.str());
  } catch (const Json::parse_error& e) {
    std::string why = e.what();
    // Without nlohmann's "[json.exception.parse_error.101] " tag.
    if (const size_t tag = why.find("] "); tag != std::string::npos) why = why.substr(tag + 2);
    throw TokenizerError(path, "", "is not valid JSON: " + why);
  }
  if (!root.is_object()) throw TokenizerError(path, "", "is not a JSON object");
  return TokenizerJson(path, std::move(root));
}

void TokenizerJson::fail(const std::string& field, const std::string& why) const {
  throw TokenizerError(path_, field, why);
}

const Json* TokenizerJson::member(const Json& object, const std::string& field,
                                  const char* key) const {
  if (!object.is_object())
    fail(field.empty() ? "(root)" : field,
         std::string("is ") + kind_of(object) + ", not an object");
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json& TokenizerJson::required(const Json& object, const std::string& field,
                                    const char* key) const {
  const Json* v = member(object, field, key);
  if (!v) fail(json_path(field, key), "is missing");
  return *v;
}

std::string TokenizerJson::string_member(const Json& object, const std::string& field,
                                         const char* key) const {
  const Json& v = required(object, field, key);
  if (!v.is_string())
    fail(json_path(field, key), std::string("is ") + kind_of(v) + ", not a string");
  return v.get<std::string>();
}

std::optional<std::string> TokenizerJson::optional_string(const Json& object,
                                                          const std::string& field,
                                                          const char* key) const {
  const Json* v = member(object, field, key);
  if (!v) return std::nullopt;
  if (!v->is_string())
    fail(json_path(field, key), std::string("is ") + kind_of(*v) + ", not a string");
  return v->get<std::string>();
}

bool TokenizerJson::bool_member(const Json& object, const std::string& field, const char* key,
                                bool fallback) const {
  const Json* v = member(object, field, key);
  if (!v) return fallback;
  if (!v->is_boolean())
    fail(json_path(field, key), std::string("is ") + kind_of(*v) + ", not a boolean");
  return v->get<bool>();
}

std::optional<uint64_t> TokenizerJson::optional_unsigned(const Json& object,
                                                         const std::string& field,
                                                         const char* key) const {
  const Json* v = member(object, field, key);
  if (!v) return std::nullopt;
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
    fail(json_path(field, key), std::string("is ") + kind_of(*v) + ", not a non-negative integer");
  return v->get<uint64_t>();
}

std::string TokenizerJson::component_type(const char* key) const {
  const Json* c = member(root_, "", key);
  if (!c) return "";
  return string_member(*c, key, "type");
}

} // namespace mt::tok
