// AddRFactor (CPU): a reduction whose spatial extent is too small to keep the cores busy gets
// a second design space in which the fused reduction loop is split in two by
// sample_perfect_tile and the inner part becomes a new spatial dimension of a partial result
// (rfactor); the original block then only combines the partial results. The space without
// rfactor is kept too. The combining block is marked so that RandomComputeLocation computes
// the partial results under it.
//
// Configuration: {"max_jobs_per_core": 16, "max_innermost_factor": 64}.
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

class AddRFactor : public sdk::ScheduleRule {
public:
  explicit AddRFactor(std::string_view text) {
    Config cfg("std.AddRFactor", text);
    cfg.allow_only({"max_jobs_per_core", "max_innermost_factor"});
    max_jobs_per_core_ = cfg.get_int("max_jobs_per_core", 16);
    max_innermost_factor_ = static_cast<int>(cfg.get_int("max_innermost_factor", 64));
  }

  void initialize(const sdk::TuneContext& ctx) override { target_ = TargetInfo::from(ctx); }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (max_jobs_per_core_ <= 0 || !sch.valid(block) || !has_reduce_iter(sch, block)) return {sch};
    if (block_annotation(sch, block, keys::kTilingStructure)) return {sch};
    int64_t parallel_budget = max_jobs_per_core_ * target_.num_cores;
    // Enough outer parallelism already, or too little reduction work to split.
    if (spatial_extent(sch, block) >= parallel_budget || reduce_extent(sch, block) < 2)
      return {sch};
    LoopTree tree(sch);
    std::vector<sdk::StmtRef> nest = tree.loops_of(sch.name_of(block));
    if (nest.empty() || nest.size() != sch.iter_vars(block).size()) return {sch};
    try {
      Schedule s = sch.copy();
      std::vector<LoopRV> loops = s.get_loops(block);
      if (!has_trivial_binding(s, block, loops)) return {sch};
      std::vector<LoopRole> roles = loop_roles(s, block, loops);
      // Spatial loops outside, reduction loops inside (the usual order; else reorder).
      std::vector<LoopRV> spatial, reduce;
      for (size_t i = 0; i < loops.size(); ++i)
        (roles[i].reduce ? reduce : spatial).push_back(loops[i]);
      bool ordered = true;
      for (size_t i = 0; i < spatial.size(); ++i)
        ordered = ordered && !roles[i].reduce;
      if (!ordered) {
        std::vector<LoopRV> order = spatial;
        order.insert(order.end(), reduce.begin(), reduce.end());
        s.reorder(order);
      }
      LoopRV fused = reduce.size() > 1 ? s.fuse(reduce) : reduce[0];
      std::vector<sdk::ExprRV> f = s.sample_perfect_tile(fused, 2, max_innermost_factor_);
      std::vector<LoopRV> parts = s.split(fused, {f[0], f[1]});
      s.rfactor(parts[1], 0);
      s.annotate(block, keys::kRandomComputeProducer, int64_t{1});
      return {sch, s};
    } catch (const sdk::ScheduleError&) {
      return {sch};
    }
  }

private:
  int64_t max_jobs_per_core_ = 16;
  int max_innermost_factor_ = 64;
  TargetInfo target_;
};

} // namespace

void register_add_rfactor(sdk::Registry& r) {
  r.add<AddRFactor>("std.AddRFactor",
                    "CPU: fork a reduction lacking parallelism into rfactor partial sums");
}

} // namespace mt::std_rules
