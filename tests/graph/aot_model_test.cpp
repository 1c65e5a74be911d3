// The ahead-of-time artifact end to end: `metatune model compile` writes a tiny decoder's
// folder; the runtime (runtime/, no LLVM) loads it and gives the outputs the in-process
// ModelExecutor gives for the same weights and ids; the example application embeds it; the
// runtime links no LLVM; broken folders and wrong inputs fail naming the file and the thing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "artifact_test_util.h"
#include "cli_run.h"
#include "core/graph/layer_registry.h"
#include "core/model/config_json.h"
#include "core/model/safetensors_file.h"
#include "core/plugin/plugin_error.h"
#include "graph_test_util.h"
#include "metatune/runtime/compiled_model.h"
#include "tuned_model.h"

namespace mt {
namespace {

namespace fs = std::filesystem;
using graph_test::host;
using graph_test::metatune;

const std::string kConfig = std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/tiny-gpt.json";
const std::vector<int32_t> kIds = {3, 14, 15, 9, 26};

std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  pclose(p);
  return out;
}

class AotModel : public graph_test::ArtifactTest<AotModel> {
public:
  static constexpr const char* kFolder = "mt_aot";
  static std::string compile_args() { return "model compile --config " + kConfig + " --seq 5"; }
};

// The model as `model compile` built it, run in process with the weights the artifact holds.
ModelGraph tiny_gpt() {
  Config c = load_config_file(layer_config_registry(host()), kConfig);
  return instantiate_model(host(), c, {te::placeholder({1, 5}, DType::i32(), "ids")});
}

// The largest difference between the runtime's first output and `want`.
double max_difference(const rt::Tensor& got, const NDArray& want) {
  EXPECT_EQ(got.info().num_elements(), want.num_elements());
  if (got.info().num_elements() != want.num_elements()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i)
    worst = std::max(worst,
                     std::abs(static_cast<double>(got.as<float>()[i]) - want.data_as<float>()[i]));
  return worst;
}

struct Reference {
  ModelGraph graph;
  std::vector<TaskKernel> kernels;
  std::unique_ptr<ModelExecutor> exec;
  std::map<std::string, NDArray> weights;

  // Untuned kernels, or with `db` those the policy chooses.
  explicit Reference(const fs::path& artifact, const Database* db = nullptr,
                     KernelPolicy policy = KernelPolicy::Untuned)
      : graph(tiny_gpt()) {
    std::vector<FusedGroup> groups = fuse(graph.outputs);
    if (!db) {
      exec = std::make_unique<ModelExecutor>(graph, groups, graph_test::llvm());
    } else {
      KernelSelectionOptions so;
      so.policy = policy;
      so.db = db;
      KernelSelector selector(host(), so);
      std::vector<GraphTask> tasks = graph_tasks(groups, "std.Decoder");
      kernels = select_kernels(selector, tasks);
      exec = std::make_unique<ModelExecutor>(graph, groups,
                                             group_kernels(tasks, kernels, groups.size()));
    }
    weights = graph_test::artifact_weights(artifact);
    exec->set_params(weights);
  }

  NDArray logits(const std::vector<int32_t>& ids) {
    NDArray in(DType::i32(), {1, static_cast<int64_t>(ids.size())});
    std::copy(ids.begin(), ids.end(), in.data_as<int32_t>());
    return exec->run({in}).at(0);
  }
};

TEST_F(AotModel, CompiledDecoderMatchesTheExecutor) {
  for (const char* f : {"kernels.so", "model.json", "weights.safetensors"})
    EXPECT_TRUE(fs::exists(dir() / f)) << f;
  Reference ref(dir());
  // The weights are the model's: `model compile` without --weights initialises from seed 1.
  std::map<std::string, NDArray> seeded = init_params(ref.graph.params, 1);
  ASSERT_EQ(ref.weights.size(), seeded.size());
  for (const auto& [path, a] : seeded)
    EXPECT_EQ(std::memcmp(a.data(), ref.weights.at(path).data(), a.nbytes()), 0) << path;

  rt::CompiledModel m = rt::CompiledModel::load(dir().string());
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].to_string(), "i32[1, 5]");
  ASSERT_EQ(m.outputs().size(), 1u);
  EXPECT_EQ(m.outputs()[0].to_string(), "f32[1, 5, 61]");
  NDArray want = ref.logits(kIds);
  for (int pass = 0; pass < 2; ++pass) { // the arena is reused between runs
    std::vector<rt::Tensor> out = m.run(kIds);
    ASSERT_EQ(out.size(), 1u);
    double worst = max_difference(out[0], want);
    EXPECT_LE(worst, 1e-6) << "pass " << pass;
    if (pass == 0) std::printf("runtime vs executor: max |difference| %.3g\n", worst);
  }

  // The example application prints the same next token.
  const float* last = want.data_as<float>() + 4 * 61;
  int64_t best = std::max_element(last, last + 61) - last;
  std::string cmd = std::string(METATUNE_EMBED_RUNTIME) + " " + dir().string();
  for (int32_t id : kIds)
    cmd += " " + std::to_string(id);
  std::string out = run_command(cmd);
  EXPECT_NE(out.find("next token: " + std::to_string(best) + " "), std::string::npos) << out;
}

