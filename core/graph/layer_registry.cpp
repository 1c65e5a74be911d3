// Layer schemas as config kinds (see layer_registry.h).
#include "core/graph/layer_registry.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/model/config_json.h"
#include "core/plugin/plugin_components.h"
#include "core/plugin/plugin_host.h"

namespace mt {

namespace {

FieldType field_type(const std::string& t) {
  if (t == "int") return FieldType::Int;
  if (t == "float") return FieldType::Float;
  if (t == "bool") return FieldType::Bool;
  if (t == "string") return FieldType::String;
  if (t == "int_list") return FieldType::IntList;
  if (t == "float_list") return FieldType::FloatList;
  if (t == "layer") return FieldType::Child;
  return FieldType::ChildList; // "layer_list": the host checked the schema at registration
}

ConfigValue default_of(FieldType type, const nlohmann::json& j) {
  switch (type) {
  case FieldType::Int:
    return ConfigValue(j.get<int64_t>());
  case FieldType::Float:
    return ConfigValue(j.get<double>());
  case FieldType::Bool:
    return ConfigValue(j.get<bool>());
  case FieldType::String:
    return ConfigValue(j.get<std::string>());
  case FieldType::IntList:
    return ConfigValue(j.get<std::vector<int64_t>>());
  case FieldType::FloatList:
    return ConfigValue(j.get<std::vector<double>>());
  default:
    return ConfigValue();
  }
}

ConfigSchema schema_of(const ComponentInfo& c) {
  nlohmann::json s = nlohmann::json::parse(c.layer_schema);
  ConfigSchema out(c.name, s.value("doc", c.description));
  for (const auto& f : s["fields"]) {
    FieldSpec spec;
    spec.name = f["name"];
    spec.type = field_type(f["type"]);
    spec.required = f.value("required", false);
    spec.doc = f.value("doc", std::string());
    if (f.contains("default") && !f["default"].is_null()) {
      if (spec.type == FieldType::Child) {
        if (!f["default"].is_object() || !f["default"].contains("kind"))
          throw std::invalid_argument("field '" + spec.name +
                                      "': a layer field's default is {\"kind\": ...}");
        spec.default_kind = f["default"]["kind"];
      } else if (spec.type != FieldType::ChildList) {
        try {
          spec.default_value = default_of(spec.type, f["default"]);
        } catch (const std::exception& e) {
          throw std::invalid_argument("field '" + spec.name + "': default " + f["default"].dump() +
                                      ": " + e.what());
        }
      }
    }
    out.field(std::move(spec));
  }
  if (s.contains("push_down"))
    for (const auto& [from, to] : s["push_down"].items())
      out.push_down(from, to.get<std::vector<std::string>>());
  return out;
}

} // namespace

ConfigRegistry layer_config_registry(const PluginHost& host) {
  ConfigRegistry reg;
  reg.set_unknown_kind_note("no loaded plugin provides a layer of this kind (`metatune layers` "
                            "lists those found; --path DIR or METATUNE_PLUGIN_PATH adds a "
                            "plugin directory)");
  for (const ComponentInfo& c : host.components(ComponentKind::Layer)) {
    if (c.layer_schema.empty()) continue; // a version-1 layer: not part of config trees
    try {
      reg.add(schema_of(c));
    } catch (const std::exception& e) {
      throw std::invalid_argument("layer '" + c.name + "' (" + c.plugin_path +
                                  "): its schema is not a valid config kind: " + e.what());
    }
  }
  return reg;
}

ModelGraph instantiate_model(const PluginHost& host, const Config& config,
                             const std::vector<te::Tensor>& inputs, BuildMode mode) {
  Config resolved = config;
  resolved.resolve();
  resolved.check_required();
  return instantiate_model(host, nlohmann::json::parse(config_to_json(resolved)), inputs, mode);
}

} // namespace mt
