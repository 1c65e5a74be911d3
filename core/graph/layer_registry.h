// The config kinds of the loaded layer plugins: each model layer's schema (ABI 1.5) as a
// ConfigSchema of core/model, so that a model's config tree is built, checked and resolved
// (defaults, did-you-mean, required fields, dimensions pushed down) against exactly the layers
// that will instantiate it.
#pragma once

#include <vector>

#include "core/graph/model_graph.h"
#include "core/model/config.h"
#include "core/model/config_registry.h"

namespace mt {

class PluginHost;

// Every model layer found by `host`, by its component name ("std.Linear"). An unknown kind's
// error says that no loaded plugin provides it and how a plugin directory is added.
ConfigRegistry layer_config_registry(const PluginHost& host);

// `config` resolved and checked (on a copy: Config::validate), then instantiated.
ModelGraph instantiate_model(const PluginHost& host, const Config& config,
                             const std::vector<te::Tensor>& inputs,
                             BuildMode mode = BuildMode::whole());

} // namespace mt
