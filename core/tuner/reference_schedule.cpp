// The baseline and reference schedules of a tuning run (see reference_schedule.h).
#include "core/tuner/reference_schedule.h"

#include <exception>
#include <vector>

#include "core/ir/stmt.h"

namespace mt {

std::shared_ptr<Schedule> outer_loops_parallel(const Function& workload, uint64_t seed) {
  auto sch = std::make_shared<Schedule>(workload, seed);
  for (BlockRV b : sch->all_blocks()) {
    std::vector<LoopRV> loops = sch->get_loops(b);
    if (loops.empty()) continue;
    try {
      sch->parallel(loops.front());
    } catch (const std::exception&) {
      // a reduction outermost: this block stays serial
    }
  }
  return sch;
}

namespace {

// Accesses of a block (its loads, and the stores of body and init) whose index uses `var`
// anywhere but in the last dimension: with `var` the innermost loop, each of them jumps a
// whole row per iteration.
int strided_accesses(const Block& b, const ExprNode* var) {
  int n = 0;
  auto count = [&](const std::vector<Expr>& indices) {
    for (size_t d = 0; d + 1 < indices.size(); ++d)
      if (uses_var(indices[d], var)) {
        ++n;
        return;
      }
  };
  auto walk_exprs = [&](const Stmt& s) {
    visit_stmts(s, [&](const Stmt& st) {
      if (st->kind != StmtKind::Store) return true;
      const auto* store = as<StoreNode>(st);
      count(store->indices);
      post_order_visit(store->value, [&](const Expr& e) {
        if (e->kind == ExprKind::Load) count(e->args);
      });
      return true;
    });
  };
  if (b.init) walk_exprs(b.init);
  walk_exprs(b.body);
  return n;
}

// The loops of a block as the workload builder makes them: one per iter var, in the iter
// vars' order, named and sized after them. Anything else (a block already transformed) is
// left alone.
bool plain_nest(const Schedule& sch, const Block& b, const std::vector<LoopRV>& loops) {
  if (loops.size() != b.iter_vars.size()) return false;
  for (size_t d = 0; d < loops.size(); ++d) {
    const ForNode& f = sch.get(loops[d]);
    if (f.extent != b.iter_vars[d].extent || f.loop_var->name != b.iter_vars[d].var->name)
      return false;
  }
  return true;
}

void move_reductions_outside_last_spatial(Schedule& sch, BlockRV rv) {
  const Block& b = sch.get(rv);
  if (!b.init) return;
  std::vector<LoopRV> loops = sch.get_loops(rv);
  if (!plain_nest(sch, b, loops)) return;
  std::vector<LoopRV> spatial, reduce;
  const ExprNode* last_spatial = nullptr;
  for (size_t d = 0; d < loops.size(); ++d) {
    if (b.iter_vars[d].kind == IterKind::Spatial) {
      spatial.push_back(loops[d]);
      last_spatial = b.iter_vars[d].var.get();
    } else {
      reduce.push_back(loops[d]);
    }
  }
  // The outermost loop stays the parallel one; a block with one spatial loop has nothing to
  // move inside.
  if (spatial.size() < 2 || reduce.empty() || b.iter_vars.front().kind != IterKind::Spatial) return;
  const ExprNode* innermost = b.iter_vars.back().var.get();
  if (b.iter_vars.back().kind != IterKind::Reduce ||
      strided_accesses(b, last_spatial) >= strided_accesses(b, innermost))
    return;
  std::vector<LoopRV> order(spatial.begin(), spatial.end() - 1);
  order.insert(order.end(), reduce.begin(), reduce.end());
  order.push_back(spatial.back());
  try {
    sch.reorder(order);
    sch.decompose_reduction(rv, reduce.front());
  } catch (const std::exception&) {
    // refused (the primitives leave the schedule as it was): this block keeps its order
  }
}

} // namespace

std::shared_ptr<Schedule> spatial_loops_parallel(const Function& workload) {
  auto sch = std::make_shared<Schedule>(workload, 0);
  for (BlockRV rv : sch->all_blocks()) {
    const Block& b = sch->get(rv);
    std::vector<LoopRV> loops = sch->get_loops(rv);
    if (loops.empty() || !plain_nest(*sch, b, loops)) continue;
    size_t lead = 0;
    while (lead < loops.size() && b.iter_vars[lead].kind == IterKind::Spatial)
      ++lead;
    if (lead == loops.size() && lead > 1) --lead; // the innermost stays
    if (lead == 0) continue;
    try {
      std::vector<LoopRV> fused(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(lead));
      sch->parallel(lead > 1 ? sch->fuse(fused) : fused.front());
    } catch (const std::exception&) {
      // refused (the primitives leave the schedule as it was): this block stays serial
    }
  }
  return sch;
}

std::shared_ptr<Schedule> reference_schedule(const Function& workload) {
  std::shared_ptr<Schedule> sch = outer_loops_parallel(workload, 0);
  for (BlockRV b : sch->all_blocks())
    move_reductions_outside_last_spatial(*sch, b);
  return sch;
}

} // namespace mt
