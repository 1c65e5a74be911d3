// Kernel selection's `best` policy for the tasks a database has no record of (a prompt bucket
// or cache capacity that was not tuned): the library's kernel where it implements the task,
// the unscheduled function only where it does not -- and the model computes what it computes
// with unscheduled kernels everywhere. And the library's kernels with the weights packed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/database/database.h"
#include "core/graph/fusion.h"
#include "core/graph/graph_tasks.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/layer_registry.h"
#include "core/graph/model_executor.h"
#include "core/graph/packed_params.h"
#include "core/model/config_json.h"
#include "graph_test_util.h"

namespace mt {
namespace {

using graph_test::host;

bool has_onednn() {
  return !open_library_targets(host(), {"onednn.cpu"}, "llvm.cpu").empty();
}

// tests/graph/data/tiny-gpt.json on five tokens: its graph, kernels and tasks.
struct TinyGpt {
  ModelGraph graph = instantiate_model(
      host(),
      load_config_file(layer_config_registry(host()),
                       std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/tiny-gpt.json"),
      {te::placeholder({1, 5}, DType::i32(), "ids")});
  std::vector<FusedGroup> groups = fuse(graph.outputs);
  std::vector<GraphTask> tasks = graph_tasks(groups, "std.Decoder");
};

TEST(KernelSelection, BestRunsTheLibraryWhereTheDatabaseHasNoRecord) {
  if (!has_onednn()) GTEST_SKIP() << "no onednn.cpu in this build";
  TinyGpt m;
  const ModelGraph& graph = m.graph;
  const std::vector<FusedGroup>& groups = m.groups;
  const std::vector<GraphTask>& tasks = m.tasks;

  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("mt_kernel_selection_" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(path);
  Database::open(path.string()); // an empty database: tuned for other shapes, or not at all
  DatabaseOptions ro;
  ro.read_only = true;
  std::unique_ptr<Database> db = Database::open(path.string(), ro);
  KernelSelectionOptions so;
  so.policy = KernelPolicy::Best;
  so.db = db.get();
  std::vector<TaskKernel> best = select_kernels(KernelSelector(host(), so), tasks);
  std::vector<TaskKernel> untuned = select_kernels(KernelSelector(host(), {}), tasks);
  std::filesystem::remove(path);

  size_t library = 0;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const TaskKernel& k = best[t];
    EXPECT_FALSE(k.tuned) << tasks[t].name;
    EXPECT_NE(k.note.find("no record in the database"), std::string::npos) << k.note;
    if (k.library) {
      ++library;
      EXPECT_EQ(k.component, "onednn.cpu") << tasks[t].name;
    } else {
      EXPECT_NE(k.note.find("does not implement it"), std::string::npos)
          << tasks[t].name << ": " << k.note;
    }
  }
  EXPECT_GT(library, 0u) << "oneDNN implements the model's matrix products";
  EXPECT_LT(library, tasks.size()) << "and not its embedding gather";

  // The same outputs as the unscheduled kernels' (those are checked against double-precision
  // references layer by layer in the other graph tests).
  std::map<std::string, NDArray> params = init_params(graph.params, 1);
  auto run = [&](const std::vector<TaskKernel>& kernels) {
    ModelExecutor exec(graph, groups, group_kernels(tasks, kernels, groups.size()));
    exec.set_params(params);
    return graph_test::run_on_ids(exec, {3, 14, 15, 9, 26});
  };
  graph_test::Matrix want = run(untuned), got = run(best);
  ASSERT_EQ(got.size(), want.size());
  double scale = 0;
  for (double v : want)
    scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0, scale)) << "logit " << i;
}

// Library kernels take the model's weights packed once (model_executor.h's pack_params): the
// tiny GPT's matrix products under oneDNN, one packed copy per weight shared by two executors
// (as a generator's graphs), and the logits those of the unpacked run.
TEST(KernelSelection, LibraryKernelsTakeTheModelsWeightsPacked) {
  if (!has_onednn()) GTEST_SKIP() << "no onednn.cpu in this build";
  TinyGpt m;
  const ModelGraph& graph = m.graph;
  const std::vector<FusedGroup>& groups = m.groups;
  const std::vector<GraphTask>& tasks = m.tasks;
  KernelSelectionOptions so;
  so.policy = KernelPolicy::Library;
  std::vector<TaskKernel> kernels = select_kernels(KernelSelector(host(), so), tasks);
  std::map<std::string, NDArray> params = init_params(graph.params, 1);

  ModelExecutor plain(graph, groups, group_kernels(tasks, kernels, groups.size()));
  plain.set_params(params);
  graph_test::Matrix want = graph_test::run_on_ids(plain, {3, 14, 15, 9, 26});

  auto cache = std::make_shared<PackedParams>();
  ModelExecutor a(graph, groups, group_kernels(tasks, kernels, groups.size()));
  ModelExecutor b(graph, groups, group_kernels(tasks, kernels, groups.size()));
  a.set_params(params);
  b.set_params(params);
  const size_t packed = a.pack_params(cache);
  EXPECT_GT(packed, 0u) << "oneDNN takes the projections' weights packed";
  const size_t bytes = cache->bytes(), copies = cache->copies();
  EXPECT_EQ(b.pack_params(cache), packed);
  EXPECT_EQ(cache->bytes(), bytes) << "the second executor packs nothing anew";
  EXPECT_EQ(cache->copies(), copies);
  for (ModelExecutor* e : {&a, &b}) {
    graph_test::Matrix got = graph_test::run_on_ids(*e, {3, 14, 15, 9, 26});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0, std::abs(want[i]))) << "logit " << i;
  }
  // New values drop the packed copies: the executor runs what it is given.
  std::map<std::string, NDArray> other = init_params(graph.params, 2);
  a.set_params(other);
  plain.set_params(other);
  graph_test::Matrix want2 = graph_test::run_on_ids(plain, {3, 14, 15, 9, 26}),
                     got2 = graph_test::run_on_ids(a, {3, 14, 15, 9, 26});
  for (size_t i = 0; i < got2.size(); ++i)
    ASSERT_NEAR(got2[i], want2[i], 1e-6 * std::max(1.0, std::abs(want2[i]))) << "logit " << i;
}

