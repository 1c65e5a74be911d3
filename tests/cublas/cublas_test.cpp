// The cublas library target (plugins/cublas). Without a GPU: which workloads it offers and
// which it refuses (cublas.Supported and build(), status MT_ERROR_UNSUPPORTED with the reason),
// the plan it makes of each (operand roles, transposes, batch strides), that structure and not
// names decides, and that without a device it says "no CUDA device (...)" -- in describe(),
// in build(), in `metatune plugins` and in bench/gpu/run.sh. With a GPU (skipped here): cuBLAS's
// results against the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../abi/abi_test_util.h"
#include "core/ir/expr.h"
#include "core/ir/parser.h"
#include "core/ir/printer.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/plugin/plugin_error.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/schedule.h"
#include "core/workload/library.h"
#include "core/workload/te.h"
#include "core_to_program.h"
#include "recognize_gemm.h"

namespace mt {
namespace {

using abi_test::capture;
using abi_test::make_args;
using abi_test::pointers;

PluginHost& host() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    const PluginRecord& r = p->load(MT_CUBLAS_PLUGIN);
    if (!r.loaded()) throw std::runtime_error("cublas plugin refused: " + r.message);
    return p;
  }();
  return *h;
}

PluginTarget& target() {
  static std::unique_ptr<PluginTarget> t = host().create_target("cublas", R"({"log": false})");
  return *t;
}

nlohmann::json device() {
  return nlohmann::json::parse(target().describe_device());
}

bool has_device() {
  return !device().contains("unavailable");
}

bool offered(const Function& f, std::string* why = nullptr) {
  static std::unique_ptr<PluginPostproc> pp = host().create_postproc("cublas.Supported");
  return pp->apply(std::make_shared<Schedule>(f), why);
}

// The plan recognize_gemm makes of `f` (the same code the plugin runs, called directly).
cublas::GemmPlan plan(const Function& f) {
  return cublas::recognize_gemm(llvm_cpu::test::core_to_program(lower(f)));
}

// ---- offered workloads and their plans -----------------------------------------------------

TEST(CublasOffer, MatmulF32) {
  Function f = make_workload("matmul(M=12,N=10,K=7)");
  EXPECT_TRUE(offered(f));
  cublas::GemmPlan g = plan(f);
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.m, 12);
  EXPECT_EQ(g.n, 10);
  EXPECT_EQ(g.k, 7);
  EXPECT_EQ(g.a.param, 0u);
  EXPECT_EQ(g.b.param, 1u);
  EXPECT_EQ(g.c_param, 2u);
  EXPECT_FALSE(g.a.transposed);
  EXPECT_FALSE(g.b.transposed);
  EXPECT_EQ(g.detail(), "[12,7] x [7,10] -> [12,10] f32 x f32 -> f32");
}

TEST(CublasOffer, MatmulF16) {
  Function f = make_workload("matmul(M=16,N=8,K=32,dtype=f16)");
  EXPECT_TRUE(offered(f));
  EXPECT_EQ(plan(f).detail(), "[16,32] x [32,8] -> [16,8] f16 x f16 -> f16");
}

// f16 operands, each cast to f32, summed into an f32 result: the tensor-core case.
Function mixed_matmul(int64_t M, int64_t N, int64_t K) {
  using namespace te;
  Tensor A = placeholder({M, K}, DType::f16(), "A"), B = placeholder({K, N}, DType::f16(), "B");
  Var k = reduce_axis(K, "k");
  Tensor C = compute(
      {M, N},
      [&](const std::vector<Expr>& v) {
        return sum(make_cast(DType::f32(), A(v[0], k)) * make_cast(DType::f32(), B(k, v[1])), {k});
      },
      "matmul", {"i", "j"});
  return build("mixed", {A, B}, {C});
}

TEST(CublasOffer, MatmulF16OperandsF32Result) {
  Function f = mixed_matmul(8, 24, 16);
  EXPECT_TRUE(offered(f));
  EXPECT_EQ(plan(f).detail(), "[8,16] x [16,24] -> [8,24] f16 x f16 -> f32");
}

