// Component configuration: the JSON text a component is created with (empty = defaults),
// parsed once, with errors that name the component and the offending field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "metatune/sdk/error.hpp"

namespace mt::std_rules {

class Config {
public:
  Config(std::string_view component, std::string_view text);

  bool has(const char* key) const { return json_.contains(key); }
  // Whether `key` holds an array (an option that takes one value or a list of candidates).
  bool is_list(const char* key) const { return json_.contains(key) && json_[key].is_array(); }
  int64_t get_int(const char* key, int64_t fallback) const;
  double get_double(const char* key, double fallback) const;
  bool get_bool(const char* key, bool fallback) const;
  std::string get_string(const char* key, const std::string& fallback) const;
  // `allow_empty`: [] is a valid value (e.g. "none of these"), not a mistake.
  std::vector<int64_t> get_ints(const char* key, const std::vector<int64_t>& fallback,
                                bool allow_empty = false) const;
  std::vector<double> get_doubles(const char* key, const std::vector<double>& fallback) const;
  std::vector<std::string> get_strings(const char* key,
                                       const std::vector<std::string>& fallback) const;
  // Throws if the configuration has a key not in `known` (catches typos early).
  void allow_only(const std::vector<std::string>& known) const;

private:
  [[noreturn]] void fail(const std::string& what) const;
  std::string component_;
  nlohmann::json json_;
};

} // namespace mt::std_rules
