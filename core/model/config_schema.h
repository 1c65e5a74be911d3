// What a config kind ("Linear", "TransformerLayer") consists of: its fields, each with a type,
// a default or "required", a one-line doc, and for a shared dimension the fields of children
// its value is pushed to. Schemas are data, not C++ classes, so that a layer plugin can declare
// one through the C ABI; a ConfigRegistry holds them by kind and makes configs from them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model/config_value.h"

namespace mt {

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::Int;
  // A required field has no default; check_required() reports it while it is unset. A field
  // that is neither required nor has a default may stay unset ("none").
  bool required = false;
  // The default of a scalar or list field (unset: none). A child list defaults to [].
  ConfigValue default_value;
  // Child: the kind made for it by default ("" = unset by default).
  std::string default_kind;
  std::string doc;
  // Dimension push-down: paths, relative to this config, of fields of (grand)children that take
  // this field's value when the config is resolved ("attention.input_dim"). A step through a
  // child list reaches every element ("layers.input_dim").
  std::vector<std::string> push_to;
};

class ConfigSchema {
public:
  ConfigSchema() = default;
  explicit ConfigSchema(std::string kind, std::string doc = "");

  // Each adds one field and returns the schema so that declarations chain. A field spec that
  // is malformed (a name that is not an identifier or is "kind", a duplicate, a default of the
  // wrong type, required with a default, push_to into a field that is not a child) throws
  // ConfigError naming the kind and the field.
  ConfigSchema& field(FieldSpec spec);
  ConfigSchema& required(const std::string& name, FieldType type, const std::string& doc = "");
  // The field's type is the default's (an int list or float list needs a non-empty default to
  // tell the two apart: use field() for an empty one).
  ConfigSchema& with_default(const std::string& name, ConfigValue default_value,
                             const std::string& doc = "");
  // Neither required nor defaulted: unset unless set.
  ConfigSchema& optional(const std::string& name, FieldType type, const std::string& doc = "");
  // A child config, made as `default_kind` by default ("" = unset by default).
  ConfigSchema& child(const std::string& name, const std::string& default_kind,
                      const std::string& doc = "");
  ConfigSchema& required_child(const std::string& name, const std::string& doc = "");
  ConfigSchema& child_list(const std::string& name, const std::string& doc = "");
  // Declares that `name`'s value is pushed to `targets` (see FieldSpec::push_to).
  ConfigSchema& push_down(const std::string& name, const std::vector<std::string>& targets);

  const std::string& kind() const { return kind_; }
  const std::string& doc() const { return doc_; }
  const std::vector<FieldSpec>& fields() const { return fields_; }
  std::optional<size_t> find(const std::string& name) const;
  const FieldSpec& at(size_t index) const { return fields_.at(index); }
  std::vector<std::string> field_names() const;

  // "kind 'Attention' has no field 'num_head' (did you mean 'num_heads'?); its fields: ..."
  std::string unknown_field_message(const std::string& name) const;

  // What can only be checked once every field is declared: that each push_to path starts at a
  // child or child-list field of this kind. Throws ConfigError (ConfigRegistry::add calls it).
  void check() const;

private:
  std::string kind_, doc_;
  std::vector<FieldSpec> fields_;
};

// Whether `name` can be a field name: [A-Za-z_][A-Za-z0-9_]*.
bool is_config_identifier(const std::string& name);

} // namespace mt
