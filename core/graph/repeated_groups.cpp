// Groups that compute the same function of the same tensors (see repeated_groups.h).
#include "core/graph/repeated_groups.h"

#include <unordered_map>
#include <unordered_set>

#include "core/ir/structural.h"

namespace mt {

std::vector<FusedGroup> without_repeated_groups(std::vector<FusedGroup> groups,
                                                const std::vector<te::Tensor>& outputs) {
  std::unordered_set<const te::TensorNode*> model_outputs;
  for (const te::Tensor& t : outputs)
    model_outputs.insert(t.get());
  // A dropped group's output -> the kept group's that stands for it.
  std::unordered_map<const te::TensorNode*, te::Tensor> instead;
  std::unordered_multimap<uint64_t, size_t> kept_by_hash; // index into `kept`
  std::vector<FusedGroup> kept;
  for (FusedGroup& g : groups) {
    for (te::Tensor& in : g.inputs) {
      auto it = instead.find(in.get());
      if (it != instead.end()) in = it->second;
    }
    bool read_by_caller = false;
    for (const te::Tensor& out : g.outputs)
      read_by_caller |= model_outputs.count(out.get()) > 0;
    const uint64_t h = structural_hash(g.func);
    const FusedGroup* same = nullptr;
    auto [lo, hi] = kept_by_hash.equal_range(h);
    for (auto it = lo; it != hi && !same && !read_by_caller; ++it) {
      const FusedGroup& k = kept[it->second];
      if (k.inputs.size() != g.inputs.size() || k.outputs.size() != g.outputs.size()) continue;
      bool same_inputs = true;
      for (size_t i = 0; i < g.inputs.size(); ++i)
        same_inputs &= k.inputs[i].get() == g.inputs[i].get();
      // A hash match is confirmed structurally, as graph_tasks does.
      if (same_inputs && structural_equal(k.func, g.func)) same = &k;
    }
    if (same) {
      for (size_t o = 0; o < g.outputs.size(); ++o)
        instead.emplace(g.outputs[o].get(), same->outputs[o]);
      continue;
    }
    kept_by_hash.emplace(h, kept.size());
    kept.push_back(std::move(g));
  }
  return kept;
}

} // namespace mt
