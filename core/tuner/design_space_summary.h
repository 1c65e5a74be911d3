// What --show-space says of a workload: the design spaces the search space's rules make of it
// on the target, each summed up by its trace -- instructions, sampling decisions, and the
// annotations it places (the tiling structure, a tensor intrinsic, a pipeline's stages, ...)
// -- and the spaces a rule dropped, with its reason. Needs no device: the target's limits are
// enough for the rules.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/plugin/plugin_host.h"
#include "core/tuner/space_config.h"
#include "core/tuner/target_setup.h"

namespace mt {

struct DesignSpaceSummary {
  struct Space {
    size_t instructions = 0, decisions = 0;
    std::vector<std::pair<std::string, std::string>> annotations; // key, value; first of each
  };
  std::string workload; // canonical spec
  uint64_t seed = 1;
  std::vector<Space> spaces;
  std::vector<std::string> dropped; // why a rule dropped a space
};

// Throws std::invalid_argument for a malformed workload spec.
DesignSpaceSummary summarize_design_spaces(const PluginHost& host, const TargetSetup& target,
                                           const SearchSpace& space, const std::string& spec,
                                           uint64_t seed = 1);

std::string format_design_spaces(const DesignSpaceSummary& summary);
// One JSON object: {"workload", "seed", "spaces": [{"instructions", "decisions",
// "annotations": {key: value}}], "dropped": [...]}.
std::string design_spaces_json(const DesignSpaceSummary& summary);

} // namespace mt