// The tiny GPT's logits with `so`'s kernels, their weights packed (*packed_bytes: how many
// bytes the packed copies take).
graph_test::Matrix packed_logits(const TinyGpt& m, const std::map<std::string, NDArray>& params,
                                 const KernelSelectionOptions& so, size_t* packed_bytes) {
  std::vector<TaskKernel> kernels = select_kernels(KernelSelector(host(), so), m.tasks);
  ModelExecutor exec(m.graph, m.groups, group_kernels(m.tasks, kernels, m.groups.size()));
  exec.set_params(params);
  auto cache = std::make_shared<PackedParams>();
  exec.pack_params(cache);
  *packed_bytes = cache->bytes();
  return graph_test::run_on_ids(exec, {3, 14, 15, 9, 26});
}

// The largest difference between two runs' logits, and the largest logit of the first.
std::pair<double, double> worst_and_scale(const graph_test::Matrix& want,
                                          const graph_test::Matrix& got) {
  EXPECT_EQ(got.size(), want.size());
  double scale = 0, worst = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  return {worst, scale};
}

// A library given -fpmath=bf16 ("--fpmath bf16") packs the weights in bf16 where the CPU has
// bf16 instructions: the logits within bf16's error of the f32 run's, and not equal to them.
// (The tiny model's packed bytes are not halved: oneDNN's bf16 blocks pad its 32-wide
// weights.) Elsewhere the library says so and stays f32: the same bytes, the same logits.
TEST(KernelSelection, Bf16FpmathRunsTheLibrarysMatmulsInBf16) {
  if (!has_onednn()) GTEST_SKIP() << "no onednn.cpu in this build";
  TinyGpt m;
  std::map<std::string, NDArray> params = init_params(m.graph.params, 1);
  KernelSelectionOptions so;
  so.policy = KernelPolicy::Library;
  size_t f32_bytes = 0, bf16_bytes = 0;
  graph_test::Matrix want = packed_logits(m, params, so, &f32_bytes);
  so.libraries = {"onednn.cpu -fpmath=bf16"};
  graph_test::Matrix got = packed_logits(m, params, so, &bf16_bytes);
  EXPECT_GT(f32_bytes, 0u) << "oneDNN takes the projections' weights packed";
  const bool bf16 = open_library_targets(host(), so.libraries, "llvm.cpu")
                        .front()
                        .target->describe_device()
                        .find("\"fpmath\": \"bf16\"") != std::string::npos;
  auto [worst, scale] = worst_and_scale(want, got);
  if (bf16) {
    EXPECT_NE(bf16_bytes, f32_bytes) << "bf16 layouts";
    EXPECT_LE(worst, 2e-2 * std::max(1.0, scale)) << "beyond bf16's error";
    EXPECT_GT(worst, 0.0) << "bit-identical to f32: the bf16 path did not run";
  } else {
    EXPECT_EQ(bf16_bytes, f32_bytes);
    EXPECT_LE(worst, 1e-5 * std::max(1.0, scale));
  }
}

