// One generated CUDA (or HIP) source compiled for the CUDA emulator: rewritten (cuda_to_cpp.h),
// built by the host's C++ compiler into a shared library whose undefined symbols are the
// emulator's run time in the test binary (ptx_emulator.h), loaded, and its kernels launched.
#pragma once

#include <cstdint>
#include <string>

#include "metatune/gpu_codegen/kernel_plan.hpp"

namespace mt::gpu_test::emulator {

// What the emulator counted over a run.
struct Counts {
  uint64_t ptx = 0;               // asm statements carried out
  uint64_t tma_copies = 0;        // cp.async.bulk.tensor
  uint64_t wgmmas = 0;            // wgmma.mma_async, per thread
  uint64_t max_tma_in_flight = 0; // most copies issued and not yet landed at once
  Counts& operator+=(const Counts& o);
};

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

} // namespace mt::gpu_test::emulator
