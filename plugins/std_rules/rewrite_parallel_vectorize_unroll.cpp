// RewriteParallelVectorizeUnroll: turns ParallelVectorizeUnroll's annotations into schedule
// primitives, per root loop nest, and removes them:
//   parallel  -- the outermost loops of the nest that are data parallel for every block in it
//                (each the only child of the previous) are fused, as many as fit in the budget
//                (at least one with extent > 1), and the fused loop is parallelised;
//   vectorize -- for each block of the nest, its innermost loop is vectorised if it holds only
//                that block, drives only spatial iteration variables and its extent is
//                2..the annotated width; a longer one is split first, its inner part the
//                largest divisor within the width (a whole number of the target's vectors if
//                one divides), when the block's write is contiguous along it -- a write-back
//                with its epilogue (dense + GELU: 192 or 1536 wide, an erf polynomial per
//                element) or a row's elementwise work (softmax's exp over 128), not a
//                transposing copy, whose stores vectors would scatter;
//   unroll    -- the outermost loop gets pragma_auto_unroll_max_step = the depth and
//                pragma_unroll_explicit = 1 (0 for unroll_implicit), if the depth is > 0.
// Sampled values are read from the trace's decisions (sampled_annotation.hpp). A transformation
// the schedule refuses is skipped; the candidate is never rejected.
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
using sdk::ExprRef;
using sdk::LoopRV;
using sdk::Schedule;

struct Request {
  int64_t parallel = 0;
  int64_t vectorize = 0;
  int64_t unroll = 0;
  bool unroll_explicit = true;
};

class RewriteParallelVectorizeUnroll : public sdk::Postproc {
public:
  explicit RewriteParallelVectorizeUnroll(std::string_view text) {
    Config("std.RewriteParallelVectorizeUnroll", text).allow_only({});
  }

  void initialize(const sdk::TuneContext& ctx) override {
    TargetInfo info = TargetInfo::from(ctx);
    lanes_ = info.f32_lanes();
  }

  bool apply(Schedule& sch) override {
    std::optional<TraceView> trace;
    LoopTree tree(sch);
    for (const sdk::StmtRef& item : tree.root_items()) {
      std::vector<std::string> names = tree.blocks_in(item);
      if (names.empty()) continue;
      // Lookups are recorded; only look where an annotation may be.
      std::vector<BlockRV> blocks;
      std::optional<size_t> carrier;
      for (const std::string& n : names) {
        blocks.push_back(sch.get_block(n));
        if (!carrier && has_request(sch.annotations(blocks.back()))) carrier = blocks.size() - 1;
      }
      if (!carrier) continue;
      if (!trace) trace.emplace(sch.trace());
      Request req = read_request(sch.annotations(blocks[*carrier]), *trace);
      for (BlockRV b : blocks)
        clear_request(sch, b);
      if (item.kind() != sdk::StmtKind::For) continue; // a block without loops
      if (req.parallel > 1) parallelize(sch, blocks, names, *carrier, req.parallel);
      if (req.vectorize > 1)
        for (size_t i = 0; i < blocks.size(); ++i)
          vectorize(sch, blocks[i], names[i], req.vectorize, lanes_);
      if (req.unroll > 0) {
        try {
          LoopRV outer = sch.get_loops(blocks[*carrier]).front();
          sch.annotate(outer, keys::kPragmaAutoUnroll, req.unroll);
          sch.annotate(outer, keys::kPragmaUnrollExplicit, int64_t{req.unroll_explicit ? 1 : 0});
        } catch (const sdk::ScheduleError&) {
        }
      }
    }
    return true;
  }

private:
  static bool has_request(const sdk::Annotations& anns) {
    return anns.count(keys::kParallel) || anns.count(keys::kVectorize) ||
           anns.count(keys::kUnrollExplicit) || anns.count(keys::kUnrollImplicit);
  }

  static Request read_request(const sdk::Annotations& anns, const TraceView& trace) {
    Request r;
    r.parallel = resolve_sampled(anns, keys::kParallel, trace).value_or(0);
    auto v = anns.find(keys::kVectorize);
    if (v != anns.end())
      if (const int64_t* lanes = std::get_if<int64_t>(&v->second)) r.vectorize = *lanes;
    if (std::optional<int64_t> u = resolve_sampled(anns, keys::kUnrollExplicit, trace)) {
      r.unroll = *u;
    } else if (std::optional<int64_t> ui = resolve_sampled(anns, keys::kUnrollImplicit, trace)) {
      r.unroll = *ui;
      r.unroll_explicit = false;
    }
    return r;
  }

  static void clear_request(Schedule& sch, BlockRV b) {
    sdk::Annotations anns = sch.annotations(b);
    if (!has_request(anns)) return;
    unannotate_sampled(sch, b, anns, keys::kParallel);
    unannotate_sampled(sch, b, anns, keys::kUnrollExplicit);
    unannotate_sampled(sch, b, anns, keys::kUnrollImplicit);
    if (anns.count(keys::kVectorize)) sch.unannotate(b, keys::kVectorize);
  }

