// AutoBind (GPU): every root loop nest left without thread binding by the other rules gets its
// outer data-parallel loops fused, split by a thread count sampled from {32, ..., 1024} (up to
// the device's threads per block), and bound to blockIdx.x / threadIdx.x.
//
// Configuration: {"thread_extents": [32, 64, 128, 256, 512, 1024]}.
#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"
#include "target_info.hpp"
#include "thread_binding.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::Schedule;

class AutoBind : public sdk::ScheduleRule {
public:
  explicit AutoBind(std::string_view text) {
    Config cfg("std.AutoBind", text);
    cfg.allow_only({"thread_extents"});
    thread_extents_ = cfg.get_ints("thread_extents", {32, 64, 128, 256, 512, 1024});
  }

  void initialize(const sdk::TuneContext& ctx) override { target_ = TargetInfo::from(ctx); }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (!sch.valid(block)) return {sch};
    std::vector<int64_t> cands;
    for (int64_t t : thread_extents_)
      if (t > 0 && t <= target_.max_threads_per_block) cands.push_back(t);
    if (cands.empty()) return {sch};
    try {
      Schedule s = sch.copy();
      std::vector<sdk::LoopRV> loops = bindable_outer_loops(s, block);
      if (loops.empty()) return {sch};
      std::vector<double> probs(cands.size(), 1.0 / static_cast<double>(cands.size()));
      sdk::ExprRV threads = s.sample_categorical(cands, probs);
      bind_block_thread(s, loops, threads);
      return {s};
    } catch (const sdk::ScheduleError&) {
      return {sch};
    }
  }

private:
  std::vector<int64_t> thread_extents_;
  TargetInfo target_;
};

} // namespace

void register_auto_bind(sdk::Registry& r) {
  r.add<AutoBind>("std.AutoBind", "GPU: bind unbound loop nests to blockIdx.x / threadIdx.x");
}

} // namespace mt::std_rules
