// Analysis helpers shared by the standard components: how a block's loops drive its iteration
// variables, what it writes, its annotations, and a read-only view of the loop tree.
//
// Structural questions are answered from the function itself (sdk::Program), not with
// get_child_blocks / get_consumers, because those are recorded in the trace: a recorded lookup
// whose answer depends on an earlier sampled decision (a compute location) would make the trace
// fail to replay once that decision is re-sampled.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "metatune/sdk/schedule.hpp"

namespace mt::std_rules {

// Whether a loop's variable appears in the binding of a spatial / reduction iter var.
struct LoopRole {
  bool spatial = false;
  bool reduce = false;
};
std::vector<LoopRole> loop_roles(const sdk::Schedule& sch, sdk::BlockRV block,
                                 const std::vector<sdk::LoopRV>& loops);

bool has_reduce_iter(const sdk::Schedule& sch, sdk::BlockRV block);
// Product of the extents of the block's spatial / reduction iter vars.
int64_t spatial_extent(const sdk::Schedule& sch, sdk::BlockRV block);
int64_t reduce_extent(const sdk::Schedule& sch, sdk::BlockRV block);
// The block writes a function parameter (an output of the function).
bool writes_param(const sdk::Schedule& sch, sdk::BlockRV block);
// Each iter var is bound to a distinct loop of `loops` (the loop variable itself) and every loop
// binds one iter var: the block owns a plain, untransformed loop nest.
bool has_trivial_binding(const sdk::Schedule& sch, sdk::BlockRV block,
                         const std::vector<sdk::LoopRV>& loops);
bool any_thread_bound(const sdk::Schedule& sch, const std::vector<sdk::LoopRV>& loops);
// has_trivial_binding for the serial loops enclosing the block, read from the loop tree (not
// with get_loops, which would be recorded in the trace): the untouched nest the tiling rules
// start from.
bool in_plain_serial_nest(const sdk::Schedule& sch, sdk::BlockRV block);
// Whether any index of the access uses `var`.
bool access_uses(const sdk::BufferAccess& a, const sdk::ExprRef& var);

// The roles of a matmul-like block's iteration variables (positions in `ivs`), given its two
// operand reads `a` and `b`: k the one reduction both read, i the spatial one only `a` reads,
// j the one only `b` reads, every other spatial one a batch loop (with `ones_are_batch` also a
// spatial one of extent 1 that one operand alone reads: a model's [1, S, H] activations).
// Nullopt when a role is missing or taken twice, or another reduction is there.
struct MatmulAxes {
  size_t i = 0, j = 0, k = 0;
  std::vector<size_t> batch; // outermost first
};
std::optional<MatmulAxes> matmul_axes(const std::vector<sdk::IterVarInfo>& ivs,
                                      const sdk::BufferAccess& a, const sdk::BufferAccess& b,
                                      bool ones_are_batch);

// The index of buffer `name` among the block's reads; a ScheduleError naming `rule` when the
// block no longer reads it.
int read_index(const sdk::Schedule& sch, sdk::BlockRV block, const std::string& name,
               const std::string& rule);

std::optional<sdk::AnnValue> block_annotation(const sdk::Schedule& sch, sdk::BlockRV block,
                                              const std::string& key);
std::optional<int64_t> int_block_annotation(const sdk::Schedule& sch, sdk::BlockRV block,
                                            const std::string& key);

// Names of every block of the schedule's function in program order: what postprocessors walk
// (by name, since their own rewrites invalidate a LoopTree).
std::vector<std::string> block_names_in_order(const sdk::Schedule& sch);

// The loop tree of the schedule's current function (unlowered), read once.
class LoopTree {
public:
  explicit LoopTree(const sdk::Schedule& sch);

  // Top-level statements of the function body, in order.
  const std::vector<sdk::StmtRef>& root_items() const { return roots_; }
  // Names of the blocks under `s` in program order.
  std::vector<std::string> blocks_in(sdk::StmtRef s) const;
  // The For statement of a loop variable (null if the loop is gone).
  sdk::StmtRef loop(sdk::ExprRef var) const;
  std::vector<std::string> blocks_under(sdk::ExprRef loop_var) const;
  // Whether the body of loop `outer` is exactly loop `inner`.
  bool is_only_child(sdk::ExprRef outer, sdk::ExprRef inner) const;
  // The loops enclosing a block, outermost first (empty if the block is gone or has none).
  std::vector<sdk::StmtRef> loops_of(const std::string& block) const;
  // Index of the top-level statement that contains the block (-1 if none).
  int root_item_of(const std::string& block) const;
  // Names of the other blocks that read any of `buffers` (in a store or a condition).
  std::vector<std::string> readers_of(const std::vector<sdk::BufferAccess>& buffers,
                                      const std::string& self) const;

private:
  sdk::Program program_; // keeps the statements alive
  std::vector<sdk::StmtRef> roots_;
  std::map<const mt_expr*, sdk::StmtRef> loops_;
  std::map<std::string, int> block_root_;
  std::map<std::string, std::vector<sdk::StmtRef>> block_loops_;
};

// Whether the expression calls a math function that costs more than an arithmetic operation
// (every one but abs): computing it twice is work, not a register move.
bool calls_costly_math(const sdk::ExprRef& e);

// Whether inlining the block would compute a costly math call more than once: its value calls
// one (calls_costly_math) and more than one other block reads what it writes. AutoInline keeps
// such a block on CPU, and RandomComputeLocation does not draw "inline" for it.
bool inlining_recomputes_math(const sdk::Schedule& sch, sdk::BlockRV block);

// Splits `n` into prime factors, smallest first.
std::vector<int64_t> prime_factors(int64_t n);

} // namespace mt::std_rules
