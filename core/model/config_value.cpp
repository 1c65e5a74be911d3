// Config field values (see config_value.h).
#include "core/model/config_value.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/model/config.h"
#include "core/model/config_error.h"
#include "core/support/check.h"

namespace mt {

const char* field_type_name(FieldType type) {
  switch (type) {
  case FieldType::Int:
    return "int";
  case FieldType::Float:
    return "float";
  case FieldType::Bool:
    return "bool";
  case FieldType::String:
    return "string";
  case FieldType::IntList:
    return "int list";
  case FieldType::FloatList:
    return "float list";
  case FieldType::Child:
    return "config";
  case FieldType::ChildList:
    return "config list";
  }
  MT_ICHECK(false, "FieldType ", static_cast<int>(type), " outside its list");
  return "";
}

ConfigValue::ConfigValue() = default;
ConfigValue::ConfigValue(int64_t v) : v_(v) {}
ConfigValue::ConfigValue(double v) : v_(v) {}
ConfigValue::ConfigValue(bool v) : v_(v) {}
ConfigValue::ConfigValue(const char* v) : v_(std::string(v)) {}
ConfigValue::ConfigValue(std::string v) : v_(std::move(v)) {}
ConfigValue::ConfigValue(std::vector<int64_t> v) : v_(std::move(v)) {}
ConfigValue::ConfigValue(std::vector<double> v) : v_(std::move(v)) {}
ConfigValue::ConfigValue(std::initializer_list<int> v)
    : v_(std::vector<int64_t>(v.begin(), v.end())) {}
ConfigValue::ConfigValue(std::initializer_list<double> v) : v_(std::vector<double>(v)) {}
ConfigValue::ConfigValue(const Config& v) : v_(std::make_unique<Config>(v)) {}
ConfigValue::ConfigValue(Config&& v) : v_(std::make_unique<Config>(std::move(v))) {}
ConfigValue::ConfigValue(std::vector<Config> v) : v_(std::move(v)) {}

int64_t ConfigValue::to_int64(uint64_t v, std::false_type) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw ConfigError("integer " + std::to_string(v) + " does not fit a config int (int64)");
  return static_cast<int64_t>(v);
}

ConfigValue::ConfigValue(const ConfigValue& other) {
  *this = other;
}
ConfigValue::ConfigValue(ConfigValue&& other) noexcept = default;
ConfigValue& ConfigValue::operator=(ConfigValue&& other) noexcept = default;
ConfigValue::~ConfigValue() = default;

ConfigValue& ConfigValue::operator=(const ConfigValue& other) {
  if (this == &other) return *this;
  if (const auto* child = std::get_if<std::unique_ptr<Config>>(&other.v_)) {
    MT_ICHECK(*child != nullptr, "a child value without a config");
    v_ = std::make_unique<Config>(**child);
  } else {
    std::visit(
        [this](const auto& x) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(x)>, std::unique_ptr<Config>>) v_ = x;
        },
        other.v_);
  }
  return *this;
}

bool ConfigValue::is_set() const {
  return !std::holds_alternative<std::monostate>(v_);
}

FieldType ConfigValue::type() const {
  switch (v_.index()) {
  case 1:
    return FieldType::Int;
  case 2:
    return FieldType::Float;
  case 3:
    return FieldType::Bool;
  case 4:
    return FieldType::String;
  case 5:
    return FieldType::IntList;
  case 6:
    return FieldType::FloatList;
  case 7:
    return FieldType::Child;
  case 8:
    return FieldType::ChildList;
  }
  MT_ICHECK(false, "type() of an unset config value");
  return FieldType::Int;
}

const char* ConfigValue::type_name() const {
  return is_set() ? field_type_name(type()) : "unset";
}

const int64_t* ConfigValue::as_int() const {
  return std::get_if<int64_t>(&v_);
}
const double* ConfigValue::as_float() const {
  return std::get_if<double>(&v_);
}
const bool* ConfigValue::as_bool() const {
  return std::get_if<bool>(&v_);
}
const std::string* ConfigValue::as_string() const {
  return std::get_if<std::string>(&v_);
}
const std::vector<int64_t>* ConfigValue::as_int_list() const {
  return std::get_if<std::vector<int64_t>>(&v_);
}
const std::vector<double>* ConfigValue::as_float_list() const {
  return std::get_if<std::vector<double>>(&v_);
}
const Config* ConfigValue::as_child() const {
  const auto* p = std::get_if<std::unique_ptr<Config>>(&v_);
  return p ? p->get() : nullptr;
}
Config* ConfigValue::as_child() {
  auto* p = std::get_if<std::unique_ptr<Config>>(&v_);
  return p ? p->get() : nullptr;
}
const std::vector<Config>* ConfigValue::as_child_list() const {
  return std::get_if<std::vector<Config>>(&v_);
}
std::vector<Config>* ConfigValue::as_child_list() {
  return std::get_if<std::vector<Config>>(&v_);
}

ConfigValue ConfigValue::converted_to(FieldType type, const std::string& what) const {
  auto fail = [&](const std::string& why) {
    throw ConfigError(what + ": expected " + field_type_name(type) + ", given " + why);
  };
  if (!is_set()) return *this;
  FieldType given = this->type();
  if (given == type) {
    if (const double* d = as_float(); d && !std::isfinite(*d))
      fail("non-finite float " + to_string() + " (JSON cannot hold it)");
    if (const auto* l = as_float_list())
      for (double d : *l)
        if (!std::isfinite(d)) fail("a float list with a non-finite element");
    if (const std::string* s = as_string()) {
      // Every string must be writable as JSON, so that a config always saves.
      try {
        (void)nlohmann::json(*s).dump();
      } catch (const nlohmann::json::exception&) {
        fail("a string that is not valid UTF-8");
      }
    }
    const Config* c = as_child();
    if (given == FieldType::Child && c->empty()) fail("an empty config (no kind)");
    if (const auto* list = as_child_list())
      for (const Config& e : *list)
        if (e.empty()) fail("a config list with an empty config (no kind)");
    return *this;
  }
  if (given == FieldType::Int && type == FieldType::Float)
    return ConfigValue(static_cast<double>(*as_int()));
  if (given == FieldType::IntList && type == FieldType::FloatList) {
    const auto& ints = *as_int_list();
    return ConfigValue(std::vector<double>(ints.begin(), ints.end()));
  }
  fail(std::string(field_type_name(given)) + " " + to_string());
  return *this;
}

std::string ConfigValue::to_string() const {
  switch (v_.index()) {
  case 0:
    return "unset";
  case 1:
    return std::to_string(*as_int());
  case 2:
    return std::isfinite(*as_float()) ? nlohmann::json(*as_float()).dump() : "non-finite";
  case 3:
    return *as_bool() ? "true" : "false";
  case 4:
    return nlohmann::json(*as_string())
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  case 5:
    return nlohmann::json(*as_int_list()).dump();
  case 6: {
    std::string s = "[";
    for (double d : *as_float_list()) {
      if (s.size() > 1) s += ",";
      s += std::isfinite(d) ? nlohmann::json(d).dump() : "non-finite";
    }
    return s + "]";
  }
  case 7:
    return "<" + as_child()->kind() + ">";
  case 8:
    return "<" + std::to_string(as_child_list()->size()) + " configs>";
  }
  return "";
}

bool operator==(const ConfigValue& a, const ConfigValue& b) {
  if (a.v_.index() != b.v_.index()) return false;
  if (const Config* c = a.as_child()) return *c == *b.as_child();
  return a.v_ == b.v_;
}

} // namespace mt
