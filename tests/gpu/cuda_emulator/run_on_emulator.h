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
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/runtime/ndarray.h"
#include "emulated_module.h"

namespace mt::gpu_test::emulator {

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
