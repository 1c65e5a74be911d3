// Region helpers for the compute-location primitives: which part of a buffer a subtree
// reads or writes per iteration of a loop, and loop nests that cover such a region.
#pragma once

#include <optional>
#include <vector>

#include "core/ir/arith.h"
#include "core/schedule/analysis.h"

namespace mt {

// One dimension of a region: [min, min + extent).
struct DimRange {
  Expr min;
  int64_t extent = 1;
};
using Region = std::vector<DimRange>;

// The smallest range covering both; nullopt when the mins differ by a non-constant.
std::optional<DimRange> union_range(const DimRange& a, const DimRange& b, const RangeMap& ctx);

// Range of `index` (an expression over the iter vars of the block realized at `path`), when
// the loops on `path` below `scope_depth` (the index in path.nodes of the scope loop) are
// relaxed. `shape_extent` is the buffer's dimension, used as the fallback. With
// `relax_thread_loops` (a buffer in "shared" scope) the threadIdx- and vthread-bound loops above
// the scope are relaxed too: the threads of a block share the buffer, so its region must cover
// what all of them need, and a GPU runs the loops that compute it once for the whole block
// (cooperatively), not once per thread as the loop nest would say on a CPU.
DimRange relax_index(const Expr& index, const BlockRealizeNode* br, const StmtPath& path,
                     size_t scope_depth, int64_t shape_extent, bool relax_thread_loops = false);

// True if `index` (over the iter vars of the block at `path`) takes every value of its relaxed
// range when the loops below `scope_depth` vary: an affine expression whose relaxed terms
// leave no gaps. Over-approximated (strided, non-affine) ranges are not dense.
bool relaxed_range_is_dense(const Expr& index, const BlockRealizeNode* br, const StmtPath& path,
                            size_t scope_depth);

// Ranges of every enclosing loop of `path` (and the leaf itself, if it is a loop).
RangeMap path_ranges(const StmtPath& path);

} // namespace mt
