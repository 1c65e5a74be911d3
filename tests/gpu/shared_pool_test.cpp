// Shared memory in one pool (shared_layout.hpp): what CUDA kernels beyond 48 KB of shared memory
// become -- every shared array a view of one dynamically sized pool at an offset of its own.
// The offsets are checked directly, and the layout's arithmetic on PoCL: the opencl target
// configured to pool every kernel's local arrays runs random GPU schedules (shared tiles,
// cross-thread reductions' scratch, tensor-core tiles in pipeline slots) against the
// interpreter. A wrong offset overlaps two arrays and shows up as a wrong result.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core_to_program.h"
#include "gpu_schedule_samples.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/gpu_codegen/shared_layout.hpp"
#include "opencl_target.h"
#include "tensor_core_samples.h"

namespace mt {
namespace {

namespace G = mt::gpu_codegen;
using namespace std_rules_test;

TEST(SharedLayout, ArraysStayDeclaredUpToTheLimitAndBecomeAlignedDisjointViewsBeyond) {
  std::vector<G::SharedArray> arrays = {
      {"float", "a", 1000, 4}, {"half", "b", 33, 2}, {"int", "c", 256, 4}};
  // 4000 + 66 + 1024 bytes; each rounded up to 128: 4096 + 128 + 1024.
  EXPECT_FALSE(G::layout_shared(arrays, 0).dynamic);
  EXPECT_FALSE(G::layout_shared(arrays, 5248).dynamic);
  G::SharedLayout l = G::layout_shared(arrays, 5247);
  ASSERT_TRUE(l.dynamic);
  EXPECT_EQ(l.offsets, (std::vector<int64_t>{0, 4096, 4224}));
  EXPECT_EQ(l.bytes, 5248);
  for (size_t i = 0; i < arrays.size(); ++i) {
    EXPECT_EQ(l.offsets[i] % G::kSharedAlignment, 0);
    int64_t end = l.offsets[i] + arrays[i].elements * arrays[i].element_bytes;
    EXPECT_LE(end, i + 1 < arrays.size() ? l.offsets[i + 1] : l.bytes);
  }
}

// The opencl plugin with every kernel's local arrays in one pool.
// Destroyed with the statics at exit, after the thread_local error slot
// (core/plugin/last_error.cpp).
PluginTarget& pooled_opencl() {
  static std::unique_ptr<PluginTarget> t =
      host().create_target("opencl", R"({"pool_shared_beyond": 1})");
  return *t;
}

bool pools(const Function& scheduled) {
  sdk::program::Program p = llvm_cpu::test::core_to_program(lower(scheduled));
  try {
    return G::write_kernels(G::plan_kernels(p), *G::opencl_dialect(1))
               .code.find("mt_dynamic_shared") != std::string::npos;
  } catch (const G::UnsupportedError&) {
    return false;
  }
}

TEST(SharedPool, RandomGpuSchedulesWithTheirSharedArraysInOnePoolMatchTheInterpreter) {
  REQUIRE_OPENCL();
  gpu_test::Tally t;
  int pooled = 0;
  gpu_test::for_each_gpu_sample(
      gpu_test::opencl().attrs, 3,
      [&](const gpu_test::Sampled& s) {
        if (pools(s.scheduled)) ++pooled;
        EXPECT_EQ(gpu_test::build_and_compare(pooled_opencl(), s.scheduled, s.reference, t), "")
            << s.spec << " space " << s.space << " sample " << s.sample << " trace "
            << s.trace_json;
      },
      {}, 2,
      {"matmul(M=32,N=24,K=16)", "softmax(M=8,N=33)", "layernorm(M=8,N=32)",
       "conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1)"});
  std::printf("[ shared pool ] %d schedules compared, %d of them with a pool, %d unsupported\n",
              t.built, pooled, t.unsupported);
  EXPECT_GE(pooled, 6);
  EXPECT_GE(t.ok, 8);
}

TEST(SharedPool, TensorCoreTilesInPipelineSlotsInOnePoolMatchTheInterpreter) {
  REQUIRE_OPENCL();
  gpu_test::Tally t;
  int pooled = 0;
  gpu_test::for_each_tensor_core_sample(
      gpu_test::opencl().attrs, 2, [&](const gpu_test::TensorCoreSample& s) {
        if (pools(s.scheduled)) ++pooled;
        EXPECT_EQ(
            gpu_test::build_and_compare(pooled_opencl(), s.scheduled, s.reference, t, 1e-4, 1e-4),
            "")
            << s.spec << "\ntrace " << s.trace_json;
      });
  std::printf("[ shared pool ] %d tensor-core schedules compared, %d of them with a pool\n",
              t.built, pooled);
  EXPECT_EQ(t.unsupported, 0) << t.last_unsupported;
  EXPECT_GE(pooled, 6);
}

} // namespace
} // namespace mt
