// A config: the value that describes one layer (or a whole model) before it is built, modelled
// on AXLearn's configs. It is a kind (its ConfigSchema) plus a value for each field; child
// layers are configs held in fields, so a model is a tree of configs. Configs are values:
// copying one copies the whole tree, and no two configs share a child.
//
//   ConfigRegistry reg = ...;                       // schemas of the known kinds
//   Config layer = reg.make("TransformerLayer");    // every field at its default
//   layer.set("input_dim", 512).set("attention.num_heads", 8);
//   layer.resolve();                                // input_dim pushed to the children
//   layer.check_required();                         // every required field has a value
//
// Paths name a field from this config down: "attention.num_heads", "layers[2].input_dim".
// Every error is a ConfigError naming the path, the kind and what is wrong.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model/config_error.h"
#include "core/model/config_schema.h"
#include "core/model/config_value.h"

namespace mt {

class ConfigRegistry;

// Where a field's value came from. resolve() may overwrite a default or a pushed value, but a
// value that was set (by set(), an override or a loaded file) must agree with the pushed one.
enum class ValueOrigin : uint8_t { Default, Set, Pushed };

// Typed overrides for clone(): {{"num_layers", 4}, {"layer.attention.num_heads", 16}}.
using ConfigOverrides = std::vector<std::pair<std::string, ConfigValue>>;

class Config {
public:
  // An empty config (no kind); only assignment, kind() and empty() work on it.
  Config() = default;
  // A config of `schema`'s kind with its scalar and list defaults; child fields start unset
  // (ConfigRegistry::make fills in their default kinds).
  explicit Config(std::shared_ptr<const ConfigSchema> schema);

  bool empty() const { return schema_ == nullptr; }
  const std::string& kind() const;
  const ConfigSchema& schema() const;

  // Sets the field at `path` (converted as ConfigValue::converted_to allows: an int for a float
  // field) and returns this config, so that calls chain. Unknown fields, wrong types, a path
  // through an unset child or past a list's end throw ConfigError. Setting an unset value
  // clears the field.
  Config& set(std::string_view path, ConfigValue value);
  // Makes the field at `path` unset.
  Config& clear(std::string_view path);

  bool is_set(std::string_view path) const;
  const ConfigValue& value(std::string_view path) const;
  ValueOrigin origin(std::string_view path) const;
  // The declaration of the field at `path` (for "layers[2]": of the list field "layers").
  const FieldSpec& spec(std::string_view path) const;
  // The value as T: int64_t, int, double, bool, std::string, std::vector<int64_t>,
  // std::vector<double>, Config, std::vector<Config>. An unset field or another type throws
  // ConfigError naming the path, the field's type and the type asked for.
  template <typename T> T get(std::string_view path) const;
  // The child config at `path`, for editing in place; throws if it is not a set child.
  Config& child(std::string_view path);
  const Config& child(std::string_view path) const;
  std::vector<Config>& child_list(std::string_view path);
  const std::vector<Config>& child_list(std::string_view path) const;

  // A copy with `overrides` applied in order; this config is left untouched, also when an
  // override fails.
  Config clone(const ConfigOverrides& overrides) const;
  // A copy with overrides given as a JSON object whose keys are paths:
  //   {"num_layers": 4, "layer.attention": {"num_heads": 16}, "layer.norm": {"kind": "RMSNorm"}}
  // A JSON object for a child field edits that child with its keys as further overrides, unless
  // it names a "kind": then it is a whole config (read as by config_from_json, which needs
  // `registry`). null clears a field. Errors name the override's key.
  Config clone_json(std::string_view overrides, const ConfigRegistry* registry = nullptr) const;
  // A copy with "path=value" overrides (a command line's --set): the value is read as JSON
  // when it is JSON, else taken as a string ("activation=gelu").
  Config clone_assignments(const std::vector<std::string>& assignments,
                           const ConfigRegistry* registry = nullptr) const;
  // The same, applied to this config in place (on error, some overrides may be applied).
  Config& apply_json(std::string_view overrides, const ConfigRegistry* registry = nullptr);
  Config& apply_assignments(const std::vector<std::string>& assignments,
                            const ConfigRegistry* registry = nullptr);

  // Dimension push-down, top-down: each field that declares push_to writes its value into those
  // fields of its children (and they into theirs), marking them Pushed. A child field that was
  // set to a different value is a conflict; all conflicts are reported in one ConfigError that
  // names both paths and both values. An unset parent value or an unset child is skipped; a
  // child of a kind that lacks the target field, or has it with another type, is an error.
  Config& resolve();
  // Paths of every required field without a value, in tree order.
  std::vector<std::string> missing_required() const;
  // Throws one ConfigError listing every path missing_required() finds.
  void check_required() const;
  // What instantiation checks: on a copy, resolve() then check_required(); this config is not
  // changed. Missing fields that push-down would fill are therefore not reported.
  void validate() const;

  // Walks the tree depth-first: enter(path, config) before a config's children, exit after.
  // The root's path is "", children's "attention", "layers[1].attention". Either may be empty.
  using Visitor = std::function<void(const std::string& path, const Config& config)>;
  void visit(const Visitor& enter, const Visitor& exit = {}) const;

  // Recursive replace, bottom-up: children are handled before their parent, and each config
  // (root included) for which `match` holds is replaced by replace(it). The replacement is not
  // searched again, so a replacement that wraps the original (RoPE around a QKV projection)
  // does not recurse. Returns the number of configs replaced.
  using Matcher = std::function<bool(const std::string& path, const Config& config)>;
  using Replacer = std::function<Config(const Config& config)>;
  int replace_if(const Matcher& match, const Replacer& replace);
  int replace_kind(const std::string& kind, const Replacer& replace);

  // Field access by index into schema().fields(), for code that walks every field.
  const ConfigValue& field_value(size_t index) const { return values_.at(index).value; }
  ValueOrigin field_origin(size_t index) const { return values_.at(index).origin; }
  // Sets field `index` (converted, type-checked like set(); `path` names it in errors).
  void set_field(size_t index, ConfigValue value, ValueOrigin origin, const std::string& path);
  Config* field_child(size_t index) { return values_.at(index).value.as_child(); }
  std::vector<Config>* field_child_list(size_t index) {
    return values_.at(index).value.as_child_list();
  }

  // Same kind and equal values in every field, children included (origins are not compared).
  friend bool operator==(const Config& a, const Config& b);

private:
  struct Slot {
    ConfigValue value;
    ValueOrigin origin = ValueOrigin::Default;
  };

  void require_kind(const char* operation) const;

  std::shared_ptr<const ConfigSchema> schema_;
  std::vector<Slot> values_;
};

} // namespace mt
