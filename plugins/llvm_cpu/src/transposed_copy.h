// A copy that transposes -- the packing of a weight stored [N, K] into the [K, N] panel a
// register tile reads, `for a: for v (vectorized): dst[.. v ..] = f(src[.. a ..])` with dst
// contiguous along v and src contiguous along a but strided along v -- recognised so that the
// code generator moves it in square blocks: B contiguous loads along a, a B x B transpose in
// registers, B contiguous stores along v, instead of one gather (or B scalar loads) per stored
// vector, each touching B cache lines.
#pragma once

#include <cstdint>
#include <optional>

#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

struct TransposedCopy {
  const sdk::program::StmtNode* inner = nullptr; // the vectorized loop over v
  const sdk::program::StmtNode* store = nullptr; // its one statement
  int64_t outer_var = 0, inner_var = 0;          // a and v
};

// `outer` as such a copy whose extents both divide by `block` lanes; nullopt otherwise. The
// stored value may be any elementwise function of loads (a cast, a scale, a bias along v) as
// long as every load that varies along a is contiguous along a, one of them not along v, and
// none reads what the store writes.
std::optional<TransposedCopy> match_transposed_copy(const sdk::program::StmtNode& outer,
                                                    int64_t block);

} // namespace mt::llvm_cpu
