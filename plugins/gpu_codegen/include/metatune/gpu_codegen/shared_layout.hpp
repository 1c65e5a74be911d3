// Where a kernel's block-shared arrays live. Declared one by one while together they fit what
// the dialect may declare statically; beyond that (CUDA: 48 KB, where a 128x128x32 f16 tile
// pipelined three deep already needs 57 KB) they become views of one pool the launch sizes,
// each at an offset aligned to 128 bytes (what the widest access, a tensor-core fragment
// load, and the pool's own alignment allow), or to more where an array asks for it (wgmma's
// swizzled operands: 1024 bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mt::gpu_codegen {

struct SharedArray {
  std::string type; // element type as the source spells it
  std::string name;
  int64_t elements = 0;
  int64_t element_bytes = 0;
  int64_t alignment = 128; // bytes; a power of two, at least kSharedAlignment
};

struct SharedLayout {
  bool dynamic = false;
  std::vector<int64_t> offsets; // byte offset of each array in the pool (dynamic only)
  int64_t bytes = 0;            // the pool's size (dynamic only)
  int64_t alignment = 128;      // the pool's: the largest of the arrays'
};

inline constexpr int64_t kSharedAlignment = 128;

// `static_limit` 0: always static.
SharedLayout layout_shared(const std::vector<SharedArray>& arrays, int64_t static_limit);

} // namespace mt::gpu_codegen
