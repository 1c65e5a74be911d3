// Shared arrays: static declarations, or one dynamic pool (shared_layout.hpp).
#include "metatune/gpu_codegen/shared_layout.hpp"

#include <algorithm>

namespace mt::gpu_codegen {

SharedLayout layout_shared(const std::vector<SharedArray>& arrays, int64_t static_limit) {
  SharedLayout out;
  int64_t end = 0, alignment = kSharedAlignment;
  std::vector<int64_t> offsets;
  auto round_up = [](int64_t x, int64_t to) { return (x + to - 1) / to * to; };
  for (const SharedArray& a : arrays) {
    const int64_t align = std::max(a.alignment, kSharedAlignment);
    alignment = std::max(alignment, align);
    end = round_up(end, align);
    offsets.push_back(end);
    end += round_up(a.elements * a.element_bytes, kSharedAlignment);
  }
  // Judged on the aligned sum: the compiler's own static layout pads less, never more.
  if (static_limit <= 0 || end <= static_limit) return out;
  out.dynamic = true;
  out.offsets = std::move(offsets);
  out.bytes = end;
  out.alignment = alignment;
  return out;
}

} // namespace mt::gpu_codegen