  // Whether a loop variable drives only spatial iteration variables of the blocks (and some).
  static bool data_parallel(const std::vector<std::vector<sdk::IterVarInfo>>& infos, ExprRef var) {
    bool spatial = false;
    for (const auto& ivs : infos)
      for (const sdk::IterVarInfo& iv : ivs) {
        if (!iv.value || !iv.value.uses(var)) continue;
        if (iv.kind == sdk::IterKind::Reduce) return false;
        spatial = true;
      }
    return spatial;
  }

  static void parallelize(Schedule& sch, const std::vector<BlockRV>& blocks,
                          const std::vector<std::string>& names, size_t carrier, int64_t budget) {
    LoopTree tree(sch);
    std::vector<sdk::StmtRef> nest = tree.loops_of(names[carrier]);
    std::vector<std::vector<sdk::IterVarInfo>> infos;
    for (BlockRV b : blocks)
      infos.push_back(sch.iter_vars(b));
    size_t m = 0;
    int64_t product = 1;
    for (; m < nest.size(); ++m) {
      const sdk::StmtRef& l = nest[m];
      if (l.for_kind() != sdk::ForKind::Serial) break;
      if (m > 0 && !tree.is_only_child(nest[m - 1].loop_var(), l.loop_var())) break;
      if (!data_parallel(infos, l.loop_var())) break;
      if (product > 1 && product * l.extent() > budget) break;
      product *= l.extent();
    }
    if (m == 0 || product <= 1) return;
    try {
      std::vector<LoopRV> loops = sch.get_loops(blocks[carrier]);
      loops.resize(m);
      LoopRV fused = m > 1 ? sch.fuse(loops) : loops[0];
      sch.parallel(fused);
    } catch (const sdk::ScheduleError&) {
    }
  }

  // `width`: the annotated lanes at most; `vector`: the target's f32 lanes.
  static void vectorize(Schedule& sch, BlockRV block, const std::string& name, int64_t width,
                        int64_t vector) {
    try {
      std::vector<LoopRV> loops = sch.get_loops(block);
      if (loops.empty()) return;
      LoopRV inner = loops.back();
      int64_t extent = sch.extent(inner);
      if (extent <= 1 || sch.kind(inner) != sdk::ForKind::Serial) return;
      LoopTree tree(sch);
      std::vector<std::string> under = tree.blocks_under(sch.loop_var(inner));
      if (under.size() != 1 || under[0] != name) return;
      if (!data_parallel({sch.iter_vars(block)}, sch.loop_var(inner))) return;
      if (extent > width) {
        if (!writes_along(sch, block, sch.loop_var(inner))) return;
        int64_t piece = vector_piece(extent, width, vector);
        if (piece < 2) return;
        inner = sch.split(inner, {extent / piece, piece}).back();
      }
      sch.vectorize(inner);
    } catch (const sdk::ScheduleError&) {
    }
  }

  // The largest divisor of `extent` within `width` that is a multiple of `vector`, else the
  // largest divisor within `width`.
  static int64_t vector_piece(int64_t extent, int64_t width, int64_t vector) {
    int64_t any = 1;
    for (int64_t d = std::min(width, extent); d >= 2; --d) {
      if (extent % d != 0) continue;
      if (vector > 1 && d % vector == 0) return d;
      if (any == 1) any = d;
    }
    return any;
  }

  // Whether the iteration variables the loop drives appear in the last index of the block's
  // write and in no other: consecutive iterations store next to each other.
  static bool writes_along(const Schedule& sch, BlockRV block, ExprRef loop_var) {
    std::vector<sdk::BufferAccess> writes = sch.writes(block);
    if (writes.size() != 1 || writes[0].indices.empty()) return false;
    std::vector<ExprRef> driven;
    for (const sdk::IterVarInfo& iv : sch.iter_vars(block))
      if (iv.value && iv.value.uses(loop_var)) driven.push_back(iv.var);
    if (driven.empty()) return false;
    const auto& index = writes[0].indices[0];
    if (index.empty()) return false;
    auto uses_driven = [&](const ExprRef& e) {
      for (const ExprRef& v : driven)
        if (e.uses(v)) return true;
      return false;
    };
    for (size_t d = 0; d + 1 < index.size(); ++d)
      if (uses_driven(index[d])) return false;
    return uses_driven(index.back());
  }

  int64_t lanes_ = 8;
};

} // namespace

void register_rewrite_parallel_vectorize_unroll(sdk::Registry& r) {
  r.add<RewriteParallelVectorizeUnroll>("std.RewriteParallelVectorizeUnroll",
                                        "apply parallel / vectorize / unroll annotations");
}

} // namespace mt::std_rules
