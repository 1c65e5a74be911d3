// Running a model: its fused groups (fusion.h) as kernels, the parameters and inputs in the
// caller's buffers, the intermediates in one arena laid out by the static memory plan
// (memory_plan.h), the groups called in order. A group's kernel is a target's build of its
// function (untuned), of a schedule for it, or a library's implementation
// (kernel_selection.h chooses); its params are the group's inputs, then its outputs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/fusion.h"
#include "core/graph/memory_plan.h"
#include "core/graph/model_graph.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PackedParams;
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
  // One kernel per group, built already (the same module may serve several groups).
  ModelExecutor(const ModelGraph& graph, std::vector<FusedGroup> groups,
                std::vector<std::shared_ptr<const PluginModule>> kernels);
  ~ModelExecutor();
  ModelExecutor(const ModelExecutor&) = delete;
  ModelExecutor& operator=(const ModelExecutor&) = delete;

  // Every parameter must be set before run(): by path, shape and dtype checked. Drops the
  // packed copies of pack_params(). The executor reads the caller's arrays in place (no copy:
  // a generator's graphs would each hold the whole model again); they must outlive it, or
  // the next set_params. Given a temporary, the executor keeps the arrays itself.
  void set_params(const std::map<std::string, NDArray>& values);
  void set_params(std::map<std::string, NDArray>&& values);
  // Once the parameters are final: every kernel that takes one of them in a layout of its own
  // (PluginModule::packed_layout) gets it packed, from `cache` (made there on first use; a new
  // cache when null; a cache shared by executors given the same values) and is run with it
  // from then on. Returns how many arguments are packed.
  // The parameters' values must not change afterwards (set_params again, then pack again).
  size_t pack_params(std::shared_ptr<PackedParams> cache = nullptr);
  // How many of group g's arguments its kernel takes packed (0 before pack_params).
  size_t packed_args(size_t group) const;
  // The packed copies (null before pack_params).
  const PackedParams* packed_params() const { return packed_params_.get(); }
  // The model's outputs for `inputs` (in the graph's input order). A decode step's caches of
  // states written in place (ModelState::written_in_place) are written: the step's rows at
  // their positions, the rest of each cache untouched.
  std::vector<NDArray> run(const std::vector<NDArray>& inputs);
  // run() without copying the outputs out: they stay in the executor's buffers, read with
  // output(i) until the next call (a GPT-2 forward's logits are 26 MB; timing loops use this).
  void execute(const std::vector<NDArray>& inputs);
  const NDArray& output(size_t i) const;

  const std::vector<FusedGroup>& groups() const { return groups_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  // With profiling on, run() times every group call: group_seconds()[g] is group g's time in
  // the last run (the wall time of its kernel call).
  void set_profiling(bool on) { profiling_ = on; }
  const std::vector<double>& group_seconds() const { return group_seconds_; }
  // A decode step's states written in place (indexes into graph.states): those written into
  // their caches before group g runs ([g]; [groups().size()]: after the last group).
  const std::vector<std::vector<size_t>>& state_writes() const { return state_writes_; }

private:
  NDArray& buffer_of(const te::TensorNode* t);
  void check_params(const std::map<std::string, NDArray>& values) const;
  void drop_packed(); // new parameter values: the packed copies are stale
  void allocate();
  // ABI 1.9 states written in place (ModelState::written_in_place): which are written into
  // their caches before group g runs (state_writes_[g]; the last entry: after the last group).
  void plan_state_writes();
  void write_states(size_t before_group);

  const ModelGraph& graph_;
  std::vector<FusedGroup> groups_;
  std::vector<std::shared_ptr<const PluginModule>> modules_;
  MemoryPlan plan_;
  std::unique_ptr<std::byte[]> arena_storage_;
  bool profiling_ = false;
  std::vector<double> group_seconds_;
  std::map<const te::TensorNode*, NDArray> buffers_; // params, inputs, intermediates
  // pack_params(): per group, which arguments are packed, and views of their packed bytes.
  std::shared_ptr<PackedParams> packed_params_;
  std::vector<std::vector<uint8_t>> packed_flags_;
  std::vector<std::vector<NDArray>> packed_views_;
  std::map<std::string, const te::TensorNode*> param_by_path_;
  std::vector<std::vector<size_t>> state_writes_;
};

} // namespace mt
