// The schedule the auto-unroll tests (tests/core, tests/llvm) share: matmul 64^3 as the
// standard CPU rules tile it -- i = (io 8, ii 8), j = (jo 4, ji 16), k = (ko 16, ki 4), order
// io jo ko ki ii ji, the init decomposed at ko, ji vectorized, io parallel and carrying the
// unroll request as RewriteParallelVectorizeUnroll leaves it:
//   parallel io { jo { init: ii { vec ji } ; ko { ki { ii { vec ji } } } } }
// Unroll steps (extent x statements): ii 8, ki 32, ko 512.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/function.h"
#include "core/schedule/schedule.h"
#include "core/workload/library.h"

namespace mt::unroll_test {

inline constexpr const char* kMaxStep = "pragma_auto_unroll_max_step";
inline constexpr const char* kExplicit = "pragma_unroll_explicit";

inline Function tiled_matmul(int64_t depth, int64_t explicit_unroll) {
  Function f = make_workload("matmul(M=64,N=64,K=64)");
  Schedule sch(f);
  BlockRV c = sch.all_blocks()[0];
  std::vector<LoopRV> l = sch.get_loops(c);
  std::vector<LoopRV> i = sch.split(l[0], {int64_t{8}, int64_t{8}});
  std::vector<LoopRV> j = sch.split(l[1], {int64_t{4}, int64_t{16}});
  std::vector<LoopRV> k = sch.split(l[2], {int64_t{16}, int64_t{4}});
  sch.reorder({i[0], j[0], k[0], k[1], i[1], j[1]});
  sch.decompose_reduction(c, k[0]);
  for (BlockRV b : sch.all_blocks()) {
    std::vector<LoopRV> loops = sch.get_loops(b);
    if (sch.get(loops.back()).for_kind == ForKind::Serial) sch.vectorize(loops.back());
  }
  sch.parallel(i[0]);
  sch.annotate(i[0], kMaxStep, AnnValue(depth));
  sch.annotate(i[0], kExplicit, AnnValue(explicit_unroll));
  return sch.func();
}

} // namespace mt::unroll_test
