// The plugin components one sampling thread uses: its own postprocessors and mutators. A plugin
// component instance is used by one thread at a time (plugin_api/metatune/plugin_api/
// components.h), so every thread that samples beside the caller gets a set of its own, created
// by a factory that repeats what the tuner created for the search context (same names, same
// configurations, same initialisation).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/plugin/plugin_components.h"

namespace mt {

struct SamplerComponents {
  std::vector<std::unique_ptr<PluginPostproc>> postprocs; // in order of application
  std::vector<std::unique_ptr<PluginMutator>> mutators;   // in the search context's order
};

// Called once per extra sampling thread, on the thread that starts them.
using SamplerComponentFactory = std::function<SamplerComponents()>;

} // namespace mt
