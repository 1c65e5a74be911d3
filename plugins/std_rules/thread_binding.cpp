#include "thread_binding.hpp"

#include <map>

#include "block_analysis.hpp"

namespace mt::std_rules {

using sdk::BlockRV;
using sdk::ExprRef;
using sdk::LoopRV;
using sdk::Schedule;

bool under_thread_binding(const Schedule& sch, BlockRV block) {
  LoopTree tree(sch);
  for (const sdk::StmtRef& l : tree.loops_of(sch.name_of(block)))
    if (l.for_kind() == sdk::ForKind::ThreadBinding) return true;
  return false;
}

std::vector<LoopRV> bindable_outer_loops(Schedule& sch, BlockRV block) {
  if (under_thread_binding(sch, block)) return {};
  LoopTree tree(sch);
  std::string name = sch.name_of(block);
  std::vector<sdk::StmtRef> nest = tree.loops_of(name);
  if (nest.empty()) return {};
  // Loop variables bound to reduction iter vars of any block under the outermost loop.
  std::vector<std::string> blocks = tree.blocks_under(nest[0].loop_var());
  std::vector<std::vector<sdk::IterVarInfo>> infos;
  for (const std::string& b : blocks)
    infos.push_back(b == name ? sch.iter_vars(block) : sch.iter_vars(sch.get_block(b)));
  auto drives = [&](ExprRef var, sdk::IterKind kind) {
    for (const auto& ivs : infos)
      for (const sdk::IterVarInfo& iv : ivs)
        if (iv.kind == kind && iv.value && iv.value.uses(var)) return true;
    return false;
  };
  size_t n = 0;
  for (; n < nest.size(); ++n) {
    const sdk::StmtRef& l = nest[n];
    if (l.for_kind() != sdk::ForKind::Serial) break;
    if (n > 0 && !tree.is_only_child(nest[n - 1].loop_var(), l.loop_var())) break;
    if (drives(l.loop_var(), sdk::IterKind::Reduce)) break;
    if (!drives(l.loop_var(), sdk::IterKind::Spatial)) break;
  }
  if (n == 0) return {};
  std::vector<LoopRV> loops = sch.get_loops(block);
  loops.resize(n);
  return loops;
}

void bind_block_thread(Schedule& sch, const std::vector<LoopRV>& loops, sdk::Factor threads) {
  LoopRV fused = loops.size() > 1 ? sch.fuse(loops) : loops[0];
  std::vector<LoopRV> parts = sch.split(fused, {-1, threads});
  sch.bind(parts[0], "blockIdx.x");
  sch.bind(parts[1], "threadIdx.x");
}

} // namespace mt::std_rules
