// RewriteCooperativeFetch (GPU): a shared-memory copy that MultiLevelTiling placed inside a
// thread block (annotated meta_schedule.cooperative_fetch = vector length) is spread over the
// block's threads: its own loops are fused, split by the threadIdx.x extent of the enclosing
// binding (and the vector length), the thread part bound to threadIdx.x and the vector part
// vectorised. The annotation is removed. A copy outside any threadIdx.x loop is left as is,
// unless it runs in whole warps (meta_schedule.warp_execution, the tensor-core tiling): then it
// is split over the enclosing threadIdx.y loop's warps and their 32 lanes (or, where the
// annotation's value is more than 1, that many lanes along threadIdx.x: 128 for a warpgroup).
#include "annotation_keys.hpp"
#include "block_analysis.hpp"
#include "config.hpp"
#include "sampled_annotation.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::LoopRV;
using sdk::Schedule;

class RewriteCooperativeFetch : public sdk::Postproc {
public:
  explicit RewriteCooperativeFetch(std::string_view text) {
    Config("std.RewriteCooperativeFetch", text).allow_only({});
  }

  bool apply(Schedule& sch) override {
    const std::vector<std::string> names = block_names_in_order(sch);
    std::optional<TraceView> trace;
    for (const std::string& name : names) {
      BlockRV block = sch.get_block(name);
      sdk::Annotations anns = sch.annotations(block);
      if (!anns.count(keys::kCooperativeFetch)) continue;
      if (!trace) trace.emplace(sch.trace());
      int64_t lanes = resolve_sampled(anns, keys::kCooperativeFetch, *trace).value_or(1);
      unannotate_sampled(sch, block, anns, keys::kCooperativeFetch);
      auto warp_ann = anns.find(keys::kWarpExecution);
      const bool warps = warp_ann != anns.end();
      int64_t warp_threads = 32;
      if (warps) {
        if (const auto* v = std::get_if<int64_t>(&warp_ann->second); v && *v > 1) warp_threads = *v;
        sch.unannotate(block, keys::kWarpExecution);
      }
      try {
        spread(sch, block, name, lanes, warps ? warp_threads : 0);
      } catch (const sdk::ScheduleError&) {
        // The copy stays serial inside each thread: slower, still correct.
      }
    }
    return true;
  }

private:
  // `warp_threads` > 0: the copy runs in whole warps (kWarpExecution): threadIdx.x is that
  // many lanes and the enclosing threadIdx.y loop counts the warps; both are bound.
  static void spread(Schedule& sch, BlockRV block, const std::string& name, int64_t lanes,
                     int64_t warp_threads) {
    const bool warps = warp_threads > 0;
    LoopTree tree(sch);
    std::vector<sdk::StmtRef> nest = tree.loops_of(name);
    int64_t threads = 0, warp_count = 0;
    for (const sdk::StmtRef& l : nest) {
      if (l.for_kind() != sdk::ForKind::ThreadBinding) continue;
      if (l.thread_tag() == "threadIdx.x") threads = l.extent();
      if (l.thread_tag() == "threadIdx.y") warp_count = l.extent();
    }
    if (warps && threads == 0) threads = warp_threads;
    if (!warps) warp_count = 0;
    if (threads <= 0) return;
    // The copy's own loops: the innermost ones that enclose nothing but this block.
    size_t first = nest.size();
    while (first > 0) {
      const sdk::StmtRef& l = nest[first - 1];
      if (l.for_kind() != sdk::ForKind::Serial) break;
      std::vector<std::string> under = tree.blocks_under(l.loop_var());
      if (under.size() != 1 || under[0] != name) break;
      if (first < nest.size() && !tree.is_only_child(l.loop_var(), nest[first].loop_var())) break;
      --first;
    }
    if (first == nest.size()) return;
    std::vector<LoopRV> loops = sch.get_loops(block);
    std::vector<LoopRV> own(loops.begin() + static_cast<long>(first), loops.end());
    LoopRV fused = own.size() > 1 ? sch.fuse(own) : own[0];
    if (warp_count > 0) {
      std::vector<sdk::Factor> f = {sdk::Factor(-1), sdk::Factor(warp_count), sdk::Factor(threads)};
      if (lanes > 1) f.push_back(sdk::Factor(lanes));
      std::vector<LoopRV> parts = sch.split(fused, f);
      sch.bind(parts[1], "threadIdx.y");
      sch.bind(parts[2], "threadIdx.x");
      if (lanes > 1) sch.vectorize(parts[3]);
    } else if (lanes > 1) {
      std::vector<LoopRV> parts = sch.split(fused, {-1, threads, lanes});
      sch.bind(parts[1], "threadIdx.x");
      sch.vectorize(parts[2]);
    } else {
      std::vector<LoopRV> parts = sch.split(fused, {-1, threads});
      sch.bind(parts[1], "threadIdx.x");
    }
  }
};

} // namespace

void register_rewrite_cooperative_fetch(sdk::Registry& r) {
  r.add<RewriteCooperativeFetch>("std.RewriteCooperativeFetch",
                                 "GPU: spread shared-memory copies over the thread block");
}

} // namespace mt::std_rules
