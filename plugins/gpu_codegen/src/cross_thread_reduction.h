// Stores that every thread of one dimension of a block makes to the same element -- under the
// outermost loop bound to a thread tag, with indices that do not use it -- and what they mean
// on a GPU: harmless when all write the same value; a reduction across the threads when they
// update a reduction (CrossThreadReduction binds reduction loops to threadIdx.x), which the
// kernel writer turns into a tree reduction over the block; otherwise a program a GPU cannot
// run as written (UnsupportedError).
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "metatune/gpu_codegen/kernel_plan.hpp"

namespace mt::gpu_codegen {

// A reduction update X[i] = X[i] (+|max|min) e: the combiner and e.
struct Update {
  P::ExprKind combiner = P::ExprKind::Add;
  P::Expr operand;
};
std::optional<Update> reduction_update(const P::Stmt& store);

bool reads_buffer(const P::Expr& e, int64_t buffer_id);
bool uses_any(const P::Expr& e, const std::unordered_set<int64_t>& vars);
bool uses_only(const P::Expr& e, const std::unordered_set<int64_t>& vars);

// A reduction whose loop is bound to the threads of one dimension of the block: every thread
// combines its own share into `red`, then the block combines the shares.
struct CrossThreadReduction {
  int64_t buffer_id = 0;
  std::string key;
  P::ExprKind combiner = P::ExprKind::Add;
  P::Stmt update; // the store that becomes `red = red (+) e`
  std::vector<P::Stmt> inits;
  P::Expr init_value;
  bool broadcast = false; // the target is private to each thread: every thread keeps the result
  std::string red, flags; // the thread's variables
};

// The reduction across the threads of `loop`'s tag, if its body makes one (nullopt: none, or
// only harmless stores). `private_ids`: buffers private to each thread; `scope_vars`: the
// variables bound outside `loop`. Throws UnsupportedError as above.
std::optional<CrossThreadReduction>
find_shared_target_stores(const P::Stmt& loop, bool is_block,
                          const std::unordered_set<int64_t>& private_ids,
                          const std::unordered_set<int64_t>& scope_vars);

} // namespace mt::gpu_codegen
