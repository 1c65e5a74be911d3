// The CUDA C++ the generator writes, run on the CPU: the checks of GPU schedules that PoCL
// cannot make. PoCL runs the OpenCL dialect, whose work-items cannot wait on each other, so a
// kernel in which one warpgroup produces tiles (TMA copies) while the others consume them
// through mbarriers -- warp specialisation -- had no check short of a device. Here the CUDA
// source itself (not another dialect's) is rewritten for the host's C++ compiler (each asm
// statement becomes a call to ptx_emulator.h, which carries out the PTX instruction; shared
// arrays come from the emulated shared memory; each kernel gets an entry point taking the
// driver's parameter array), compiled into a shared library and launched with every thread a
// fiber. What the emulator models and what it does not: ptx_emulator.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/runtime/ndarray.h"
#include "metatune/gpu_codegen/kernel_plan.hpp"

namespace mt::gpu_test::emulator {

// `cuda` rewritten for the host's compiler; the names of its kernels in `kernels`. Throws
// std::runtime_error for a construct the rewrite does not know.
std::string cuda_to_cpp(const std::string& cuda, std::vector<std::string>* kernels);

// What the emulator counted over a run.
struct Counts {
  uint64_t ptx = 0;               // asm statements carried out
  uint64_t tma_copies = 0;        // cp.async.bulk.tensor
  uint64_t wgmmas = 0;            // wgmma.mma_async, per thread
  uint64_t max_tma_in_flight = 0; // most copies issued and not yet landed at once
  Counts& operator+=(const Counts& o);
};

// One compiled source.
class EmulatedModule {
public:
  // Rewrites and compiles `cuda`; throws std::runtime_error with the compiler's log.
  explicit EmulatedModule(const std::string& cuda);
  ~EmulatedModule();
  EmulatedModule(const EmulatedModule&) = delete;
  EmulatedModule& operator=(const EmulatedModule&) = delete;

  // Runs kernel `name` on the grid, its parameters as cuLaunchKernel takes them; "" or the
  // emulator's error. `seed` draws the order in which threads run and copies land.
  std::string launch(const std::string& name, const gpu_codegen::LaunchDims& dims,
                     size_t dynamic_shared_bytes, void** params, uint64_t seed,
                     Counts* counts = nullptr);

  // The rewritten source, for failure messages.
  const std::string& cpp() const { return cpp_; }

private:
  std::string cpp_;
  void* library_ = nullptr;
};

// How run_and_compare runs a schedule.
struct RunOptions {
  std::vector<uint64_t> seeds = {1}; // one run a seed (orders of threads and copies)
  double rtol = 1e-3, atol = 1e-3;
  // Applied to the CUDA source before it is compiled: the emulator's own tests break a
  // generated kernel on purpose with it.
  std::function<std::string(const std::string&)> edit;
  bool hip = false; // the HIP dialect's source instead (the rocm target's; no asm in it)
};

// `scheduled` (a core function, not lowered) as the cuda target writes it for sm_90 (or the rocm
// target, `hip`), compiled
// once and run on the emulator for each seed with the arguments the tests make (inputs random,
// outputs NaN), compared with `reference`: "" when every run matches, else what differs or
// what the emulator reported (and for which seed). `source` receives the CUDA source.
std::string run_and_compare(const Function& scheduled, const std::vector<NDArray>& reference,
                            const RunOptions& options, Counts* counts = nullptr,
                            std::string* source = nullptr);

} // namespace mt::gpu_test::emulator
