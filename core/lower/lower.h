// Lowering: turns a scheduled Function (loops + blocks) into a loop program of For / Seq /
// Store / IfThenElse / Allocate only (Function::lowered = true). Passes, in order:
//
// 1. lower_blocks: every BlockRealize becomes its body with the block iter vars substituted by
//    their bound values, guarded by the predicate if any. A block with `init` runs the init
//    first when every reduction iter var's value is 0 (`if (v_r1 == 0 && ...) init; body`).
// 2. place_allocations: each intermediate buffer (Function::buffers) gets an Allocate around
//    the body of the deepest For loop that encloses every statement accessing it (or around
//    the whole body). Under a parallel loop this gives each iteration its own copy. Buffers in
//    "shared" scope are never allocated inside a threadIdx loop, and "global" ones never inside
//    any thread-bound loop (device memory cannot be per-thread). Unused buffers are dropped.
// 3. compact_buffers: inside its Allocate each buffer is shrunk to the region actually
//    accessed: per dimension, the accessed indices are relaxed over the loops inside the
//    allocation point to [min, min + extent) with `min` an expression of the outer loop
//    variables; the buffer gets that shape (a new Buffer with the same name, dtype and scope)
//    and every index i becomes i - min. A dimension that cannot be bounded stays whole. A
//    "shared" buffer (allocated above the thread loops by pass 2) whose every access lies under
//    the same serial loops gets the region of one iteration instead, its min moving with them,
//    when no element is touched in two iterations (a GPU k-tile holds one k step). A buffer
//    given storage_align (a block annotation, collected before pass 1) then gets the dimension
//    after the aligned axis widened until that axis's stride meets the alignment (padding
//    against shared-memory bank conflicts; see storage_align.h).
//    A loop annotated `software_pipeline_stages = S` whose body fills shared buffers and then
//    reads them gets a prologue and fetches S-1 iterations ahead into S slots of each buffer
//    (software_pipeline.h: what lets a GPU overlap the next tile's copy with this one's math).
// 4. simplify: every expression is simplified with the loop ranges (mt::simplify(Stmt)), and
//    branches whose condition became a constant are resolved.
// 5. auto_unroll (LowerOptions, on by default): under a loop annotated
//    `pragma_auto_unroll_max_step = N`, the innermost serial loops whose extent times their
//    body's statements (inner loops expanded) is at most N are unrolled, as MetaSchedule's
//    lowering does -- they become ForKind::Unrolled, or with `pragma_unroll_explicit = 0`
//    keep serial and get the kUnrollHintAnnotation annotation (see auto_unroll.cpp).
//    METATUNE_DISABLE_AUTO_UNROLL=1 in the environment turns it off everywhere.
// 6. partition_loops (optional, LowerOptions): a loop whose first (or last) iterations
//    provably satisfy a guard below it (an imperfect split's bound, a reduction's `k == 0`
//    init) gets its body duplicated under `if (v < t)`, each copy simplified for its part of
//    the range, so the guard is not evaluated in the hot inner loops (at most a few partitions
//    per function; vectorized and thread-bound loops are never split).
//
// For kinds, thread tags and annotations are kept. The lowered Function keeps its params; its
// `buffers` is empty: every intermediate is declared by an Allocate node of the body.
#pragma once

#include <vector>

#include "core/ir/function.h"

namespace mt {

struct LowerOptions {
  // Pass 6. Off by default: analyses that recognise or count statements (features, the
  // oneDNN target's pattern matching) read the program as written; code generators ask for
  // it (the host API's program_partition_loops, ABI 1.2).
  bool partition_loops = false;
  // Pass 5. On by default, so that every consumer of lower() -- targets, the interpreter, the
  // feature extractor -- sees the loops that will be unrolled; the environment switch
  // (auto_unroll_disabled_by_environment) overrides it.
  bool auto_unroll = true;
};
Function lower(const Function& f, const LowerOptions& options = {});

// The individual passes, in pipeline order (exposed for tests and for targets that want a
// different pipeline). Each takes and returns a function body.
Stmt lower_blocks(const Stmt& body);
Stmt place_allocations(const Stmt& body, const std::vector<Buffer>& intermediates);
Stmt compact_buffers(const Stmt& body);
// `if` statements whose condition is a constant replaced by the branch it selects (after 4).
Stmt fold_constant_branches(const Stmt& body);
Stmt auto_unroll(const Stmt& body);
Stmt partition_loops(const Stmt& body);

// Whether METATUNE_DISABLE_AUTO_UNROLL is set (to anything but "" or "0"): the one place that
// reads the switch. It turns pass 5 off, to measure what the unroll axis of the search is worth.
bool auto_unroll_disabled_by_environment();

// The loop annotation pass 5 leaves on a loop it unrolls by hint (the ABI's MT_LOOP_UNROLL_HINT,
// checked equal in core/plugin/host_api_program.cpp).
inline constexpr const char* kUnrollHintAnnotation = "pragma_unroll_hint";
} // namespace mt
