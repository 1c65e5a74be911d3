// Config schemas: declaring fields and checking the declarations (see config_schema.h).
#include "core/model/config_schema.h"

#include "core/model/config.h"
#include "core/model/config_error.h"
#include "core/model/config_path.h"
#include "core/support/did_you_mean.h"

namespace mt {

bool is_config_identifier(const std::string& name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name[0])) return false;
  for (char c : name)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

ConfigSchema::ConfigSchema(std::string kind, std::string doc)
    : kind_(std::move(kind)), doc_(std::move(doc)) {
  if (kind_.empty()) throw ConfigError("config schema: empty kind name");
  for (char c : kind_)
    if (static_cast<unsigned char>(c) <= ' ' || c == '"' || c == '\\' || c == 0x7f)
      throw ConfigError("config schema: kind name '" + kind_ +
                        "' holds a space, quote, backslash or control character");
}

ConfigSchema& ConfigSchema::field(FieldSpec spec) {
  auto fail = [&](const std::string& why) {
    throw ConfigError("config schema '" + kind_ + "', field '" + spec.name + "': " + why);
  };
  if (kind_.empty()) throw ConfigError("config schema without a kind");
  if (!is_config_identifier(spec.name)) fail("not a field name ([A-Za-z_][A-Za-z0-9_]*)");
  if (spec.name == "kind") fail("'kind' is reserved (the JSON form names the kind with it)");
  if (find(spec.name)) fail("declared twice");
  bool is_child = spec.type == FieldType::Child || spec.type == FieldType::ChildList;
  if (spec.default_value.is_set()) {
    if (is_child) fail("a child field's default is a kind (default_kind), not a value");
    if (spec.required) fail("required, but has a default");
    try {
      spec.default_value = spec.default_value.converted_to(spec.type, "default");
    } catch (const ConfigError& e) {
      fail(e.what());
    }
  }
  if (spec.type == FieldType::ChildList && !spec.required)
    spec.default_value = ConfigValue(std::vector<Config>{});
  if (!spec.default_kind.empty()) {
    if (spec.type != FieldType::Child) fail("default_kind on a field that is not a child");
    if (spec.required) fail("required, but has a default kind");
  }
  if (!spec.push_to.empty() && is_child) fail("only a scalar or list field can be pushed down");
  fields_.push_back(std::move(spec));
  return *this;
}

namespace {

// Field specs are built member by member: designated initialisers that leave members out warn
// (-Wmissing-field-initializers) on the compilers CI uses.
FieldSpec make_spec(const std::string& name, FieldType type, const std::string& doc) {
  FieldSpec spec;
  spec.name = name;
  spec.type = type;
  spec.doc = doc;
  return spec;
}

} // namespace

ConfigSchema& ConfigSchema::required(const std::string& name, FieldType type,
                                     const std::string& doc) {
  FieldSpec spec = make_spec(name, type, doc);
  spec.required = true;
  return field(std::move(spec));
}

ConfigSchema& ConfigSchema::with_default(const std::string& name, ConfigValue default_value,
                                         const std::string& doc) {
  if (!default_value.is_set())
    throw ConfigError("config schema '" + kind_ + "', field '" + name + "': unset default");
  FieldSpec spec = make_spec(name, default_value.type(), doc);
  spec.default_value = std::move(default_value);
  return field(std::move(spec));
}

ConfigSchema& ConfigSchema::optional(const std::string& name, FieldType type,
                                     const std::string& doc) {
  return field(make_spec(name, type, doc));
}

ConfigSchema& ConfigSchema::child(const std::string& name, const std::string& default_kind,
                                  const std::string& doc) {
  FieldSpec spec = make_spec(name, FieldType::Child, doc);
  spec.default_kind = default_kind;
  return field(std::move(spec));
}

ConfigSchema& ConfigSchema::required_child(const std::string& name, const std::string& doc) {
  FieldSpec spec = make_spec(name, FieldType::Child, doc);
  spec.required = true;
  return field(std::move(spec));
}

ConfigSchema& ConfigSchema::child_list(const std::string& name, const std::string& doc) {
  return field(make_spec(name, FieldType::ChildList, doc));
}

ConfigSchema& ConfigSchema::push_down(const std::string& name,
                                      const std::vector<std::string>& targets) {
  std::optional<size_t> i = find(name);
  if (!i)
    throw ConfigError("config schema '" + kind_ + "': push_down of " + unknown_field_message(name));
  FieldSpec& spec = fields_[*i];
  if (spec.type == FieldType::Child || spec.type == FieldType::ChildList)
    throw ConfigError("config schema '" + kind_ + "', field '" + name +
                      "': only a scalar or list field can be pushed down");
  spec.push_to.insert(spec.push_to.end(), targets.begin(), targets.end());
  return *this;
}

std::optional<size_t> ConfigSchema::find(const std::string& name) const {
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].name == name) return i;
  return std::nullopt;
}

std::vector<std::string> ConfigSchema::field_names() const {
  std::vector<std::string> names;
  for (const FieldSpec& f : fields_)
    names.push_back(f.name);
  return names;
}

std::string ConfigSchema::unknown_field_message(const std::string& name) const {
  std::vector<std::string> names = field_names();
  std::string list;
  for (const std::string& n : names)
    list += (list.empty() ? "" : ", ") + n;
  return "kind '" + kind_ + "' has no field '" + name + "'" + did_you_mean(name, names) +
         "; its fields: " + (list.empty() ? "(none)" : list);
}

void ConfigSchema::check() const {
  if (kind_.empty()) throw ConfigError("config schema without a kind");
  for (const FieldSpec& spec : fields_) {
    for (const std::string& target : spec.push_to) {
      auto fail = [&](const std::string& why) {
        throw ConfigError("config schema '" + kind_ + "', field '" + spec.name + "': push_to '" +
                          target + "': " + why);
      };
      std::vector<ConfigPathStep> steps;
      try {
        steps = parse_config_path(target);
      } catch (const ConfigError& e) {
        fail(e.what());
      }
      for (const ConfigPathStep& s : steps)
        if (s.index) fail("a push-down path has no indices (a list step reaches every element)");
      if (steps.size() < 2) fail("not a field of a child (child.field)");
      std::optional<size_t> first = find(steps[0].field);
      if (!first) fail(unknown_field_message(steps[0].field));
      FieldType t = fields_[*first].type;
      if (t != FieldType::Child && t != FieldType::ChildList)
        fail("'" + steps[0].field + "' is a field of type " + field_type_name(t) + ", not a child");
    }
  }
}

} // namespace mt
