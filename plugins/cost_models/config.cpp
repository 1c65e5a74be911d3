#include "config.hpp"

#include "metatune/sdk/error.hpp"

namespace mt::cost_models {

Config::Config(std::string_view component, std::string_view text,
               const std::vector<std::string>& known)
    : component_(component), json_(nlohmann::json::object()) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return;
  try {
    json_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("configuration is not JSON: ") + e.what());
  }
  if (!json_.is_object()) fail("configuration must be a JSON object");
  for (const auto& [key, value] : json_.items()) {
    bool ok = false;
    for (const auto& k : known)
      ok = ok || k == key;
    if (ok) continue;
    std::string list;
    for (const auto& k : known)
      list += (list.empty() ? "" : ", ") + k;
    fail("unknown configuration key '" + key + "' (known: " + list + ")");
  }
}

void Config::fail(const std::string& what) const {
  throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, component_ + ": " + what);
}

int64_t Config::get_int(const char* key, int64_t fallback, int64_t min, int64_t max) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_number_integer()) fail(std::string("'") + key + "' must be an integer");
  int64_t x = v.get<int64_t>();
  if (x < min || x > max)
    fail(std::string("'") + key + "' = " + std::to_string(x) + " is outside [" +
         std::to_string(min) + ", " + std::to_string(max) + "]");
  return x;
}

double Config::get_double(const char* key, double fallback, double min, double max) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_number()) fail(std::string("'") + key + "' must be a number");
  double x = v.get<double>();
  if (!(x >= min && x <= max))
    fail(std::string("'") + key + "' = " + std::to_string(x) + " is outside [" +
         std::to_string(min) + ", " + std::to_string(max) + "]");
  return x;
}

std::string Config::get_string(const char* key, const std::string& fallback) const {
  if (!json_.contains(key)) return fallback;
  const nlohmann::json& v = json_[key];
  if (!v.is_string()) fail(std::string("'") + key + "' must be a string");
  return v.get<std::string>();
}

} // namespace mt::cost_models
