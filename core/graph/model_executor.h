// Running a model: its fused groups (fusion.h) as kernels built by a target, the parameters
// and intermediates in buffers, the groups called in order. The kernel of a group is the
// target's build of the group's function as given (untuned) or of a schedule for it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/fusion.h"
#include "core/graph/model_graph.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PluginModule;
class PluginTarget;

// Values of the parameters from their initialisers, deterministic in (seed, path): the same
// seed gives the same weights whatever else the model holds.
std::map<std::string, NDArray> init_params(const std::vector<ModelParam>& params, uint64_t seed);

class ModelExecutor {
public:
  // `groups` from fuse(graph.outputs); every group's function built by `target` now.
  ModelExecutor(const ModelGraph& graph, std::vector<FusedGroup> groups,
                const PluginTarget& target);
  ~ModelExecutor();
  ModelExecutor(const ModelExecutor&) = delete;
  ModelExecutor& operator=(const ModelExecutor&) = delete;

  // Every parameter must be set before run(): by path, shape and dtype checked.
  void set_params(const std::map<std::string, NDArray>& values);
  // The model's outputs for `inputs` (in the graph's input order).
  std::vector<NDArray> run(const std::vector<NDArray>& inputs);

  const std::vector<FusedGroup>& groups() const { return groups_; }

private:
  NDArray& buffer_of(const te::TensorNode* t);

  const ModelGraph& graph_;
  std::vector<FusedGroup> groups_;
  std::vector<std::unique_ptr<PluginModule>> modules_;
  std::map<const te::TensorNode*, NDArray> buffers_; // params, inputs, intermediates
  std::map<std::string, const te::TensorNode*> param_by_path_;
};

} // namespace mt
