// CrossThreadReduction (GPU): a reduction that MultiLevelTiling did not take (softmax, norms:
// no input reuse) gets a second design space in which its fused reduction loop is split by a
// thread count sampled from {4, 8, ..., 512} and the inner part is bound to threadIdx.x, so
// that the threads of a block reduce together; its spatial loops are fused and bound to
// blockIdx.x. The space without it is kept.
//
// Configuration: {"thread_extents": [4, 8, 16, 32, 64, 128, 256, 512]}.
#include "annotation_keys.hpp"
#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"
#include "target_info.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::LoopRV;
using sdk::Schedule;

class CrossThreadReduction : public sdk::ScheduleRule {
public:
  explicit CrossThreadReduction(std::string_view text) {
    Config cfg("std.CrossThreadReduction", text);
    cfg.allow_only({"thread_extents"});
    thread_extents_ = cfg.get_ints("thread_extents", {4, 8, 16, 32, 64, 128, 256, 512});
  }

  void initialize(const sdk::TuneContext& ctx) override { target_ = TargetInfo::from(ctx); }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (!sch.valid(block) || !has_reduce_iter(sch, block)) return {sch};
    if (block_annotation(sch, block, keys::kTilingStructure)) return {sch};
    if (reduce_extent(sch, block) < 2) return {sch};
    std::vector<int64_t> cands;
    for (int64_t t : thread_extents_)
      if (t > 0 && t <= target_.max_threads_per_block) cands.push_back(t);
    if (cands.empty()) return {sch};
    LoopTree tree(sch);
    std::vector<sdk::StmtRef> nest = tree.loops_of(sch.name_of(block));
    if (nest.empty() || nest.size() != sch.iter_vars(block).size()) return {sch};
    try {
      Schedule s = sch.copy();
      std::vector<LoopRV> loops = s.get_loops(block);
      if (!has_trivial_binding(s, block, loops) || any_thread_bound(s, loops)) return {sch};
      std::vector<LoopRole> roles = loop_roles(s, block, loops);
      std::vector<LoopRV> spatial, reduce;
      for (size_t i = 0; i < loops.size(); ++i)
        (roles[i].reduce ? reduce : spatial).push_back(loops[i]);
      for (size_t i = 0; i < spatial.size(); ++i)
        if (roles[i].reduce) return {sch}; // reduction loops must be innermost
      LoopRV fused = reduce.size() > 1 ? s.fuse(reduce) : reduce[0];
      std::vector<double> probs(cands.size(), 1.0 / static_cast<double>(cands.size()));
      sdk::ExprRV threads = s.sample_categorical(cands, probs);
      std::vector<LoopRV> parts = s.split(fused, {-1, threads});
      s.bind(parts[1], "threadIdx.x");
      if (!spatial.empty()) {
        LoopRV outer = spatial.size() > 1 ? s.fuse(spatial) : spatial[0];
        s.bind(outer, "blockIdx.x");
      }
      return {sch, s};
    } catch (const sdk::ScheduleError&) {
      return {sch};
    }
  }

private:
  std::vector<int64_t> thread_extents_;
  TargetInfo target_;
};

} // namespace

void register_cross_thread_reduction(sdk::Registry& r) {
  r.add<CrossThreadReduction>("std.CrossThreadReduction",
                              "GPU: fork a reduction into one bound to threadIdx.x");
}

} // namespace mt::std_rules
