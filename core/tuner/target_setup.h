// From a user's target string ("llvm", "llvm -mcpu=znver3", or a component name such as
// "llvm.cpu") to everything a tuning run needs of the target: the target component instance,
// the string records are filed under in the database, the device attributes the components
// are initialised with, and the default schedule rules, postprocessors and mutators.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/plugin/plugin_components.h"

namespace mt {

class PluginHost;

struct TargetSetup {
  std::unique_ptr<PluginTarget> target;
  std::string component;     // registered name of the target component ("llvm.cpu")
  std::string target_string; // database key: the device's own full target string
  std::string device_json;   // describe_device()
  TuneAttributes attrs;      // device_json's scalar fields
  // Default components, in order of application (the target's own list, else the standard
  // set for the device kind, restricted to the components that are registered).
  std::vector<std::string> rules, postprocs, mutators;
  std::vector<double> mutator_probs; // selection probability of each mutator
  // Why the target's device is not here (its describe() said "unavailable"); set only when
  // setup_target was told a device is not needed, else such a target is refused.
  std::string unavailable;
};

// True for device kinds that run thread blocks (the GPU standard set applies).
bool is_gpu_kind(const std::string& kind);
// The "kind" of a describe_device() JSON object ("llvm", "cuda", ...); empty if it has none.
std::string device_kind(const std::string& device_json);

// Whether the target says its products round their operands to bf16 (its device description's
// "fpmath": "bf16"): its kernels are checked at bf16's precision (with_bf16_products_tolerance).
bool rounds_products_to_bf16(const TargetSetup& t);

// A target string's first word (a component name or its prefix) and the configuration the
// component gets: {"target": "<kind> <options>"} for the words after it ("llvm -mcpu=x" for
// both "llvm -mcpu=x" and "llvm.cpu -mcpu=x"), empty when there are none.
struct TargetWords {
  std::string word;
  std::string config;
};
TargetWords split_target(const std::string& target);

// Resolves `target`: its first word names a target component, either exactly or as the
// component's prefix ("llvm" -> "llvm.cpu"); the whole string is handed to the component's
// configuration as {"target": ...} unless it is just the component name. Throws
// std::invalid_argument listing the registered targets when none matches, and
// std::runtime_error with the target's reason when its describe() says "unavailable" -- unless
// `need_device` is false (looking at the search space: the target then gives the limits of the
// architecture asked for, and `unavailable` says why there is no device).
TargetSetup setup_target(const PluginHost& host, const std::string& target,
                         bool need_device = true);

// True if a record filed under `record_target` belongs to what the user asked for with
// `wanted` (equal; or `wanted` is the first word(s) of it, e.g. "llvm"; or a component prefix
// of its first word, e.g. "onednn" for "onednn.cpu").
bool target_matches(const std::string& record_target, const std::string& wanted);

// `target` without its feature list (-mattr=...), for messages: the full string can run to
// a thousand characters.
std::string short_target_name(const std::string& target);

} // namespace mt
