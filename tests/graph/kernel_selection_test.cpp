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

// A library given -fpmath=bf16 ("--fpmath bf16") packs the weights in bf16 where the CPU has
// bf16 instructions: the logits within bf16's error of the f32 run's, and not equal to them.
// (The tiny model's packed bytes are not halved: oneDNN's bf16 blocks pad its 32-wide
// weights.) Elsewhere the library says so and stays f32: the same bytes, the same logits.
TEST(KernelSelection, Bf16FpmathRunsTheLibrarysMatmulsInBf16) {
  if (!has_onednn()) GTEST_SKIP() << "no onednn.cpu in this build";
  TinyGpt m;
  std::map<std::string, NDArray> params = init_params(m.graph.params, 1);
  const std::vector<int32_t> ids = {3, 14, 15, 9, 26};
  auto run = [&](const std::string& library, size_t* packed_bytes) {
    KernelSelectionOptions so;
    so.policy = KernelPolicy::Library;
    so.libraries = {library};
    std::vector<TaskKernel> kernels = select_kernels(KernelSelector(host(), so), m.tasks);
    ModelExecutor exec(m.graph, m.groups, group_kernels(m.tasks, kernels, m.groups.size()));
    exec.set_params(params);
    auto cache = std::make_shared<PackedParams>();
    EXPECT_GT(exec.pack_params(cache), 0u) << library;
    *packed_bytes = cache->bytes();
    return graph_test::run_on_ids(exec, ids);
  };
  size_t f32_bytes = 0, bf16_bytes = 0;
  graph_test::Matrix want = run("onednn.cpu", &f32_bytes);
  graph_test::Matrix got = run("onednn.cpu -fpmath=bf16", &bf16_bytes);
  const bool bf16 = open_library_targets(host(), {"onednn.cpu -fpmath=bf16"}, "llvm.cpu")
                        .front()
                        .target->describe_device()
                        .find("\"fpmath\": \"bf16\"") != std::string::npos;
  ASSERT_EQ(got.size(), want.size());
  double scale = 0, worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  if (bf16) {
    EXPECT_NE(bf16_bytes, f32_bytes) << "bf16 layouts";
    EXPECT_LE(worst, 2e-2 * std::max(1.0, scale)) << "beyond bf16's error";
    EXPECT_GT(worst, 0.0) << "bit-identical to f32: the bf16 path did not run";
  } else {
    EXPECT_EQ(bf16_bytes, f32_bytes);
    EXPECT_LE(worst, 1e-5 * std::max(1.0, scale));
  }
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
