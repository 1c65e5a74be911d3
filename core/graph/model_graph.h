// A model as a graph of tensor operations: its config tree instantiated through the layer
// plugins (ABI 1.5). Each node of the tree becomes a layer instance created with its node's
// JSON; the root is built on the model's inputs, and every layer builds on the same tensor
// expression graph, asking for its parameters (placeholders named by their path in the tree,
// "encoder.layers.3.attention.q_proj.weight") and its children (built when first called, each
// time it is called: a child called twice is built twice, its parameters shared).
//
// The config tree comes in resolved: defaults filled, required fields checked, shared
// dimensions pushed down (core/model config trees do that); here only the layer kinds and the
// child fields of their schemas matter.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/ir/dtype.h"
#include "core/workload/te.h"

namespace mt {

class PluginHost;

struct ModelParam {
  std::string path; // "encoder.layers.3.attention.q_proj.weight"
  DType dtype = DType::f32();
  std::vector<int64_t> shape;
  std::string init;       // JSON initialiser (host_api.h layer_param_push)
  te::Tensor placeholder; // what the graph reads
};

struct ModelGraph {
  std::vector<te::Tensor> inputs;  // the model's inputs, as given
  std::vector<ModelParam> params;  // in declaration order (a layer's, then its children's)
  std::vector<te::Tensor> outputs; // the root layer's outputs
};

// Errors (std::invalid_argument) name the layer's path and kind: a kind no loaded plugin
// registers ("unknown layer 'X' at 'encoder.layers.0' (plugin not found)"), a version-1
// layer, a child field that is not one, a plugin's refusal.
ModelGraph instantiate_model(const PluginHost& host, const nlohmann::json& config,
                             const std::vector<te::Tensor>& inputs);

} // namespace mt
