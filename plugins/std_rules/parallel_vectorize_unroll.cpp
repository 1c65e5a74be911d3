// ParallelVectorizeUnroll: marks each root loop nest (on its first block that the rule visits)
// with what RewriteParallelVectorizeUnroll should do to it:
//   meta_schedule.parallel       = max_jobs_per_core x num_cores (CPU): parallel extent budget;
//   meta_schedule.vectorize      = the longest loop to vectorize, in elements: 64 as in
//                                  MetaSchedule, or the target's vector if wider (CPU);
//   meta_schedule.unroll_explicit = an unroll depth sampled uniformly from {0, 16, 64, 512}
//                                  ({..., 1024} on GPU) (unroll_implicit if so configured).
// The parallel budget is also a sampled value, with all probability on the full budget and
// the halvings down to one job per core as zero-probability candidates: the initial space is
// MetaSchedule's, and MutateParallel can move the decision (see sampled_annotation.hpp).
//
// Configuration: {"max_jobs_per_core": 16 (GPU: -1 = none), "max_vectorize_extent": -1
// (= max(64, the target's lanes); 0 = none), "unroll_max_steps": [...], "unroll_explicit": true}.
#include <algorithm>

#include "annotation_keys.hpp"
#include "block_analysis.hpp"
#include "config.hpp"
#include "sampled_annotation.hpp"
#include "std_components.hpp"
#include "target_info.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::Schedule;

class ParallelVectorizeUnroll : public sdk::ScheduleRule {
public:
  explicit ParallelVectorizeUnroll(std::string_view text)
      : config_("std.ParallelVectorizeUnroll", text) {
    config_.allow_only(
        {"max_jobs_per_core", "max_vectorize_extent", "unroll_max_steps", "unroll_explicit"});
    configure();
  }

  void initialize(const sdk::TuneContext& ctx) override {
    target_ = TargetInfo::from(ctx);
    configure();
  }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (!sch.valid(block)) return {sch};
    LoopTree tree(sch);
    std::string name = sch.name_of(block);
    int root = tree.root_item_of(name);
    if (root < 0 || tree.loops_of(name).empty()) return {sch};
    // One set of annotations per root nest: skip if a block of the nest already has them.
    // The other blocks are looked up on a throw-away copy: a recorded get_block of a block
    // whose existence depends on a sampled decision (a staged copy that a re-sampled compute
    // location inlines) would make the trace fail to replay.
    for (const std::string& other : tree.blocks_in(tree.root_items()[static_cast<size_t>(root)])) {
      if (other == name) continue;
      Schedule probe = sch.copy();
      sdk::Annotations anns = probe.annotations(probe.get_block(other));
      if (has_pvu_annotation(anns)) return {sch};
    }
    if (has_pvu_annotation(sch.annotations(block))) return {sch};

    if (max_jobs_per_core_ > 0) {
      std::vector<int64_t> cands;
      std::vector<double> probs;
      for (int64_t jobs = max_jobs_per_core_; jobs >= 1; jobs /= 2) {
        cands.push_back(jobs * target_.num_cores);
        probs.push_back(cands.size() == 1 ? 1.0 : 0.0);
      }
      annotate_sampled(sch, block, keys::kParallel, cands, probs);
    }
    int64_t lanes = vector_lanes(sch, block);
    if (lanes > 1) sch.annotate(block, keys::kVectorize, lanes);
    if (!unroll_steps_.empty()) {
      std::vector<double> probs(unroll_steps_.size(),
                                1.0 / static_cast<double>(unroll_steps_.size()));
      annotate_sampled(sch, block, unroll_explicit_ ? keys::kUnrollExplicit : keys::kUnrollImplicit,
                       unroll_steps_, probs);
    }
    return {sch};
  }

private:
  static bool has_pvu_annotation(const sdk::Annotations& anns) {
    return anns.count(keys::kParallel) || anns.count(keys::kVectorize) ||
           anns.count(keys::kUnrollExplicit) || anns.count(keys::kUnrollImplicit);
  }

  void configure() {
    bool gpu = target_.gpu;
    max_jobs_per_core_ = config_.get_int("max_jobs_per_core", gpu ? -1 : 16);
    max_vectorize_extent_ = config_.get_int("max_vectorize_extent", gpu ? 0 : -1);
    unroll_steps_ =
        config_.get_ints("unroll_max_steps", gpu ? std::vector<int64_t>{0, 16, 64, 512, 1024}
                                                 : std::vector<int64_t>{0, 16, 64, 512});
    unroll_explicit_ = config_.get_bool("unroll_explicit", true);
  }

  // The widest vector for the block's output element type.
  int64_t vector_lanes(const Schedule& sch, BlockRV block) const {
    if (max_vectorize_extent_ == 0) return 0;
    if (max_vectorize_extent_ > 0) return max_vectorize_extent_;
    // MetaSchedule's 64 lanes, or the target's vector if wider. Not the hardware vector
    // width: a 16-lane loop over f32 on AVX2 becomes two ymm registers per operation, which
    // is what a 4 x 16 or 6 x 16 register tile needs (one vector per row caps the tile at
    // 8 x 8 with eight accumulators).
    std::vector<sdk::BufferAccess> writes = sch.writes(block);
    int bytes = writes.empty() ? 4 : writes[0].buffer.dtype().bytes();
    int64_t hw = target_.vector_bytes > 0 ? target_.vector_bytes / std::max(1, bytes) : 0;
    return std::max<int64_t>(64, hw);
  }

  Config config_;
  TargetInfo target_;
  int64_t max_jobs_per_core_ = 16;
  int64_t max_vectorize_extent_ = -1;
  std::vector<int64_t> unroll_steps_;
  bool unroll_explicit_ = true;
};

} // namespace

void register_parallel_vectorize_unroll(sdk::Registry& r) {
  r.add<ParallelVectorizeUnroll>("std.ParallelVectorizeUnroll",
                                 "annotate root nests for parallel / vectorize / unroll");
}

} // namespace mt::std_rules
