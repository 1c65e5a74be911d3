// One generated CUDA (or HIP) source compiled for the CUDA emulator: rewritten (cuda_to_cpp.h),
// built by the host's C++ compiler into a shared library whose undefined symbols are the
// emulator's run time in the test binary (ptx_emulator.h), loaded, and its kernels launched.
#pragma once

#include <cstdint>
#include <string>

#include "metatune/gpu_codegen/kernel_plan.hpp"
#include "ptx_emulator.h"

namespace mt::gpu_test::emulator {

// What the emulator counted over a run (launches add to it).
using Counts = mt_emu::LaunchStats;

class EmulatedModule {
public:
  // Rewrites and compiles `cuda`; throws std::runtime_error with the compiler's log.
  explicit EmulatedModule(const std::string& cuda);
  ~EmulatedModule();
  EmulatedModule(const EmulatedModule&) = delete;
  EmulatedModule& operator=(const EmulatedModule&) = delete;

  // Runs kernel `name` on the grid, its parameters as cuLaunchKernel takes them; "" or the
  // emulator's error. `seed` draws the order in which threads run and copies land; what it
  // counted is added to `counts`.
  std::string launch(const std::string& name, const gpu_codegen::LaunchDims& dims,
                     size_t dynamic_shared_bytes, void** params, uint64_t seed,
                     Counts* counts = nullptr);

private:
  void* library_ = nullptr;
};

} // namespace mt::gpu_test::emulator