TEST(CublasOffer, BatchMatmul) {
  Function f = make_workload("batch_matmul(B=3,M=16,N=12,K=8)");
  EXPECT_TRUE(offered(f));
  cublas::GemmPlan g = plan(f);
  EXPECT_EQ(g.batch, 3);
  EXPECT_EQ(g.a.batch_stride, 16 * 8);
  EXPECT_EQ(g.b.batch_stride, 8 * 12);
  EXPECT_EQ(g.detail(), "3 x [16,8] x [8,12] -> [16,12] f32 x f32 -> f32");
}

// dense without bias or activation: data [M, K] x weight [N, K], the weight read transposed.
TEST(CublasOffer, DenseReadsItsWeightTransposed) {
  Function f = make_workload("dense(M=4,N=8,K=8,bias=0,act=none)");
  EXPECT_TRUE(offered(f));
  cublas::GemmPlan g = plan(f);
  EXPECT_FALSE(g.a.transposed);
  EXPECT_TRUE(g.b.transposed);
  EXPECT_EQ(g.detail(), "[4,8] x [8,8]^T -> [4,8] f32 x f32 -> f32");
}

// A batch of products with one weight matrix for every batch entry (stride 0), and the first
// operand stored [K, M]; the factors written in the other order.
TEST(CublasOffer, SharedWeightAndTransposedFirstOperand) {
  using namespace te;
  Tensor X = placeholder({2, 5, 3}, DType::f32(), "X"); // [B, K, M]
  Tensor W = placeholder({5, 4}, DType::f32(), "W");    // [K, N]
  Var k = reduce_axis(5, "k");
  Tensor C =
      compute({2, 3, 4},
              [&](const std::vector<Expr>& v) { return sum(W(k, v[2]) * X(v[0], k, v[1]), {k}); },
              "c", {"b", "i", "j"});
  Function f = build("shared", {X, W}, {C});
  EXPECT_TRUE(offered(f));
  cublas::GemmPlan g = plan(f);
  EXPECT_EQ(g.a.param, 0u);
  EXPECT_TRUE(g.a.transposed);
  EXPECT_EQ(g.a.batch_stride, 15);
  EXPECT_EQ(g.b.param, 1u);
  EXPECT_EQ(g.b.batch_stride, 0);
  EXPECT_EQ(g.detail(), "2 x [5,3]^T x [5,4] (shared) -> [3,4] f32 x f32 -> f32");
}

// Identifiers replaced throughout: structure, not names, decides.
TEST(CublasOffer, RenamedMatmulIsStillOffered) {
  std::string text = print(make_workload("matmul(M=12,N=10,K=7)"));
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"matmul", "zq"}, {"A", "lhs"}, {"B", "rhs"}, {"i", "p"}, {"j", "q"}, {"k", "r"}})
    text = std::regex_replace(text, std::regex("\\b" + from + "\\b"), to);
  Function f = parse_function(text);
  std::string why;
  EXPECT_TRUE(offered(f, &why)) << why << "\n" << text;
}

// What cuBLAS computes for a GemmCall (column-major, op(A) and op(B), strided batch), on the
// CPU: running the call the plugin would make on f32 workloads checks the row-major to
// column-major mapping (operand swap, leading dimensions, batch strides) without a GPU.
void emulate(const cublas::GemmCall& g, const float* a, const float* b, float* c) {
  for (int batch = 0; batch < g.batch; ++batch)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.m; ++i) {
        double acc = 0;
        for (int l = 0; l < g.k; ++l) {
          float x = g.trans_a == cublas::Op::N ? a[batch * g.stride_a + i + l * g.lda]
                                               : a[batch * g.stride_a + l + i * g.lda];
          float y = g.trans_b == cublas::Op::N ? b[batch * g.stride_b + l + j * g.ldb]
                                               : b[batch * g.stride_b + j + l * g.ldb];
          acc += static_cast<double>(x) * y;
        }
        c[batch * g.stride_c + i + j * g.ldc] = static_cast<float>(acc);
      }
}

