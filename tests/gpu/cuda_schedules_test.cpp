// The standard GPU rules' random schedules of every workload as CUDA C++ from the shared GPU
// code generator, compiled by NVRTC for sm_80 (A100) and sm_90 (H100): no error and no warning.
// Needs libnvrtc (the CUDA toolkit), not a GPU; the arithmetic of the same schedules is checked
// by the opencl tests, which share the generator.
#include <cstdio>

#include "core/lower/lower.h"
#include "core_to_program.h"
#include "gpu_schedule_samples.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "nvrtc_compiler.h"

namespace mt {
namespace {

namespace G = mt::gpu_codegen;

TEST(CudaSchedules, EveryWorkloadUnderRandomGpuSchedulesCompilesForSm80AndSm90) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  TuneAttributes attrs = std_rules_test::gpu_set().attrs; // an sm_80-class device's limits
  int compiled = 0, unsupported = 0;
  auto compile = [&](const gpu_test::Sampled& s) {
    sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s.scheduled));
    G::GpuSource src;
    try {
      src = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect());
    } catch (const G::UnsupportedError&) {
      ++unsupported;
      return;
    }
    for (const char* arch : {"sm_80", "sm_90"}) {
      cuda::NvrtcResult r = nvrtc->compile(src.code, p.name + ".cu", arch);
      EXPECT_TRUE(r.ok) << s.spec << " " << arch << ":\n" << r.log << "\n" << src.code;
      EXPECT_TRUE(cuda::Nvrtc::log_is_clean(r.log)) << s.spec << " " << arch << " warns:\n"
                                                    << r.log << "\n"
                                                    << src.code;
      if (r.ok) ++compiled;
    }
  };
  gpu_test::for_each_gpu_sample(attrs, 3, compile);
  gpu_test::for_each_gpu_sample(attrs, 2, compile, {}, 1, gpu_test::half_workload_specs());
  std::printf("[ cuda ] %d programs compiled (sm_80 + sm_90 counted apart), %d unsupported\n",
              compiled, unsupported);
  EXPECT_GT(compiled, 100);
  EXPECT_LE(unsupported * 4, compiled);
}

} // namespace
} // namespace mt
