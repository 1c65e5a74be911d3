// RewriteReductionBlock: splits every reduction block that still carries its init into an
// init block and an update block (decompose_reduction) at its outermost reduction loop, so
// that the init runs once per output element ahead of the reduction loops instead of being
// tested on every iteration. Reductions with a thread-bound reduction loop (cross-thread
// reductions) keep their init, as do blocks the schedule refuses to decompose.
#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::LoopRV;
using sdk::Schedule;

class RewriteReductionBlock : public sdk::Postproc {
public:
  explicit RewriteReductionBlock(std::string_view text) {
    Config("std.RewriteReductionBlock", text).allow_only({});
  }

  bool apply(Schedule& sch) override {
    const std::vector<std::string> names = block_names_in_order(sch);
    for (const std::string& name : names) {
      LoopTree tree(sch);
      std::vector<sdk::StmtRef> nest = tree.loops_of(name);
      if (nest.empty()) continue;
      bool has_init = false;
      for (const sdk::StmtRef& root : tree.root_items())
        root.visit([&](sdk::StmtRef s) {
          if (s.kind() == sdk::StmtKind::BlockRealize && s.block_name() == name && s.block_init())
            has_init = true;
          return !has_init;
        });
      if (!has_init) continue;
      try {
        BlockRV block = sch.get_block(name);
        std::vector<LoopRV> loops = sch.get_loops(block);
        std::vector<LoopRole> roles = loop_roles(sch, block, loops);
        std::optional<size_t> first;
        bool bound_reduce = false;
        for (size_t i = 0; i < loops.size(); ++i) {
          if (!roles[i].reduce) continue;
          if (!first) first = i;
          bound_reduce = bound_reduce || sch.kind(loops[i]) == sdk::ForKind::ThreadBinding;
        }
        if (!first || bound_reduce) continue;
        sch.decompose_reduction(block, loops[*first]);
      } catch (const sdk::ScheduleError&) {
      }
    }
    return true;
  }
};

} // namespace

void register_rewrite_reduction_block(sdk::Registry& r) {
  r.add<RewriteReductionBlock>("std.RewriteReductionBlock",
                               "decompose reductions into init + update blocks");
}

} // namespace mt::std_rules
