// Vectorised copies: a vectorised loop whose body copies `lanes` consecutive elements from one
// array to another (the cooperative fetch of a shared tile, split with a vector length) becomes
// one 4-, 8- or 16-byte move where the dialect has them, instead of `lanes` scalar loads --
// what makes a GPU's global-memory reads wide. Only when it is provably right for every value
// of the other variables: both flat indices move by exactly one element per lane, and both
// start at a multiple of `lanes` elements (so the wide access is aligned, every array starting
// at least 16-byte aligned).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "metatune/gpu_codegen/kernel_plan.hpp"

namespace mt::gpu_codegen {

struct VectorCopy {
  P::Stmt store;     // dst[...] = src[...]
  int64_t lanes = 0; // elements moved at once
  int64_t bytes = 0; // lanes * element size: 4, 8 or 16
};

// Where buffer[indices] is, in elements from the buffer's start: row-major unless a buffer is
// laid out otherwise (wgmma's core matrices, tensor_op.h).
using FlatIndex = std::function<P::Expr(const P::Buffer&, const std::vector<P::Expr>&)>;

// The copy `loop` (a vectorised loop) is, when it is one; nullopt otherwise (the loop is then
// written as a loop).
std::optional<VectorCopy> match_vector_copy(const P::Stmt& loop, const FlatIndex& flat_index);

} // namespace mt::gpu_codegen
