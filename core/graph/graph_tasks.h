// The tuning tasks of a model graph: its fused groups (fusion.h) with equal structure --
// the twelve identical feed-forward kernels of a 12-layer transformer -- become one task
// weighted by how many groups share it. The database keys workloads by structure too, so a
// workload tuned in one model is found again in any other model (or sequence length bucket)
// that contains it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/fusion.h"
#include "core/graph/model_graph.h"
#include "core/tuner/tuner.h"

namespace mt {

struct GraphTask {
  std::string name;           // "<model>/<first group's name>", e.g. "std.Decoder/fused_matmul_3"
  Function workload;          // the first group's function (names are not part of the key)
  uint64_t hash = 0;          // structural_hash(workload)
  std::vector<size_t> groups; // indices of the groups that run it, in model order
  // Per param of `workload`: an input that is a model parameter in every group of the task
  // (TuneTask::weights).
  std::vector<bool> weights;
  double weight() const { return static_cast<double>(groups.size()); }
};

// Tasks in order of first use. `model` prefixes the names. `params`: the model's parameters
// (ModelGraph::params), which the tasks' weights say.
std::vector<GraphTask> graph_tasks(const std::vector<FusedGroup>& groups, const std::string& model,
                                   const std::vector<ModelParam>& params = {});

// For each group, the index of its task in `tasks`.
std::vector<size_t> task_of_group(const std::vector<GraphTask>& tasks, size_t num_groups);

// The tasks as the tuner takes them (tuner.h): name as spec, the workload, the weight, the
// weights.
std::vector<TuneTask> tune_tasks(const std::vector<GraphTask>& tasks);

// Tasks of several graphs of one model (sequence buckets, the decode steps of generation) with
// equal workloads -- the linears of one token at every cache capacity -- merged into one,
// weights summed, the first name kept: tuned once, not once per graph.
std::vector<TuneTask> merge_equal_tasks(std::vector<TuneTask> tasks);

} // namespace mt
