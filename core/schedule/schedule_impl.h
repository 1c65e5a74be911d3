// Private state of a Schedule shared by the files that implement its primitives: the symbol
// tables of random variables, tree lookups, and the recording of instructions.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/ir/arith.h"
#include "core/schedule/analysis.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"

namespace mt {

struct Schedule::Impl {
  Schedule* self;
  std::vector<std::string> blocks; // BlockRV id -> block name
  std::vector<Expr> loops;         // LoopRV id -> loop var
  std::vector<int64_t> values;     // ExprRV id -> value
  int recording_depth = 0;         // primitives nest; only depth-1 calls are recorded
  int fresh_counter = 0;

  explicit Impl(Schedule* s) : self(s) {}

  Stmt& root() { return self->func_.body; }
  Function& func() { return self->func_; }

  // ---- symbol tables ----
  BlockRV new_block_rv(const std::string& name);
  LoopRV new_loop_rv(const Expr& var);
  ExprRV new_expr_rv(int64_t v);
  const std::string& block_name(const char* prim, BlockRV b) const;
  const Expr& loop_var(const char* prim, LoopRV l) const;
  int64_t value(const char* prim, ExprRV v) const;

  // ---- lookups (throw ScheduleError naming `prim` when not found) ----
  StmtPath block_path(const char* prim, BlockRV b);
  StmtPath loop_path(const char* prim, LoopRV l);
  const BlockRealizeNode* realize(const StmtPath& p) const {
    return as<BlockRealizeNode>(p.leaf());
  }
  // Bounds of every loop var on the path (for simplification of bindings).
  static RangeMap loop_ranges(const StmtPath& p);
  std::string loop_desc(LoopRV l) const; // "loop 'i_0' (l3)"
  std::string fresh_name(const std::string& base); // unique block / buffer name
  bool name_taken(const std::string& name) const;

  // Simplifies block bindings and predicates everywhere (called after each primitive).
  void normalize();
  // A binding normalize() simplified, with the bounds of the variables in it then: the result
  // depends on nothing else, and a primitive rewrites only some bindings, so the others are
  // met again with the same bounds. Entries not met by a normalize() are dropped after it.
  struct SimplifiedBinding {
    Expr in, out; // `in` held so that its address is not reused
    std::vector<std::pair<const ExprNode*, IntBound>> bounds;
  };
  std::unordered_map<const ExprNode*, SimplifiedBinding> simplified_bindings;
  // Replaces every use of buffer `from` (loads, stores, function buffer lists) with `to`.
  // Every access of `from` becomes one of `to`; with `remap`, its indices become remap(indices)
  // (a layout change).
  using IndexRemap = std::function<std::vector<Expr>(const std::vector<Expr>&)>;
  void replace_buffer(const Buffer& from, const Buffer& to, const IndexRemap& remap = {});
  // Checks that every pair of blocks that share a buffer (one writing it) keep their
  // relative program order between `before` and the current tree; throws otherwise.
  void check_order_preserved(const char* prim, const std::string& subject,
                             const std::vector<std::string>& before);

  // ---- recording ----
  bool recording() const { return recording_depth == 1; }
  void record(Instruction inst);
  static RVRef ref(BlockRV b) { return {RVRef::Kind::Block, b.id}; }
  static RVRef ref(LoopRV l) { return {RVRef::Kind::Loop, l.id}; }
  static RVRef ref(ExprRV v) { return {RVRef::Kind::Expr, v.id}; }
};

[[noreturn]] void schedule_error(const std::string& prim, const std::string& subject,
                                 const std::string& reason);

} // namespace mt
