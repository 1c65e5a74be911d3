// The standard GPU rules' random schedules of every workload as HIP C++ from the shared GPU
// code generator, compiled by clang for gfx90a (CDNA 2), gfx940 (CDNA 3) and gfx1030 (RDNA 2):
// no error and no warning; and a target id the toolchain cannot build is refused with the
// toolchain's reason. Needs ROCm's clang and device libraries (setup.sh installs Debian's), not
// an AMD GPU; the arithmetic of the same schedules is checked by the opencl tests, which share
// the generator.
#include <atomic>
#include <cstdio>
#include <map>
#include <thread>
#include <utility>

#include "core/lower/lower.h"
#include "core_to_program.h"
#include "gpu_schedule_samples.h"
#include "hip_compiler.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"

namespace mt {
namespace {

namespace G = mt::gpu_codegen;

struct Job {
  std::string label, source, name, arch;
};

// Several jobs for one architecture as one translation unit. Parsing the HIP headers is most
// of a small kernel's compile (0.8 s of 1.1 s here), and it is paid once a unit. Each job goes
// into a namespace of its own and its kernels lose C linkage, so that equal names do not clash;
// the f16 header is included first, so that a job's own #include of it is a no-op instead of
// declarations inside the namespace.
std::string unit_source(const std::vector<Job>& jobs, const std::vector<size_t>& unit) {
  std::string out = "#include <hip/hip_fp16.h>\n";
  for (size_t i : unit) {
    std::string src = jobs[i].source;
    for (size_t at; (at = src.find("extern \"C\" ")) != std::string::npos;)
      src.erase(at, 11);
    out += "namespace job" + std::to_string(i) + " {\n" + src + "\n} // namespace\n";
  }
  return out;
}

// "" for a clean compile, else the failure or the warnings with clang's log.
std::string compile_one(const rocm::HipCompiler& clang, const std::string& source,
                        const std::string& name, const std::string& arch) {
  rocm::HipCompileResult r = clang.compile(source, name, arch);
  if (!r.ok) return "failed:\n" + r.log;
  if (!rocm::HipCompiler::log_is_clean(r.log)) return "warns:\n" + r.log;
  return "";
}

// Compiles the jobs on every core, in units of up to `unit_size` jobs of one architecture; a unit
// that is not clean is compiled again job by job, so that each failure names its own job and
// source. Returns "" per clean job, else its failure.
std::vector<std::string> compile_all(const rocm::HipCompiler& clang, const std::vector<Job>& jobs,
                                     size_t unit_size = 8) {
  std::vector<std::vector<size_t>> units;
  std::map<std::string, std::vector<size_t>> open; // the unit being filled, per architecture
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::vector<size_t>& u = open[jobs[i].arch];
    u.push_back(i);
    if (u.size() == unit_size) units.push_back(std::exchange(u, {}));
  }
  for (auto& [arch, u] : open)
    if (!u.empty()) units.push_back(u);

  std::vector<std::string> out(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next++) < units.size();) {
      const std::vector<size_t>& u = units[k];
      const Job& first = jobs[u.front()];
      const std::string whole = compile_one(clang, unit_source(jobs, u), first.name, first.arch);
      if (whole.empty()) continue;
      bool any = false;
      for (size_t i : u) {
        out[i] = compile_one(clang, jobs[i].source, jobs[i].name, jobs[i].arch);
        any = any || !out[i].empty();
      }
      // Otherwise the joining itself broke, and every unit would cost its jobs' compiles again.
      if (!any) out[u.front()] = "clean alone but not as one unit:\n" + whole;
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    threads.emplace_back(work);
  for (auto& t : threads)
    t.join();
  return out;
}

TEST(RocmSchedules, EveryWorkloadUnderRandomGpuSchedulesCompilesForGfx90aGfx940AndGfx1030) {
  std::string why;
  const rocm::HipCompiler* clang = rocm::HipCompiler::get(&why);
  if (!clang) GTEST_SKIP() << why;
  TuneAttributes attrs = std_rules_test::gpu_set().attrs;
  attrs["kind"] = std::string("rocm");
  attrs["max_shared_memory_per_block"] = int64_t{65536}; // LDS per workgroup
  std::vector<Job> jobs;
  std::string last_spec;
  int unsupported = 0;
  const char* archs[] = {"gfx90a", "gfx940", "gfx1030"};
  auto add = [&](const gpu_test::Sampled& s) {
    sdk::program::Program p = llvm_cpu::test::core_to_program(lower(s.scheduled));
    G::GpuSource src;
    try {
      src = G::write_kernels(G::plan_kernels(p), *G::hip_dialect());
    } catch (const G::UnsupportedError&) {
      ++unsupported;
      return;
    }
    // The first sample of each workload for every architecture, the others for one each
    // (in turn): every workload on all three, in a bounded time.
    bool first = s.spec != last_spec;
    last_spec = s.spec;
    for (size_t a = 0; a < 3; ++a)
      if (first || a == jobs.size() % 3)
        jobs.push_back(
            {s.spec + " space " + std::to_string(s.space) + " sample " + std::to_string(s.sample),
             src.code, p.name + ".hip", archs[a]});
  };
  // One sample of the first two design spaces: clang takes ~0.7 s a compile.
  gpu_test::for_each_gpu_sample(attrs, 2, add, {}, 1);
  gpu_test::for_each_gpu_sample(attrs, 1, add, {}, 1, gpu_test::half_workload_specs());
  std::vector<std::string> results = compile_all(*clang, jobs);
  int ok = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(results[i], "") << jobs[i].label << " for " << jobs[i].arch << "\n" << jobs[i].source;
    ok += results[i].empty();
  }
  std::printf("[ rocm ] %d of %zu compiles clean (gfx90a, gfx940, gfx1030), %d unsupported\n", ok,
              jobs.size(), unsupported);
  EXPECT_GT(ok, 60);
}

TEST(RocmSchedules, ATargetTheToolchainCannotBuildIsRefusedWithItsReason) {
  std::string why;
  const rocm::HipCompiler* clang = rocm::HipCompiler::get(&why);
  if (!clang) GTEST_SKIP() << why;
  const std::string src = "extern \"C\" __global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n";
  rocm::HipCompileResult r = clang->compile(src, "k.hip", "gfx1100");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("gfx1100"), std::string::npos) << r.log;
  EXPECT_TRUE(r.code_object.empty());
}

} // namespace
} // namespace mt