// Tuned kernels (parallel loops on the runtime's thread pool) from a database; where the
// policy picks oneDNN, compile takes the tuned llvm kernel instead and says so.
TEST_F(AotModel, TunedDecoderMatchesTheExecutor) {
  graph_test::TunedModel tuned(tiny_gpt(), "aot", 2);
  DatabaseOptions ro;
  ro.read_only = true;
  std::unique_ptr<Database> db = Database::open(tuned.db_path.string(), ro);
  for (const char* policy : {"tuned", "library"}) {
    fs::path d = dir().string() + "_" + policy;
    graph_test::CliResult r =
        metatune("model compile --config " + kConfig + " --seq 5 --db " + tuned.db_path.string() +
                 " --implementations " + policy + " --out " + d.string());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output.find(" 0 tuned,"), std::string::npos) << r.output;
    if (std::string(policy) == "library") {
      EXPECT_NE(r.output.find("only llvm.cpu exports kernel libraries: llvm.cpu tuned"),
                std::string::npos)
          << r.output;
    }
    // Both artifacts hold what the tuned policy runs (the library tasks replaced by theirs).
    Reference ref(d, db.get(), KernelPolicy::Tuned);
    rt::CompiledModel m = rt::CompiledModel::load(d.string(), {.num_threads = 4});
    double worst = max_difference(m.run(kIds).at(0), ref.logits(kIds));
    EXPECT_LE(worst, 1e-6) << policy;
    std::printf("%s: runtime vs executor: max |difference| %.3g\n", policy, worst);
    fs::remove_all(d);
  }
  db.reset(); // the helper removes the database, not SQLite's files beside it
  for (const char* suffix : {"-wal", "-shm"})
    fs::remove(tuned.db_path.string() + suffix);
}

