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

#include <cstdint>
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

// What the graph is built for (ABI 1.7, host_api.h layer_positions / layer_state_append).
// Whole: a sequence on its own, no state kept (what tuning and `model run` build). Prefill: the
// same computation, and every state's rows (attention's keys and values) become outputs for
// the caller to keep. Decode: `step` new tokens at run-time positions (an input [B, step], i32)
// against caches of `capacity` rows per state (inputs [B, capacity, W]); rows again outputs.
struct BuildMode {
  enum class Kind { Whole, Prefill, Decode } kind = Kind::Whole;
  int64_t capacity = 0; // Decode
  static BuildMode whole() { return {}; }
  static BuildMode prefill() { return {Kind::Prefill, 0}; }
  static BuildMode decode(int64_t capacity) { return {Kind::Decode, capacity}; }
};

// One state a layer keeps across generation steps: the layer's path and the state's name.
struct ModelState {
  std::string path;  // "transformer.layer.3.self_attention.attention.k"
  te::Tensor rows;   // [B, S, W]: this step's rows, one of the graph's outputs
  te::Tensor cache;  // [B, capacity, W]: a graph input (Decode only)
  size_t output = 0; // index of rows in ModelGraph::outputs
  size_t input = 0;  // index of cache in ModelGraph::inputs (Decode only)
  // ABI 1.9 layer_state_write: when decoding, the executor writes the rows into the cache at
  // their positions right after the kernel computing them, and the layer reads the cache alone.
  bool written_in_place = false;
};

struct ModelGraph {
  std::vector<te::Tensor> inputs;  // the model's inputs, as given (then positions and caches)
  std::vector<ModelParam> params;  // in declaration order (a layer's, then its children's)
  std::vector<te::Tensor> outputs; // the root layer's outputs (then the states' rows)
  BuildMode mode;
  size_t num_root_outputs = 0; // outputs before the states' rows
  te::Tensor positions;        // Decode: [B, S] i32, inputs[positions_input]
  size_t positions_input = 0;
  std::vector<ModelState> states; // Prefill and Decode, in the order the layers declared them
  // The input [B] i32 selecting the one position whose logits are the first output
  // (keep_last_position_logits, core/graph/last_position.h); SIZE_MAX: logits of every position.
  size_t last_position_input = SIZE_MAX;
};

// Errors (std::invalid_argument) name the layer's path and kind: a kind no loaded plugin
// registers ("unknown layer 'X' at 'encoder.layers.0' (plugin not found)"), a version-1
// layer, a child field that is not one, a plugin's refusal. `inputs[0]` is [B, S, ...] (the
// batch and sequence of the positions); Prefill and Decode need it.
ModelGraph instantiate_model(const PluginHost& host, const nlohmann::json& config,
                             const std::vector<te::Tensor>& inputs,
                             BuildMode mode = BuildMode::whole());

} // namespace mt
