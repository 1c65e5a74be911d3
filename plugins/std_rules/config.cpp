#include "config.hpp"

#include <algorithm>

namespace mt::std_rules {

Config::Config(std::string_view component, std::string_view text)
    : component_(component), json_(nlohmann::json::object()) {
  if (text.empty()) return;
  try {
    json_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("configuration is not JSON: ") + e.what());
  }
  if (!json_.is_object()) fail("configuration must be a JSON object");
}

void Config::fail(const std::string& what) const {
  throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, component_ + ": " + what);
}

int64_t Config::get_int(const char* key, int64_t fallback) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_number_integer()) fail(std::string("'") + key + "' must be an integer");
  return v.get<int64_t>();
}

double Config::get_double(const char* key, double fallback) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_number()) fail(std::string("'") + key + "' must be a number");
  return v.get<double>();
}

bool Config::get_bool(const char* key, bool fallback) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_boolean()) fail(std::string("'") + key + "' must be true or false");
  return v.get<bool>();
}

std::string Config::get_string(const char* key, const std::string& fallback) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_string()) fail(std::string("'") + key + "' must be a string");
  return v.get<std::string>();
}

std::vector<int64_t> Config::get_ints(const char* key, const std::vector<int64_t>& fallback,
                                      bool allow_empty) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_array() || (v.empty() && !allow_empty))
    fail(std::string("'") + key + "' must be a " + (allow_empty ? "" : "non-empty ") +
         "array of integers");
  std::vector<int64_t> out;
  for (const auto& e : v) {
    if (!e.is_number_integer()) fail(std::string("'") + key + "' must hold integers only");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::vector<double> Config::get_doubles(const char* key,
                                        const std::vector<double>& fallback) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_array() || v.empty())
    fail(std::string("'") + key + "' must be a non-empty array of numbers");
  std::vector<double> out;
  for (const auto& e : v) {
    if (!e.is_number()) fail(std::string("'") + key + "' must hold numbers only");
    out.push_back(e.get<double>());
  }
  return out;
}

std::vector<std::string> Config::get_strings(const char* key,
                                             const std::vector<std::string>& fallback) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_array()) fail(std::string("'") + key + "' must be an array of strings");
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string()) fail(std::string("'") + key + "' must hold strings only");
    out.push_back(e.get<std::string>());
  }
  return out;
}

void Config::allow_only(const std::vector<std::string>& known) const {
  for (const auto& [key, value] : json_.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const std::string& k : known)
      list += (list.empty() ? "" : ", ") + k;
    fail("unknown configuration key '" + key + "' (known: " + (list.empty() ? "none" : list) + ")");
  }
}

} // namespace mt::std_rules