class CublasCallMapping : public ::testing::TestWithParam<int> {};

Function mapping_workload(int which) {
  using namespace te;
  switch (which) {
  case 0:
    return make_workload("matmul(M=7,N=5,K=3)");
  case 1:
    return make_workload("batch_matmul(B=3,M=4,N=6,K=5)");
  case 2:
    return make_workload("dense(M=5,N=6,K=4,bias=0,act=none)");
  default: {
    // [B, K, M] x [K, N] shared, factors in the other order (the plan's hardest case).
    Tensor X = placeholder({2, 5, 3}, DType::f32(), "X"),
           W = placeholder({5, 4}, DType::f32(), "W");
    Var k = reduce_axis(5, "k");
    Tensor C =
        compute({2, 3, 4},
                [&](const std::vector<Expr>& v) { return sum(W(k, v[2]) * X(v[0], k, v[1]), {k}); },
                "c", {"b", "i", "j"});
    return build("shared", {X, W}, {C});
  }
  }
}

TEST_P(CublasCallMapping, ComputesWhatTheInterpreterComputes) {
  Function f = mapping_workload(GetParam());
  cublas::GemmPlan p = plan(f);
  cublas::GemmCall g = cublas::column_major_call(p);
  std::vector<NDArray> ref = make_args(f, 3), got = make_args(f, 3);
  interpret(f, pointers(ref));
  // cuBLAS's first operand is the plan's B, its second the plan's A.
  emulate(g, got[p.b.param].data_as<float>(), got[p.a.param].data_as<float>(),
          got[p.c_param].data_as<float>());
  std::string why;
  EXPECT_TRUE(allclose(got[p.c_param], ref[p.c_param], 1e-5, 1e-5, &why))
      << p.detail() << ": " << why;
}

INSTANTIATE_TEST_SUITE_P(Workloads, CublasCallMapping, ::testing::Range(0, 4));

// ---- refused workloads ----------------------------------------------------------------------

void expect_not_offered(const Function& f, const std::string& reason_part) {
  std::string why;
  EXPECT_FALSE(offered(f, &why)) << f.name << " was offered";
  EXPECT_NE(why.find(reason_part), std::string::npos) << why;
  std::printf("  not offered: %s\n", why.c_str());
  try {
    target().build(f);
    ADD_FAILURE() << f.name << " was built";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.status(), MT_ERROR_UNSUPPORTED) << e.what();
    EXPECT_NE(std::string(e.what()).find("cublas: not offered: "), std::string::npos) << e.what();
  }
}

struct Refused {
  const char* spec;
  const char* reason;
};
// The test's name in ctest: the workload, not the struct's bytes.
void PrintTo(const Refused& r, std::ostream* os) {
  *os << '"' << r.spec << '"';
}

class CublasRefuses : public ::testing::TestWithParam<Refused> {};

TEST_P(CublasRefuses, WithTheReason) {
  expect_not_offered(make_workload(GetParam().spec), GetParam().reason);
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, CublasRefuses,
    ::testing::Values(Refused{"dense(M=8,N=32,K=16)", "more than one loop nest"}, // bias + gelu
                      Refused{"dense(M=5,N=12,K=20,bias=0,act=relu)", "more than one loop nest"},
                      Refused{"transpose_batch_matmul(B=2,S=12,H=2,D=8)", "rank 4"},
                      Refused{"matmul(M=8,N=8,K=8,dtype=bf16)", "bf16 x bf16 -> bf16"},
                      Refused{"matmul(M=8,N=8,K=8,dtype=f64)", "f64 x f64 -> f64"},
                      Refused{"softmax(M=4,N=16)", "more than one loop nest"},
                      Refused{"conv2d(N=1,C=3,H=6,W=6,F=4,KH=3,KW=3,stride=1,padding=1)",
                              "more than one loop nest"}));

