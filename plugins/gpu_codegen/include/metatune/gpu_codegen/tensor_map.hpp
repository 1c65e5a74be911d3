// What a kernel that copies with TMA (tma_copy.h) needs from the host: one tensor map per
// copied buffer, made with the buffer's device address (CUDA's cuTensorMapEncodeTiled) and
// passed by value after the kernel's other parameters, in this order.
#pragma once

#include <cstdint>
#include <vector>

namespace mt::gpu_codegen {

struct TensorMapSpec {
  size_t buffer = 0;                   // the plan's buffer (kernel_plan.hpp)
  bool bf16 = false;                   // element type: bf16, else f16
  std::vector<uint64_t> dims;          // elements along each dimension, innermost first
  std::vector<uint64_t> strides_bytes; // bytes between steps of dims 1.. (rank - 1 entries)
  std::vector<uint32_t> box;           // the box's extent along each dimension, innermost first
  int swizzle_bytes = 128;             // the shared-memory swizzle (128: tensor_op.h's Swizzle128)
};

} // namespace mt::gpu_codegen
