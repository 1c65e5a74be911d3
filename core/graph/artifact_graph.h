// The pieces every ahead-of-time artifact folder is made of (model_artifact.h: one graph;
// generation_artifact.h: a decoder's prefills and decode steps): one graph's run as the
// runtime's Program reads it (runtime/src/program.h), the kernel library exported by the
// tuning target, the weights file, and files replaced whole (written beside, then renamed).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/graph/fusion.h"
#include "core/graph/graph_tasks.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/model_graph.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PluginTarget;

// Symbol of task `t` whose first group is `group_name`: "mt_<index>_<name as an identifier>".
std::string kernel_symbol(size_t t, const std::string& group_name);

// One graph's run: inputs and outputs (name, dtype, shape), the arena size of its static
// memory plan, and per group in run order its kernel (`group_symbols[g]`) and argument
// buffers (an input, a parameter by path, an arena offset, an output). Where `state_writes`
// is given (ModelExecutor::state_writes() of a decode step), each group lists the states'
// rows written into their caches before it runs, the graph those after the last, and the
// positions input they are written at. `arena_bytes` (when not null) receives the arena size.
nlohmann::json artifact_graph_json(const ModelGraph& g, const std::vector<FusedGroup>& groups,
                                   const std::vector<std::string>& group_symbols,
                                   const std::vector<std::vector<size_t>>* state_writes,
                                   size_t* arena_bytes = nullptr);

// Per argument of `group`'s kernel (its inputs, then its outputs): whether it is one of the
// model's parameters -- a weight the runtime passes as it lies in the weights file.
std::vector<uint8_t> weight_args(const ModelGraph& g, const FusedGroup& group);
// `a` where `b` is too (flags of a kernel shared by two groups).
void keep_common_weights(std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

// Exports `kernels` (all built by `target`; `names[i]` says whose kernel i is, for the
// message otherwise) as `symbols` into `path`: the library descriptor. `weights[i]` flags
// kernel i's params that are weights (weight_args): a target of ABI 1.10 may add variants
// reading them packed once (the descriptor's "packed" entries, which the runtime uses).
// Throws std::invalid_argument for a kernel of another target.
nlohmann::json export_artifact_kernels(const PluginTarget& target,
                                       const std::vector<TaskKernel>& kernels,
                                       const std::vector<std::string>& names,
                                       const std::vector<std::string>& symbols,
                                       const std::vector<std::vector<uint8_t>>& weights,
                                       const std::string& path);

// The distinct tasks of several graphs (a generation artifact's prefills and decode steps, an
// embedding artifact's buckets), each with one kernel and symbol: equal tasks of different
// graphs (hash and structure) share one kernel, exported once.
class ArtifactKernels {
public:
  // Adds the graph's tasks (`kernels` per task); the symbol of each of its groups.
  std::vector<std::string> add(const ModelGraph& graph, const std::vector<FusedGroup>& groups,
                               const std::vector<GraphTask>& tasks,
                               const std::vector<TaskKernel>& kernels);
  // export_artifact_kernels of them all into `path`: the library descriptor.
  nlohmann::json export_to(const PluginTarget& target, const std::string& path) const;
  size_t size() const { return tasks_.size(); }
  const std::vector<TaskKernel>& kernels() const { return kernels_; }

private:
  std::vector<GraphTask> tasks_;
  std::vector<TaskKernel> kernels_;
  std::vector<std::string> names_, symbols_;
  std::vector<std::vector<uint8_t>> weights_; // per task: its params that are weights
};

// The parameters of `g` from `params` (f32, of the model's shapes) into a safetensors file;
// the bytes written. Throws std::invalid_argument for a parameter missing or not so.
size_t write_artifact_weights(const ModelGraph& g, const std::map<std::string, NDArray>& params,
                              const std::string& path);

// The fields every artifact's JSON opens with, as the runtime checks them
// (runtime/src/artifact_files.h): `format` ("metatune-model", ...), the version, the model's
// name, and the file names of the kernel library and the weights.
nlohmann::json artifact_header(const std::string& format, const std::string& model);

// `text` into `path`, replacing it whole.
void write_artifact_text(const std::string& path, const std::string& text);

} // namespace mt