TEST(CublasRefusesText, ScheduledMatmul) {
  Function f = make_workload("matmul(M=8,N=8,K=8)");
  Schedule sch(f);
  auto loops = sch.get_loops(sch.get_block("matmul"));
  sch.split(loops[0], {int64_t{2}, int64_t{4}});
  expect_not_offered(sch.func(), "not a loop variable");
}

TEST(CublasRefusesText, DifferenceInsteadOfProduct) {
  using namespace te;
  Tensor A = placeholder({4, 3}, DType::f32(), "A"), B = placeholder({3, 5}, DType::f32(), "B");
  Var k = reduce_axis(3, "k");
  Tensor C = compute(
      {4, 5}, [&](const std::vector<Expr>& v) { return sum(A(v[0], k) - B(k, v[1]), {k}); }, "c");
  expect_not_offered(build("minus", {A, B}, {C}), "other than a product");
}

TEST(CublasRefusesText, MaxReducedProduct) {
  using namespace te;
  Tensor A = placeholder({4, 3}, DType::f32(), "A"), B = placeholder({3, 5}, DType::f32(), "B");
  Var k = reduce_axis(3, "k");
  Tensor C = compute(
      {4, 5}, [&](const std::vector<Expr>& v) { return max_reduce(A(v[0], k) * B(k, v[1]), {k}); },
      "c");
  expect_not_offered(build("maxprod", {A, B}, {C}), "reduction");
}

// ---- the library, opened with dlopen (no device needed) -----------------------------------------

TEST(CublasLibrary, OpensAndReportsItsVersionWhereInstalled) {
  std::string why;
  cublas::Cublas* lib = cublas::Cublas::get(&why);
  if (!lib) GTEST_SKIP() << "cuBLAS is not installed here: " << why;
  EXPECT_EQ(lib->version().rfind("1", 0), 0u) << lib->version(); // 12.x, 13.x
  EXPECT_EQ(lib->version().find("-1"), std::string::npos) << lib->version();
  std::printf("  %s: cuBLAS %s\n", lib->library().c_str(), lib->version().c_str());
}

TEST(CublasLibrary, AMissingLibraryIsNamedWithTheReason) {
  // A process of its own (re-executed, not forked from this one, which may have opened the
  // library already: it is opened once per process).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("METATUNE_CUBLAS_LIBRARY", "libcublas_missing_for_test.so.13", 1);
        std::string why;
        bool ok = cublas::Cublas::get(&why) == nullptr &&
                  why.rfind("libcublas_missing_for_test.so.13 not found: ", 0) == 0;
        std::fprintf(stderr, "%s\n", why.c_str());
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "not found");
}

// ---- the device, or why there is none ---------------------------------------------------------

TEST(CublasDevice, DescribesItsDeviceOrWhyItHasNone) {
  nlohmann::json d = device();
  EXPECT_EQ(d.value("kind", ""), "cuda") << d.dump(); // a GPU library: competes with GPU targets
  if (d.contains("unavailable")) {
    std::string why = d["unavailable"];
    EXPECT_TRUE(why.rfind("no CUDA device (", 0) == 0 ||
                why.rfind("cuBLAS not available (", 0) == 0)
        << why;
    EXPECT_EQ(d.value("target", ""), "cublas");
  } else {
    EXPECT_FALSE(d.value("device", "").empty()) << d.dump();
    EXPECT_FALSE(d.value("cublas_version", "").empty()) << d.dump();
    EXPECT_EQ(d.value("target", "").rfind("cublas -arch=sm_", 0), 0u) << d.dump();
  }
}

TEST(CublasDevice, WithoutADeviceAnOfferedProgramIsRefusedWithTheReason) {
  if (has_device()) GTEST_SKIP() << "this machine has a CUDA device: " << device().dump();
  try {
    target().build(make_workload("matmul(M=8,N=8,K=8)"));
    ADD_FAILURE() << "built without a device";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.status(), MT_ERROR_UNSUPPORTED) << e.what();
    std::string msg = e.what();
    EXPECT_TRUE(msg.find("cublas: no CUDA device (") != std::string::npos ||
                msg.find("cublas: cuBLAS not available (") != std::string::npos)
        << msg;
  }
}

