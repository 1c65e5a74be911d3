// RewriteUnboundBlock (GPU): every root loop nest that still has no thread binding after the
// rules (e.g. a cache write-back left at the root) gets its outer data-parallel loops fused,
// split by min(max threads per block, their extent) and bound to blockIdx.x / threadIdx.x.
// A block without loops stays as it is.
//
// Configuration: {"max_threads_per_block": from the target (1024)}.
#include <algorithm>

#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"
#include "target_info.hpp"
#include "thread_binding.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::Schedule;

class RewriteUnboundBlock : public sdk::Postproc {
public:
  explicit RewriteUnboundBlock(std::string_view text) : config_("std.RewriteUnboundBlock", text) {
    config_.allow_only({"max_threads_per_block"});
    threads_ = config_.get_int("max_threads_per_block", target_.max_threads_per_block);
  }

  void initialize(const sdk::TuneContext& ctx) override {
    target_ = TargetInfo::from(ctx);
    threads_ = config_.get_int("max_threads_per_block", target_.max_threads_per_block);
  }

  bool apply(Schedule& sch) override {
    const std::vector<std::string> names = block_names_in_order(sch);
    for (const std::string& name : names) {
      try {
        BlockRV block = sch.get_block(name);
        std::vector<sdk::LoopRV> loops = bindable_outer_loops(sch, block);
        if (loops.empty()) continue;
        int64_t extent = 1;
        for (sdk::LoopRV l : loops)
          extent *= sch.extent(l);
        bind_block_thread(sch, loops, std::max<int64_t>(1, std::min(threads_, extent)));
      } catch (const sdk::ScheduleError&) {
      }
    }
    return true;
  }

private:
  Config config_;
  TargetInfo target_;
  int64_t threads_ = 1024;
};

} // namespace

void register_rewrite_unbound_block(sdk::Registry& r) {
  r.add<RewriteUnboundBlock>("std.RewriteUnboundBlock", "GPU: bind loop nests that no rule bound");
}

} // namespace mt::std_rules
