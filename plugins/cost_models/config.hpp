// Configuration of a cost model: the JSON object it is created with (empty text = defaults).
// Every key is checked against the ones the model knows, and every error names the component
// and the key, so a typo in a tuning configuration fails loudly instead of being ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mt::cost_models {

class Config {
public:
  // Throws sdk::Error(MT_ERROR_INVALID_ARGUMENT) if `text` is not a JSON object or holds a key
  // not in `known`.
  Config(std::string_view component, std::string_view text, const std::vector<std::string>& known);

  int64_t get_int(const char* key, int64_t fallback, int64_t min, int64_t max) const;
  double get_double(const char* key, double fallback, double min, double max) const;
  std::string get_string(const char* key, const std::string& fallback) const;

private:
  [[noreturn]] void fail(const std::string& what) const;
  std::string component_;
  nlohmann::json json_;
};

} // namespace mt::cost_models