TEST(CublasDevice, PluginsListsTheTargetWithItsDeviceLine) {
  auto [status, out] =
      capture(std::string("'") + MT_TEST_CLI + "' plugins --no-default-path --path '" +
              MT_TEST_PLUGIN_DIR + "' 2>&1");
  ASSERT_EQ(status, 0) << out;
  size_t at = out.find("    target  cublas  -- ");
  ASSERT_NE(at, std::string::npos) << out;
  size_t line = out.find('\n', at);
  std::string device_line = out.substr(line + 1, out.find('\n', line + 1) - line - 1);
  EXPECT_EQ(device_line.rfind("      device: ", 0), 0u) << device_line;
  if (!has_device()) {
    EXPECT_NE(device_line.find("no CUDA device ("), std::string::npos) << device_line;
  }
  EXPECT_NE(out.find("    postproc  cublas.Supported"), std::string::npos) << out;
}

// bench/gpu/run.sh stops at once without a device, with the reason and exit status 2.
TEST(CublasDevice, GpuBenchmarkStopsWithoutADevice) {
  if (has_device()) GTEST_SKIP() << "this machine has a CUDA device (the benchmark would run)";
  std::filesystem::path build = std::filesystem::path(MT_TEST_CLI).parent_path().parent_path();
  std::filesystem::path out = std::filesystem::temp_directory_path() / "mt_bench_gpu_test";
  auto [status, text] = capture("BUILD='" + build.string() + "' OUT='" + out.string() + "' bash '" +
                                METATUNE_SOURCE_DIR + "/bench/gpu/run.sh' 2>&1");
  EXPECT_EQ(status, 2) << text;
  EXPECT_EQ(text.rfind("bench/gpu: no CUDA device (", 0), 0u) << text;
  EXPECT_FALSE(std::filesystem::exists(out / "gpu.db"));
}

// ---- on a GPU: cuBLAS against the interpreter --------------------------------------------------

void expect_matches_interpreter(const Function& f, double rtol, double atol) {
  std::unique_ptr<PluginModule> m = target().build(f);
  size_t out = 0;
  std::vector<bool> outs = f.output_mask();
  while (!outs[out])
    ++out;
  for (uint64_t seed : {11u, 23u}) { // a second input set through the same module
    std::vector<NDArray> ref = make_args(f, seed), got = make_args(f, seed);
    interpret(f, pointers(ref));
    m->run(pointers(got));
    std::string why;
    EXPECT_TRUE(allclose(got[out], ref[out], rtol, atol, &why)) << f.name << ": " << why;
  }
  std::vector<NDArray> args = make_args(f, 5);
  std::vector<double> times = m->time(pointers(args), 2, 0.001);
  ASSERT_EQ(times.size(), 2u);
  for (double t : times)
    EXPECT_GT(t, 0);
}

class CublasOnDevice : public ::testing::TestWithParam<const char*> {};

TEST_P(CublasOnDevice, MatchesTheInterpreter) {
  if (!has_device()) GTEST_SKIP() << "no device: " << device().value("unavailable", "");
  std::string spec = GetParam();
  bool half = spec.find("f16") != std::string::npos;
  expect_matches_interpreter(make_workload(spec), half ? 3e-2 : 1e-4, half ? 3e-2 : 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Workloads, CublasOnDevice,
                         ::testing::Values("matmul(M=33,N=17,K=29)",
                                           "matmul(M=32,N=16,K=24,dtype=f16)",
                                           "batch_matmul(B=3,M=16,N=12,K=8)",
                                           "dense(M=5,N=12,K=20,bias=0,act=none)"));

TEST(CublasOnDevice, F16OperandsF32Result) {
  if (!has_device()) GTEST_SKIP() << "no device: " << device().value("unavailable", "");
  expect_matches_interpreter(mixed_matmul(48, 40, 64), 1e-3, 1e-3);
}

} // namespace
} // namespace mt
