// The kernels of a plan as source in one dialect. Thread-bound loops become the hardware
// indices (guarded where a loop is shorter than the launch), nested loops bound to the same tag
// share the index, vthread and vectorized loops stay loops, shared allocations move to kernel
// scope, barriers go where threads of a block hand data to each other, and a reduction whose
// loop is bound to threads (CrossThreadReduction) becomes a tree reduction over the block.
#pragma once

#include <string>
#include <vector>

#include "metatune/gpu_codegen/dialect.hpp"
#include "metatune/gpu_codegen/kernel_plan.hpp"
#include "metatune/gpu_codegen/tensor_map.hpp"

namespace mt::gpu_codegen {

struct GpuSource {
  std::string code;
  // Kernel i takes every buffer of the plan (in plan order), then its host_vars as i64.
  std::vector<std::string> kernel_names;
  // Per kernel: bytes of dynamic shared memory its launch must give it (shared_layout.hpp),
  // 0 where its shared arrays are declared statically.
  std::vector<int64_t> dynamic_shared_bytes;
  // Per kernel: the tensor maps its TMA copies read (tensor_map.hpp), passed after its
  // host_vars in this order.
  std::vector<std::vector<TensorMapSpec>> tensor_maps;
  // Per kernel: its launch, the plan's dims or, where a producer warpgroup issues its copies
  // (warp specialisation), one more warpgroup along threadIdx.y.
  std::vector<LaunchDims> launch_dims;
};

// Throws UnsupportedError for a program the generator cannot express (the message says why).
GpuSource write_kernels(const KernelPlan& plan, const Dialect& dialect);

} // namespace mt::gpu_codegen

namespace mt::gpu_codegen {

// With METATUNE_DUMP_GPU_SOURCE=DIR in the environment, writes `code` to DIR/<name>.<ext>
// (for reading what a schedule became); otherwise nothing.
void maybe_dump_source(const std::string& name, const std::string& code, const std::string& ext);

} // namespace mt::gpu_codegen
