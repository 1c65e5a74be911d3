// Every workload of the library under random schedules of the standard GPU rules, built by the
// opencl plugin (the shared GPU code generator's OpenCL C) and run on the machine's OpenCL
// device -- PoCL on the CPU here, which runs work-groups with local memory and barriers -- and
// compared with the reference interpreter. Wrong thread binding, a missing barrier, a race on
// shared memory or a wrong cross-thread reduction show up as wrong results.
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/tuner/target_setup.h"
#include "core_to_program.h"
#include "gpu_schedule_samples.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "opencl_target.h"
#include "tensor_core_samples.h"

namespace mt {
namespace {

using namespace std_rules_test;
using gpu_test::opencl;

using gpu_test::Tally;

// Runs `scheduled` through the opencl target; "" when it matches the reference.
std::string run_on_device(const Function& scheduled, const std::vector<NDArray>& reference,
                          Tally& t, double rtol = 1e-4, double atol = 1e-5) {
  return gpu_test::build_and_compare(*opencl().target, scheduled, reference, t, rtol, atol);
}

TEST(OpenClSchedules, EveryWorkloadUnderRandomGpuSchedulesMatchesTheInterpreter) {
  REQUIRE_OPENCL();
  Tally t, total;
  gpu_test::for_each_gpu_sample(
      opencl().attrs, 4,
      [&](const gpu_test::Sampled& s) {
        std::string diff = run_on_device(s.scheduled, s.reference, t);
        EXPECT_EQ(diff, "") << "space " << s.space << " sample " << s.sample << " trace "
                            << s.trace_json;
      },
      [&](const std::string& spec) {
        std::printf("[ opencl ] %-70s built %2d  correct %2d  unsupported %2d%s%s\n", spec.c_str(),
                    t.built, t.ok, t.unsupported, t.last_unsupported.empty() ? "" : "  last: ",
                    t.last_unsupported.substr(0, 600).c_str());
        // Most sampled schedules must run, or GPU tuning would starve.
        EXPECT_GT(t.ok, 0) << spec;
        total += t;
        t = Tally{};
      });
  std::printf("[ opencl ] total: built %d, correct %d, unsupported %d\n", total.built, total.ok,
              total.unsupported);
  EXPECT_GE(total.ok, 2 * total.unsupported);
}

// MultiLevelTiling's pipeline_stages ([1, 2] on GPUs): the k loop its inputs are staged under,
// software-pipelined by lowering (the next tiles fetched a step ahead, into a second slot),
// as the tensor-core rule's. Run on PoCL against the interpreter; in CUDA the fetches become
// cp.async.
TEST(OpenClSchedules, PipelinedMultiLevelTilingMatchesTheInterpreter) {
  REQUIRE_OPENCL();
  Tally t;
  int pipelined = 0, async = 0;
  gpu_test::for_each_gpu_sample(
      opencl().attrs, 2,
      [&](const gpu_test::Sampled& s) {
        if (!gpu_test::is_pipelined(s.scheduled)) return;
        ++pipelined;
        sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s.scheduled));
        std::string cuda =
            gpu_codegen::write_kernels(gpu_codegen::plan_kernels(p), *gpu_codegen::cuda_dialect())
                .code;
        async += cuda.find("mt_cp_async_commit();") != std::string::npos;
        EXPECT_EQ(run_on_device(s.scheduled, s.reference, t), "") << s.trace_json;
      },
      {}, 8,
      {"matmul(M=64,N=48,K=32)", "dense(M=32,N=64,K=48,bias=0,act=none)",
       "batch_matmul(B=2,M=32,N=32,K=64)"});
  std::printf("[ opencl ] %d pipelined MultiLevelTiling samples (%d with cp.async in CUDA): "
              "built %d, correct %d\n",
              pipelined, async, t.built, t.ok);
  EXPECT_GE(pipelined, 4);
  EXPECT_EQ(t.ok, t.built);
  EXPECT_GE(async, 1);
}

TEST(OpenClSchedules, HalfPrecisionWorkloadsMatchTheInterpreter) {
  REQUIRE_OPENCL();
  Tally t;
  gpu_test::for_each_gpu_sample(
      opencl().attrs, 3,
      [&](const gpu_test::Sampled& s) {
        std::string diff =
            run_on_device(s.scheduled, s.reference, t, gpu_test::kHalfRtol, gpu_test::kHalfAtol);
        EXPECT_EQ(diff, "") << s.spec << " space " << s.space << " sample " << s.sample << " trace "
                            << s.trace_json;
      },
      {}, 2, gpu_test::half_workload_specs());
  std::printf("[ opencl ] f16/bf16: built %d, correct %d, unsupported %d\n", t.built, t.ok,
              t.unsupported);
  EXPECT_GE(t.ok, 10);
}

} // namespace
} // namespace mt
