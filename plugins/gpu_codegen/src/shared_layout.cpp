// Shared arrays: static declarations, or one dynamic pool (shared_layout.hpp).
#include "metatune/gpu_codegen/shared_layout.hpp"

namespace mt::gpu_codegen {

SharedLayout layout_shared(const std::vector<SharedArray>& arrays, int64_t static_limit) {
  SharedLayout out;
  int64_t end = 0;
  std::vector<int64_t> offsets;
  for (const SharedArray& a : arrays) {
    offsets.push_back(end);
    int64_t bytes = a.elements * a.element_bytes;
    end += (bytes + kSharedAlignment - 1) / kSharedAlignment * kSharedAlignment;
  }
  // Judged on the aligned sum: the compiler's own static layout pads less, never more.
  if (static_limit <= 0 || end <= static_limit) return out;
  out.dynamic = true;
  out.offsets = std::move(offsets);
  out.bytes = end;
  return out;
}

} // namespace mt::gpu_codegen