// The tuning target given -fpmath=bf16: its kernels (here the unscheduled ones) take the
// model's weights packed in bf16 on any CPU (they widen bf16 to f32 themselves): half the
// bytes of the f32 weights they read, the logits within bf16's error of the f32 run's.
TEST(KernelSelection, Bf16FpmathTheTargetsKernelsTakeTheirWeightsInBf16) {
  TinyGpt m;
  std::map<std::string, NDArray> params = init_params(m.graph.params, 1);
  KernelSelectionOptions so; // untuned: the llvm target's kernels only
  size_t f32_bytes = 0, bf16_bytes = 0;
  graph_test::Matrix want = packed_logits(m, params, so, &f32_bytes);
  so.target = "llvm -fpmath=bf16";
  graph_test::Matrix got = packed_logits(m, params, so, &bf16_bytes);
  EXPECT_EQ(f32_bytes, 0u) << "without -fpmath=bf16 the llvm kernels take nothing packed";
  size_t weight_bytes = 0; // the projections' and the head's weights: every 2-d parameter
  for (const ModelParam& p : m.graph.params)
    if (params.at(p.path).shape().size() == 2 && p.path.find("emb") == std::string::npos)
      weight_bytes += params.at(p.path).nbytes();
  EXPECT_GT(bf16_bytes, 0u);
  EXPECT_LE(bf16_bytes, weight_bytes / 2) << "bf16 copies of the matmuls' weights";
  auto [worst, scale] = worst_and_scale(want, got);
  EXPECT_LE(worst, 2e-2 * std::max(1.0, scale)) << "beyond bf16's error";
  EXPECT_GT(worst, 0.0) << "bit-identical to f32: the bf16 path did not run";
}

// set_params reads the caller's arrays in place: a change to them shows in the next run. Given
// a temporary map (here a copy), the executor keeps the arrays itself.
TEST(ModelExecutorParams, ReadInPlaceOrKeptWhenTemporary) {
  TinyGpt m;
  std::vector<TaskKernel> kernels = select_kernels(KernelSelector(host(), {}), m.tasks);
  std::map<std::string, NDArray> params = init_params(m.graph.params, 1);
  ModelExecutor exec(m.graph, m.groups, group_kernels(m.tasks, kernels, m.groups.size()));
  exec.set_params(params);
  const std::vector<int32_t> ids = {3, 14, 15, 9, 26};
  graph_test::Matrix before = graph_test::run_on_ids(exec, ids);
  for (auto& [path, a] : params)
    for (int64_t i = 0; i < a.num_elements(); ++i)
      a.data_as<float>()[i] *= 1.5f;
  graph_test::Matrix after = graph_test::run_on_ids(exec, ids);
  ModelExecutor kept(m.graph, m.groups, group_kernels(m.tasks, kernels, m.groups.size()));
  kept.set_params(std::map<std::string, NDArray>(params)); // a deep copy, owned by `kept`
  graph_test::Matrix fresh = graph_test::run_on_ids(kept, ids);
  EXPECT_NE(after, before);
  EXPECT_EQ(after, fresh);
}

} // namespace
} // namespace mt
