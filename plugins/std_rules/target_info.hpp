// What the standard components need to know about the hardware, read from the tune context
// the host initialises them with ("kind", "num_cores", "vector_bytes", ...). A component that
// is never initialised assumes a CPU with the machine's core count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "metatune/sdk/schedule.hpp"

namespace mt::std_rules {

// True for target kinds that run thread blocks (CUDA, ROCm, ...), false for CPUs ("llvm").
bool is_gpu_kind(std::string_view kind);

struct TargetInfo {
  std::string kind = "llvm";
  bool gpu = false;
  int64_t num_cores = 1;
  int64_t vector_bytes = 0;                        // 0: unknown
  int64_t vector_registers = 16;                   // AVX2's, when the host does not say
  int64_t max_threads_per_block = 1024;            // GPU
  int64_t max_shared_memory_per_block = 49152;     // GPU, bytes
  int64_t max_local_memory_per_block = 2147483647; // GPU, bytes (no limit unless told)

  // f32 elements in one vector register (8, AVX2's, when the host did not say).
  int64_t f32_lanes() const { return vector_bytes >= 4 ? vector_bytes / 4 : 8; }

  // Defaults: a CPU with std::thread::hardware_concurrency() cores.
  TargetInfo();
  static TargetInfo from(const sdk::TuneContext& ctx);
};

} // namespace mt::std_rules
