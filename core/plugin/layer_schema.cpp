// Checks of model-layer schemas (see layer_schema.h).
#include "core/plugin/layer_schema.h"

#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace mt {

namespace {

const std::set<std::string> kTypes = {"int",      "float",      "bool",  "string",
                                      "int_list", "float_list", "layer", "layer_list"};

nlohmann::json parse(const std::string& text) {
  nlohmann::json s = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (s.is_discarded() || !s.is_object()) throw std::invalid_argument("not a JSON object");
  if (!s.contains("fields") || !s["fields"].is_array())
    throw std::invalid_argument("no \"fields\" array");
  return s;
}

} // namespace

void schema_check(const std::string& schema_json) {
  nlohmann::json s = parse(schema_json);
  std::map<std::string, std::string> types;
  for (size_t i = 0; i < s["fields"].size(); ++i) {
    const auto& f = s["fields"][i];
    std::string at = "field " + std::to_string(i);
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string())
      throw std::invalid_argument(at + ": no string \"name\"");
    std::string name = f["name"];
    at += " ('" + name + "')";
    if (name.empty() || name.find('.') != std::string::npos || name == "kind")
      throw std::invalid_argument(at + ": a name must be non-empty, without '.', not \"kind\"");
    if (!f.contains("type") || !f["type"].is_string() || !kTypes.count(f["type"]))
      throw std::invalid_argument(at + ": \"type\" must be one of int, float, bool, string, "
                                       "int_list, float_list, layer, layer_list");
    if (f.contains("required") && !f["required"].is_boolean())
      throw std::invalid_argument(at + ": \"required\" is not a boolean");
    if (f.contains("doc") && !f["doc"].is_string())
      throw std::invalid_argument(at + ": \"doc\" is not a string");
    if (!types.emplace(name, f["type"]).second)
      throw std::invalid_argument(at + ": declared twice");
  }
  for (const auto& f : s["fields"]) {
    if (!f.contains("repeat")) continue;
    std::string at = "field '" + f["name"].get<std::string>() + "'";
    if (f["type"] != "layer") throw std::invalid_argument(at + ": \"repeat\" on a non-layer field");
    if (!f["repeat"].is_string() || !types.count(f["repeat"]) || types[f["repeat"]] != "int")
      throw std::invalid_argument(at + ": \"repeat\" must name an int field of the schema");
  }
  if (!s.contains("push_down")) return;
  if (!s["push_down"].is_object()) throw std::invalid_argument("\"push_down\" is not an object");
  for (const auto& [from, to] : s["push_down"].items()) {
    if (!types.count(from))
      throw std::invalid_argument("push_down from '" + from + "': no such field");
    if (!to.is_array()) throw std::invalid_argument("push_down '" + from + "': not a list");
    for (const auto& t : to) {
      std::string path = t.is_string() ? t.get<std::string>() : "";
      size_t dot = path.find('.');
      std::string child = path.substr(0, dot);
      if (dot == std::string::npos || !types.count(child) ||
          (types[child] != "layer" && types[child] != "layer_list"))
        throw std::invalid_argument("push_down '" + from + "' -> '" + path +
                                    "': not \"child.field\" of a layer field");
    }
  }
}

std::vector<SchemaChildField> schema_child_fields(const std::string& schema_json) {
  nlohmann::json s = parse(schema_json);
  std::vector<SchemaChildField> out;
  for (const auto& f : s["fields"]) {
    std::string type = f.value("type", std::string());
    if (type != "layer" && type != "layer_list") continue;
    SchemaChildField c;
    c.name = f.value("name", std::string());
    if (type == "layer_list") {
      c.kind = SchemaChildField::Kind::List;
    } else if (f.contains("repeat") && f["repeat"].is_string()) {
      c.kind = SchemaChildField::Kind::Repeated;
      c.count_field = f["repeat"];
    }
    out.push_back(std::move(c));
  }
  return out;
}

} // namespace mt
