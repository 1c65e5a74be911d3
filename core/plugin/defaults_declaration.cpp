// Parsing and matching of joins_defaults declarations (see defaults_declaration.h).
#include "core/plugin/defaults_declaration.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace mt {

bool DefaultsDeclaration::applies_to(std::string_view device_kind,
                                     std::string_view target_component) const {
  return std::any_of(targets.begin(), targets.end(), [&](const std::string& t) {
    return t == "*" || t == device_kind || t == target_component;
  });
}

DefaultsDeclaration parse_defaults_declaration(ComponentKind kind, std::string_view json) {
  if (kind != ComponentKind::ScheduleRule && kind != ComponentKind::Mutator &&
      kind != ComponentKind::Postproc)
    throw std::invalid_argument(std::string("a ") + to_string(kind) +
                                " cannot join a target's defaults (only schedule rules, "
                                "mutators and postprocessors do)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("not a JSON object ({\"targets\": [...], ...})");
  DefaultsDeclaration d;
  for (const auto& [key, value] : j.items()) {
    if (key == "targets") {
      if (value.is_string()) {
        d.targets.push_back(value.get<std::string>());
      } else if (value.is_array()) {
        for (const auto& t : value) {
          if (!t.is_string() || t.get<std::string>().empty())
            throw std::invalid_argument("\"targets\" holds something other than a name: " +
                                        t.dump());
          d.targets.push_back(t.get<std::string>());
        }
      } else {
        throw std::invalid_argument("\"targets\" is neither a name nor a list of names");
      }
    } else if (key == "probability") {
      if (!value.is_number()) throw std::invalid_argument("\"probability\" is not a number");
      d.probability = value.get<double>();
    } else if (key == "config") {
      if (!value.is_object()) throw std::invalid_argument("\"config\" is not a JSON object");
      d.config = value.dump();
    } else {
      throw std::invalid_argument("unknown field \"" + key +
                                  "\" (known: targets, probability, config)");
    }
  }
  if (d.targets.empty())
    throw std::invalid_argument("no \"targets\": name the device kinds or target components "
                                "(\"*\" for all) whose defaults the component joins");
  if (kind == ComponentKind::Mutator) {
    if (!(d.probability > 0) || !std::isfinite(d.probability))
      throw std::invalid_argument("a mutator needs a positive, finite \"probability\"");
  } else if (j.contains("probability")) {
    throw std::invalid_argument("only mutators take a \"probability\"");
  }
  return d;
}

std::string to_json_text(const DefaultsDeclaration& d) {
  nlohmann::json j;
  j["targets"] = d.targets;
  if (d.probability > 0) j["probability"] = d.probability;
  if (!d.config.empty()) j["config"] = nlohmann::json::parse(d.config);
  return j.dump();
}

} // namespace mt
