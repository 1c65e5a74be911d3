// A plugin component's declaration that it joins the default components of some targets (ABI
// 1.3, mt_component_desc.joins_defaults): parsed and checked when the plugin is loaded, so a
// malformed one refuses the plugin with its path, and read by the tuner when it composes a
// run's search space (core/tuner/space_config.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/plugin/component_kind.h"

namespace mt {

struct DefaultsDeclaration {
  // Device kinds (the "kind" of a target's describe(), e.g. "llvm", "cuda") or target component
  // names ("llvm.cpu"); "*" = every target. Never empty.
  std::vector<std::string> targets;
  double probability = 0; // mutators: selection weight (> 0); 0 for the other kinds
  std::string config;     // JSON text the joined instance is created with; empty = defaults

  // Whether a run on a target of device kind `device_kind` with target component
  // `target_component` gets the component.
  bool applies_to(std::string_view device_kind, std::string_view target_component) const;
};

// Parses the JSON text of a declaration of a component of `kind`. Throws std::invalid_argument
// saying what is wrong (not JSON, a kind that cannot join defaults, no targets, a mutator
// without a positive probability, an unknown field).
DefaultsDeclaration parse_defaults_declaration(ComponentKind kind, std::string_view json);

// The declaration as JSON text (what `metatune plugins --json` shows).
std::string to_json_text(const DefaultsDeclaration& d);

} // namespace mt