// --fpmath bf16 builds the kernels as `model run --fpmath bf16` does (AMX tile products where a
// tuned record has them: checked on the Llama bench's model, docs/models.md); untuned kernels
// read f32 weights as before, so the artifact runs and predicts as the f32 one. Another value
// is refused with the allowed ones.
TEST_F(AotModel, Bf16KernelsCompileAndRun) {
  fs::path d = dir().string() + "_bf16";
  graph_test::CliResult r =
      metatune("model compile --config " + kConfig + " --seq 5 --fpmath bf16 --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.output;
  rt::CompiledModel bf16 = rt::CompiledModel::load(d.string(), {});
  rt::CompiledModel f32 = rt::CompiledModel::load(dir().string(), {});
  const rt::Tensor a = bf16.run(kIds).at(0), b = f32.run(kIds).at(0);
  ASSERT_EQ(a.info().num_elements(), b.info().num_elements());
  // As `model run --fpmath bf16` runs it in process: the weights of the products handed over
  // in bf16, packed once (the artifact's library packs them at load: ABI 1.10).
  std::unique_ptr<PluginTarget> target =
      host().create_target("llvm.cpu", R"({"target": "llvm -fpmath=bf16"})");
  Reference weights(dir());
  ModelGraph graph = tiny_gpt();
  ModelExecutor exec(graph, fuse(graph.outputs), *target);
  exec.set_params(weights.weights);
  EXPECT_GT(exec.pack_params(), 0u);
  NDArray in(DType::i32(), {1, 5});
  std::copy(kIds.begin(), kIds.end(), in.data_as<int32_t>());
  EXPECT_LE(max_difference(a, exec.run({in}).at(0)), 1e-6);
  // ... which moves the logits by bf16's rounding of the weights, no more.
  double moved = 0, scale = 0;
  for (int64_t i = 0; i < a.info().num_elements(); ++i) {
    moved = std::max(moved, std::abs(static_cast<double>(a.as<float>()[i]) - b.as<float>()[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b.as<float>()[i])));
  }
  EXPECT_GT(moved, 0);
  EXPECT_LT(moved, 2e-2 * scale);
  fs::remove_all(d);
  graph_test::CliResult bad =
      metatune("model compile --config " + kConfig + " --seq 5 --fpmath f16 --out " + d.string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("--fpmath"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(d));
}

// A target that cannot export (oneDNN runs its own primitives) says so with the ABI's status.
TEST_F(AotModel, LibraryTargetDoesNotExport) {
  std::vector<LibraryTarget> libs = open_library_targets(host(), {"onednn.cpu"}, "llvm.cpu");
  if (libs.empty()) GTEST_SKIP() << "no onednn.cpu in this build";
  ModelGraph g = tiny_gpt();
  std::vector<GraphTask> tasks = graph_tasks(fuse(g.outputs), "std.Decoder");
  try {
    libs[0].target->export_library({tasks[0].workload}, {"mt_0"}, (dir() / "x.so").string());
    FAIL() << "onednn.cpu exported a library";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.status(), MT_ERROR_UNSUPPORTED) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not export kernel libraries"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir() / "x.so"));
}

TEST_F(AotModel, RuntimeLinksNoLlvm) {
  for (const std::string& binary :
       {std::string(METATUNE_RUNTIME_LIBRARY), std::string(METATUNE_EMBED_RUNTIME)}) {
    std::string deps = run_command("ldd " + binary);
    ASSERT_NE(deps.find("libc.so"), std::string::npos) << binary << ":\n" << deps;
    for (const char* lib : {"LLVM", "libmetatune.so", "metatune_plugin_host", "metatune_model"})
      EXPECT_EQ(deps.find(lib), std::string::npos) << binary << " needs " << lib << ":\n" << deps;
  }
}

TEST_F(AotModel, WrongInputShapeIsNamed) {
  rt::CompiledModel m = rt::CompiledModel::load(dir().string());
  try {
    m.run(std::vector<int32_t>{1, 2, 3});
    FAIL() << "three ids for [1, 5]";
  } catch (const rt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 ('ids'): expected i32[1, 5]"), std::string::npos)
        << e.what();
  }
  rt::Tensor wrong(rt::TensorInfo{"ids", "i32", {5, 1}});
  try {
    m.run(std::vector<rt::Tensor>{wrong});
    FAIL() << "shape [5, 1]";
  } catch (const rt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected i32[1, 5], got i32[5, 1]"), std::string::npos)
        << e.what();
  }
}

void expect_load_error(const fs::path& d, const std::vector<std::string>& parts) {
  try {
    rt::CompiledModel::load(d.string());
    ADD_FAILURE() << "loaded " << d;
  } catch (const rt::Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST_F(AotModel, CorruptedModelJsonIsNamed) {
  fs::path d = copy_of("json");
  std::ofstream(d / "model.json") << "{\"format\": \"metatune-model\", \"groups\": [";
  expect_load_error(d, {(d / "model.json").string(), "not valid JSON"});
  std::ofstream(d / "model.json") << "{\"format\": \"metatune-model\", \"version\": 1}";
  expect_load_error(d, {(d / "model.json").string(), "inputs"});
  fs::remove_all(d);
}

TEST_F(AotModel, MissingKernelLibraryIsNamed) {
  fs::path d = copy_of("noso");
  fs::remove(d / "kernels.so");
  expect_load_error(d, {(d / "kernels.so").string(), "missing"});
  fs::remove_all(d);
}

TEST_F(AotModel, MissingSymbolIsNamed) {
  fs::path d = copy_of("symbol");
  nlohmann::json m = nlohmann::json::parse(std::ifstream(d / "model.json"));
  std::string symbol = m["groups"][0]["kernel"];
  // Listed by the descriptor, not exported by the library.
  m["groups"][0]["kernel"] = symbol + "_gone";
  m["library"]["kernels"][0]["symbol"] = symbol + "_gone";
  std::ofstream(d / "model.json") << m.dump();
  expect_load_error(d, {(d / "kernels.so").string(), "no symbol '" + symbol + "_gone'",
                        m["groups"][0]["name"].get<std::string>()});
  fs::remove_all(d);
}

} // namespace
} // namespace mt
