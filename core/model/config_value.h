// The value of one config field: unset, or one of the field types a layer can declare (int,
// float, bool, string, int list, float list, one child config, a list of child configs).
// Values are deep: copying a value that holds child configs copies those children.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace mt {

class Config;

enum class FieldType : uint8_t { Int, Float, Bool, String, IntList, FloatList, Child, ChildList };

// "int", "float", "bool", "string", "int list", "float list", "config", "config list".
const char* field_type_name(FieldType type);

class ConfigValue {
public:
  // Unset (a field with no value: an optional field left out, a required one not set yet).
  ConfigValue();
  // Any integer type but bool; an unsigned value above INT64_MAX throws ConfigError.
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) ConfigValue(T v)
      : ConfigValue(to_int64(v, std::is_signed<T>{})) {}
  ConfigValue(int64_t v);
  ConfigValue(double v);
  ConfigValue(bool v);
  ConfigValue(const char* v);
  ConfigValue(std::string v);
  ConfigValue(std::vector<int64_t> v);
  ConfigValue(std::vector<double> v);
  ConfigValue(std::initializer_list<int> v);
  ConfigValue(std::initializer_list<double> v);
  ConfigValue(const Config& v);
  ConfigValue(Config&& v);
  ConfigValue(std::vector<Config> v);

  ConfigValue(const ConfigValue& other);
  ConfigValue(ConfigValue&& other) noexcept;
  ConfigValue& operator=(const ConfigValue& other);
  ConfigValue& operator=(ConfigValue&& other) noexcept;
  ~ConfigValue();

  bool is_set() const;
  // The type of the value held; only for a set value.
  FieldType type() const;
  // The type's name, or "unset".
  const char* type_name() const;

  // Each returns nullptr when the value is not of that type.
  const int64_t* as_int() const;
  const double* as_float() const;
  const bool* as_bool() const;
  const std::string* as_string() const;
  const std::vector<int64_t>* as_int_list() const;
  const std::vector<double>* as_float_list() const;
  const Config* as_child() const;
  Config* as_child();
  const std::vector<Config>* as_child_list() const;
  std::vector<Config>* as_child_list();

  // The value in the type a field of `type` holds: an int becomes a float and an int list a
  // float list (exact widenings, as a literal `1` for a float field); anything else that does
  // not match throws ConfigError naming `what` (the field), the expected and the given type.
  ConfigValue converted_to(FieldType type, const std::string& what) const;

  // Short text for error messages: numbers and strings as JSON writes them, a child as its
  // kind ("<Linear>"), a list of children by their count.
  std::string to_string() const;

  // Deep equality: same type and equal values (children compared field by field).
  friend bool operator==(const ConfigValue& a, const ConfigValue& b);

private:
  static int64_t to_int64(int64_t v, std::true_type) { return v; }
  static int64_t to_int64(uint64_t v, std::false_type);

  // A single child lives behind a pointer (Config is incomplete here); the copy operations
  // copy the pointee, so no two values ever share a child.
  using Storage =
      std::variant<std::monostate, int64_t, double, bool, std::string, std::vector<int64_t>,
                   std::vector<double>, std::unique_ptr<Config>, std::vector<Config>>;
  Storage v_;
};

} // namespace mt
