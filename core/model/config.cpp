// Configs as values: fields addressed by path, typed access, required-field checks (see
// config.h). Tree walks are in config_tree.cpp, push-down in dimension_push_down.cpp, JSON
// and JSON overrides in config_json.cpp.
#include "core/model/config.h"

#include <limits>
#include <optional>
#include <utility>

#include "core/model/config_path.h"
#include "core/support/check.h"

namespace mt {

namespace {

// Where a path ends: field `field` of `owner`, or element `index` of that child-list field.
struct Location {
  Config* owner = nullptr;
  size_t field = 0;
  std::optional<size_t> index;
};

// Follows `path` from `root`; `operation` ("set", "get", ...) starts every error message.
Location locate(Config& root, std::string_view path, const char* operation) {
  std::string prefix = std::string(operation) + " '" + std::string(path) + "': ";
  std::vector<ConfigPathStep> steps;
  try {
    steps = parse_config_path(path);
  } catch (const ConfigError& e) {
    throw ConfigError(prefix + e.what());
  }
  Config* cur = &root;
  std::string walked;
  for (size_t i = 0; i < steps.size(); ++i) {
    const ConfigPathStep& step = steps[i];
    std::optional<size_t> field = cur->schema().find(step.field);
    if (!field)
      throw ConfigError(prefix + (walked.empty() ? "" : "at '" + walked + "': ") +
                        cur->schema().unknown_field_message(step.field));
    const FieldSpec& spec = cur->schema().at(*field);
    walked = join_config_path(walked, step.field);
    bool last = i + 1 == steps.size();
    if (step.index) {
      if (spec.type != FieldType::ChildList)
        throw ConfigError(prefix + "'" + walked + "' is a field of type " +
                          field_type_name(spec.type) + ", not a config list");
      std::vector<Config>* list = cur->field_child_list(*field);
      if (!list) throw ConfigError(prefix + "'" + walked + "' is unset");
      if (*step.index >= list->size())
        throw ConfigError(prefix + "index " + std::to_string(*step.index) +
                          " is past the end of '" + walked + "' (" + std::to_string(list->size()) +
                          " configs)");
      if (last) return {cur, *field, step.index};
      cur = &(*list)[*step.index];
      walked = index_config_path(walked, *step.index);
      continue;
    }
    if (last) return {cur, *field, std::nullopt};
    if (spec.type == FieldType::ChildList)
      throw ConfigError(prefix + "'" + walked + "' is a config list: name an element ('" + walked +
                        "[0]')");
    if (spec.type != FieldType::Child)
      throw ConfigError(prefix + "'" + walked + "' is a field of type " +
                        field_type_name(spec.type) + ", not a config");
    Config* child = cur->field_child(*field);
    if (!child) throw ConfigError(prefix + "'" + walked + "' is unset");
    cur = child;
  }
  MT_ICHECK(false, "parse_config_path returned no steps for '", path, "'");
  return {};
}

Location locate(const Config& root, std::string_view path, const char* operation) {
  // locate() only reads; the const_cast lets one walk serve both constnesses.
  return locate(const_cast<Config&>(root), path, operation);
}

std::string field_label(const Config& owner, size_t field, std::string_view path) {
  return "'" + std::string(path) + "' (" + owner.kind() + "." + owner.schema().at(field).name + ")";
}

} // namespace

Config::Config(std::shared_ptr<const ConfigSchema> schema) : schema_(std::move(schema)) {
  MT_ICHECK(schema_ != nullptr, "Config made from a null schema");
  for (const FieldSpec& spec : schema_->fields())
    values_.push_back({spec.default_value, ValueOrigin::Default});
}

const std::string& Config::kind() const {
  static const std::string none;
  return schema_ ? schema_->kind() : none;
}

const ConfigSchema& Config::schema() const {
  require_kind("schema()");
  return *schema_;
}

void Config::require_kind(const char* operation) const {
  if (!schema_) throw ConfigError(std::string(operation) + " on an empty config (no kind)");
}

void Config::set_field(size_t index, ConfigValue value, ValueOrigin origin,
                       const std::string& path) {
  require_kind("set");
  const FieldSpec& spec = schema_->at(index);
  Slot& slot = values_.at(index);
  slot.value = value.converted_to(spec.type, field_label(*this, index, path));
  slot.origin = origin;
}

Config& Config::set(std::string_view path, ConfigValue value) {
  require_kind("set");
  Location at = locate(*this, path, "set");
  if (at.index) {
    const Config* element = value.as_child();
    if (!element || element->empty())
      throw ConfigError("set '" + std::string(path) + "': an element of a config list takes a " +
                        "config, given " + value.type_name());
    (*at.owner->field_child_list(at.field))[*at.index] = *element;
    at.owner->values_[at.field].origin = ValueOrigin::Set;
    return *this;
  }
  at.owner->set_field(at.field, std::move(value), ValueOrigin::Set, std::string(path));
  return *this;
}

Config& Config::clear(std::string_view path) {
  require_kind("clear");
  Location at = locate(*this, path, "clear");
  if (at.index)
    throw ConfigError("clear '" + std::string(path) +
                      "': an element of a config list cannot be unset (erase it from the list)");
  at.owner->values_[at.field] = {ConfigValue(), ValueOrigin::Set};
  return *this;
}

bool Config::is_set(std::string_view path) const {
  require_kind("is_set");
  Location at = locate(*this, path, "is_set");
  return at.index || at.owner->values_[at.field].value.is_set();
}

const ConfigValue& Config::value(std::string_view path) const {
  require_kind("value");
  Location at = locate(*this, path, "value");
  if (at.index)
    throw ConfigError("value '" + std::string(path) +
                      "': an element of a config list is a config (use child())");
  return at.owner->values_[at.field].value;
}

ValueOrigin Config::origin(std::string_view path) const {
  require_kind("origin");
  Location at = locate(*this, path, "origin");
  return at.owner->values_[at.field].origin;
}

const FieldSpec& Config::spec(std::string_view path) const {
  require_kind("spec");
  Location at = locate(*this, path, "spec");
  return at.owner->schema().at(at.field);
}

namespace {

template <typename T> const T* value_as(const ConfigValue& v);
template <> const int64_t* value_as<int64_t>(const ConfigValue& v) {
  return v.as_int();
}
template <> const double* value_as<double>(const ConfigValue& v) {
  return v.as_float();
}
template <> const bool* value_as<bool>(const ConfigValue& v) {
  return v.as_bool();
}
template <> const std::string* value_as<std::string>(const ConfigValue& v) {
  return v.as_string();
}
template <> const std::vector<int64_t>* value_as<std::vector<int64_t>>(const ConfigValue& v) {
  return v.as_int_list();
}
template <> const std::vector<double>* value_as<std::vector<double>>(const ConfigValue& v) {
  return v.as_float_list();
}
template <> const Config* value_as<Config>(const ConfigValue& v) {
  return v.as_child();
}
template <> const std::vector<Config>* value_as<std::vector<Config>>(const ConfigValue& v) {
  return v.as_child_list();
}

template <typename T> const char* type_asked();
template <> const char* type_asked<int64_t>() {
  return "int";
}
template <> const char* type_asked<double>() {
  return "float";
}
template <> const char* type_asked<bool>() {
  return "bool";
}
template <> const char* type_asked<std::string>() {
  return "string";
}
template <> const char* type_asked<std::vector<int64_t>>() {
  return "int list";
}
template <> const char* type_asked<std::vector<double>>() {
  return "float list";
}
template <> const char* type_asked<Config>() {
  return "config";
}
template <> const char* type_asked<std::vector<Config>>() {
  return "config list";
}

// The value at `path` as T, with the error get() promises.
template <typename T> const T& typed(const Config& root, std::string_view path) {
  Location at = locate(root, path, "get");
  if (at.index) {
    if constexpr (std::is_same_v<T, Config>) {
      return (*at.owner->field_child_list(at.field))[*at.index];
    } else {
      throw ConfigError("get '" + std::string(path) + "': an element of a config list is a " +
                        "config, asked for " + type_asked<T>());
    }
  }
  const ConfigValue& v = at.owner->field_value(at.field);
  const FieldSpec& spec = at.owner->schema().at(at.field);
  if (!v.is_set())
    throw ConfigError("get " + field_label(*at.owner, at.field, path) + ": the " +
                      field_type_name(spec.type) + " field is unset");
  const T* p = value_as<T>(v);
  if (!p)
    throw ConfigError("get " + field_label(*at.owner, at.field, path) + ": the field is " +
                      field_type_name(spec.type) + ", asked for " + type_asked<T>());
  return *p;
}

} // namespace

template <typename T> T Config::get(std::string_view path) const {
  require_kind("get");
  if constexpr (std::is_same_v<T, int>) {
    int64_t v = typed<int64_t>(*this, path);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      throw ConfigError("get '" + std::string(path) + "': " + std::to_string(v) +
                        " does not fit an int (use get<int64_t>)");
    return static_cast<int>(v);
  } else {
    return typed<T>(*this, path);
  }
}

template int64_t Config::get<int64_t>(std::string_view) const;
template int Config::get<int>(std::string_view) const;
template double Config::get<double>(std::string_view) const;
template bool Config::get<bool>(std::string_view) const;
template std::string Config::get<std::string>(std::string_view) const;
template std::vector<int64_t> Config::get<std::vector<int64_t>>(std::string_view) const;
template std::vector<double> Config::get<std::vector<double>>(std::string_view) const;
template Config Config::get<Config>(std::string_view) const;
template std::vector<Config> Config::get<std::vector<Config>>(std::string_view) const;

const Config& Config::child(std::string_view path) const {
  require_kind("child");
  return typed<Config>(*this, path);
}

Config& Config::child(std::string_view path) {
  return const_cast<Config&>(std::as_const(*this).child(path));
}

const std::vector<Config>& Config::child_list(std::string_view path) const {
  require_kind("child_list");
  return typed<std::vector<Config>>(*this, path);
}

std::vector<Config>& Config::child_list(std::string_view path) {
  return const_cast<std::vector<Config>&>(std::as_const(*this).child_list(path));
}

Config Config::clone(const ConfigOverrides& overrides) const {
  require_kind("clone");
  Config copy = *this;
  for (const auto& [path, value] : overrides)
    copy.set(path, value);
  return copy;
}

namespace {

void collect_missing(const Config& c, const std::string& path, std::vector<std::string>& out) {
  const std::vector<FieldSpec>& fields = c.schema().fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string p = join_config_path(path, fields[i].name);
    const ConfigValue& v = c.field_value(i);
    if (fields[i].required && !v.is_set()) out.push_back(p);
    if (const Config* child = v.as_child()) collect_missing(*child, p, out);
    if (const std::vector<Config>* list = v.as_child_list())
      for (size_t k = 0; k < list->size(); ++k)
        collect_missing((*list)[k], index_config_path(p, k), out);
  }
}

} // namespace

std::vector<std::string> Config::missing_required() const {
  require_kind("missing_required");
  std::vector<std::string> out;
  collect_missing(*this, "", out);
  return out;
}

void Config::check_required() const {
  std::vector<std::string> missing = missing_required();
  if (missing.empty()) return;
  std::string list;
  for (const std::string& p : missing)
    list += (list.empty() ? "" : ", ") + p;
  throw ConfigError("config '" + kind() + "': " + std::to_string(missing.size()) +
                    (missing.size() == 1 ? " required field is" : " required fields are") +
                    " not set: " + list);
}

void Config::validate() const {
  require_kind("validate");
  Config copy = *this;
  copy.resolve();
  copy.check_required();
}

bool operator==(const Config& a, const Config& b) {
  if (a.empty() || b.empty()) return a.empty() && b.empty();
  if (a.schema_ != b.schema_ &&
      (a.kind() != b.kind() || a.schema_->field_names() != b.schema_->field_names()))
    return false;
  for (size_t i = 0; i < a.values_.size(); ++i)
    if (!(a.values_[i].value == b.values_[i].value)) return false;
  return true;
}

} // namespace mt
