// Distinct workloads of a model graph (see graph_tasks.h).
#include "core/graph/graph_tasks.h"

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/ir/structural.h"

namespace mt {

std::vector<GraphTask> graph_tasks(const std::vector<FusedGroup>& groups, const std::string& model,
                                   const std::vector<ModelParam>& params) {
  std::unordered_set<const te::TensorNode*> is_param;
  for (const ModelParam& p : params)
    is_param.insert(p.placeholder.get());
  std::vector<GraphTask> tasks;
  std::unordered_multimap<uint64_t, size_t> by_hash;
  for (size_t g = 0; g < groups.size(); ++g) {
    uint64_t h = structural_hash(groups[g].func);
    size_t found = tasks.size();
    // A hash match is confirmed structurally: a collision must not run one group's kernel
    // on another's buffers.
    auto [lo, hi] = by_hash.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (structural_equal(tasks[it->second].workload, groups[g].func)) found = it->second;
    std::vector<bool> weights(groups[g].func.params.size(), false);
    for (size_t i = 0; i < groups[g].inputs.size() && i < weights.size(); ++i)
      weights[i] = is_param.count(groups[g].inputs[i].get()) > 0;
    if (found == tasks.size()) {
      by_hash.emplace(h, tasks.size());
      tasks.push_back({model + "/" + groups[g].name, groups[g].func, h, {}, weights});
    }
    GraphTask& t = tasks[found];
    t.groups.push_back(g);
    for (size_t i = 0; i < t.weights.size(); ++i)
      t.weights[i] = t.weights[i] && weights[i];
  }
  return tasks;
}

std::vector<size_t> task_of_group(const std::vector<GraphTask>& tasks, size_t num_groups) {
  std::vector<size_t> out(num_groups, SIZE_MAX);
  for (size_t t = 0; t < tasks.size(); ++t)
    for (size_t g : tasks[t].groups)
      out.at(g) = t;
  for (size_t g = 0; g < num_groups; ++g)
    if (out[g] == SIZE_MAX)
      throw std::logic_error("graph_tasks: group " + std::to_string(g) + " has no task");
  return out;
}

std::vector<TuneTask> tune_tasks(const std::vector<GraphTask>& tasks) {
  std::vector<TuneTask> out;
  for (const GraphTask& t : tasks)
    out.push_back({t.name, t.workload, t.weight(), t.weights});
  return out;
}

std::vector<TuneTask> merge_equal_tasks(std::vector<TuneTask> tasks) {
  std::vector<TuneTask> out;
  std::unordered_multimap<uint64_t, size_t> by_hash;
  for (TuneTask& t : tasks) {
    uint64_t h = structural_hash(t.workload);
    size_t found = out.size();
    auto range = by_hash.equal_range(h);
    for (auto it = range.first; it != range.second && found == out.size(); ++it)
      if (structural_equal(out[it->second].workload, t.workload)) found = it->second;
    if (found < out.size()) {
      out[found].weight += t.weight;
      // A weight only where it is one in every graph.
      std::vector<bool>& w = out[found].weights;
      for (size_t i = 0; i < w.size(); ++i)
        w[i] = w[i] && i < t.weights.size() && t.weights[i];
      continue;
    }
    by_hash.emplace(h, out.size());
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace mt
