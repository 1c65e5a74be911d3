// The tasks and the memory plan of a real model graph (GPT-2 small, instantiated, not built):
// equal kernels become one weighted task, and intermediates share memory only when their
// lifetimes do not overlap -- both checked here independently of the code under test.
#include "core/graph/graph_tasks.h"

#include <algorithm>
#include <set>

#include "core/graph/layer_registry.h"
#include "core/graph/memory_plan.h"
#include "core/ir/structural.h"
#include "core/model/config_json.h"
#include "graph_test_util.h"

namespace mt {
namespace {

using namespace graph_test;

struct Gpt2Graph {
  ModelGraph graph;
  std::vector<FusedGroup> groups;
  Gpt2Graph() {
    Config c = load_config_file(layer_config_registry(host()),
                                std::string(METATUNE_SOURCE_DIR) + "/configs/gpt2-small.json");
    graph = instantiate_model(host(), c, {te::placeholder({1, 4}, DType::i32(), "ids")});
    groups = fuse(graph.outputs);
  }
};

const Gpt2Graph& gpt2() {
  static Gpt2Graph g;
  return g;
}

TEST(GraphTasks, EqualKernelsOfTheTwelveLayersAreOneWeightedTask) {
  const auto& g = gpt2();
  std::vector<GraphTask> tasks = graph_tasks(g.groups, "gpt2");
  ASSERT_LT(tasks.size(), g.groups.size());
  size_t covered = 0;
  for (const GraphTask& t : tasks) {
    covered += t.groups.size();
    EXPECT_EQ(t.weight(), static_cast<double>(t.groups.size()));
    for (size_t gi : t.groups)
      EXPECT_TRUE(structural_equal(g.groups[gi].func, t.workload)) << t.name;
    // The per-layer kernels run once per layer (12), the embedding and the head once.
    EXPECT_TRUE(t.groups.size() == 1 || t.groups.size() % 12 == 0) << t.name;
  }
  EXPECT_EQ(covered, g.groups.size());
  for (size_t a = 0; a < tasks.size(); ++a)
    for (size_t b = a + 1; b < tasks.size(); ++b)
      EXPECT_FALSE(structural_equal(tasks[a].workload, tasks[b].workload))
          << tasks[a].name << " and " << tasks[b].name;
  std::vector<size_t> of = task_of_group(tasks, g.groups.size());
  for (size_t gi = 0; gi < g.groups.size(); ++gi)
    EXPECT_TRUE(structural_equal(g.groups[gi].func, tasks[of[gi]].workload));
}

// A task's weights are its inputs that are model parameters -- checked against the graph's
// parameter list by path -- and no output; the tuner times them packed where a kernel takes
// them so (MeasureOptions::weights). Without the parameters there are none.
TEST(GraphTasks, WeightsAreTheInputsThatAreModelParameters) {
  const auto& g = gpt2();
  std::vector<GraphTask> tasks = graph_tasks(g.groups, "gpt2", g.graph.params);
  std::set<const te::TensorNode*> params;
  for (const ModelParam& p : g.graph.params)
    params.insert(p.placeholder.get());
  size_t weights = 0;
  for (const GraphTask& t : tasks) {
    ASSERT_EQ(t.weights.size(), t.workload.params.size()) << t.name;
    for (size_t gi : t.groups) {
      const FusedGroup& group = g.groups[gi];
      for (size_t i = 0; i < t.weights.size(); ++i) {
        const bool is_param = i < group.inputs.size() && params.count(group.inputs[i].get());
        EXPECT_EQ(t.weights[i], is_param) << t.name << " param " << i;
      }
    }
    weights += std::count(t.weights.begin(), t.weights.end(), true);
    std::vector<TuneTask> tune = tune_tasks({t});
    EXPECT_EQ(tune.at(0).weights, t.weights);
  }
  EXPECT_GT(weights, 0u); // GPT-2's linears read their weights
  for (const GraphTask& t : graph_tasks(g.groups, "gpt2"))
    EXPECT_EQ(std::count(t.weights.begin(), t.weights.end(), true), 0) << t.name;
}

TEST(MemoryPlan, IntermediatesShareBytesOnlyWhenTheirLifetimesAreDisjoint) {
  const auto& g = gpt2();
  MemoryPlan plan = plan_memory(g.groups, g.graph.outputs);
  EXPECT_NO_THROW(plan.verify());
  // Independently: when is each tensor written and last read, in run order.
  std::map<const te::TensorNode*, std::pair<size_t, size_t>> life;
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    for (const te::Tensor& t : g.groups[gi].outputs)
      life.try_emplace(t.get(), gi, gi);
    for (const te::Tensor& t : g.groups[gi].inputs)
      if (auto it = life.find(t.get()); it != life.end()) it->second.second = gi;
  }
  life.erase(g.graph.outputs.at(0).get()); // the caller's
  ASSERT_EQ(plan.buffers.size(), life.size());
  for (const PlannedBuffer& b : plan.buffers) {
    auto [first, last] = life.at(b.tensor);
    EXPECT_EQ(b.first, first);
    EXPECT_EQ(b.last, last);
    EXPECT_GE(b.bytes, static_cast<size_t>(b.tensor->buffer->shape.size() ? 4 : 0));
    EXPECT_LE(b.offset + b.bytes, plan.arena_bytes);
  }
  for (const PlannedBuffer& a : plan.buffers)
    for (const PlannedBuffer& b : plan.buffers) {
      if (&a == &b) continue;
      bool live_together = a.first <= b.last && b.first <= a.last;
      bool share = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live_together && share)
          << a.tensor->buffer->name << " and " << b.tensor->buffer->name;
    }
  // Twelve layers run one after the other: most of the memory is reused.
  EXPECT_LT(plan.arena_bytes * 4, plan.unplanned_bytes);
}

TEST(MemoryPlan, VerifyRefusesAPlanWhereLiveBuffersOverlap) {
  const auto& g = gpt2();
  MemoryPlan plan = plan_memory(g.groups, g.graph.outputs);
  for (PlannedBuffer& a : plan.buffers)
    for (PlannedBuffer& b : plan.buffers)
      if (&a != &b && a.first <= b.last && b.first <= a.last) {
        b.offset = a.offset;
        EXPECT_THROW(plan.verify(), std::logic_error);
        return;
      }
  FAIL() << "no two buffers live at once";
}

} // namespace
} // namespace mt
