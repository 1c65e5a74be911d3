// Buffers: named, typed, statically shaped, row-major storage in a memory scope.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/expr.h"

namespace mt {

struct BufferNode {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  // "global" (function arguments and intermediates), "shared", "local" (GPU), "cache" (a CPU
  // cache_read/cache_write staging buffer).
  std::string scope = "global";

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
};

Buffer make_buffer(std::string name, DType dtype, std::vector<int64_t> shape,
                   std::string scope = "global");
// Copy with a different scope / name / shape (a new buffer identity).
Buffer with_scope(const Buffer& b, std::string scope);

} // namespace mt
