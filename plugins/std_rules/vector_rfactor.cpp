// VectorRFactor (CPU): a reduction that streams one input along its innermost reduction axis
// and reuses it little -- a matrix-vector product such as a linear layer on one token,
// dense(M=1)'s out[j] = sum_k x[k] * W[j, k] -- gets a second design space that reads that
// input in whole vectors along k instead of packing it:
//
//   for outer spatial, j0 (parallel)     j split as [j0, r]: r rows a tile
//     acc[reuse, r, lanes] = 0           the rfactor block's partial sums (local: registers)
//     for ko                             k split as [ko, lanes]
//       for reuse, r (unrolled), lanes (vectorised):
//         acc[..., r, lane] += x[ko * lanes + lane] * W[j0 * R + r, ko * lanes + lane]
//     out[j] = sum over lanes of acc     the original block, computed under j0
//
// MultiLevelTiling's spaces vectorise a spatial axis; here the only spatial axis along which
// W is contiguous is none, so its kernels either gather W or pack it into [K, N] on every
// call -- a copy as large as the whole computation when nothing reuses it (M = 1). Offered when
// the innermost loop is a reduction loop whose variable is the last index (and only there) of
// every input it reads, the largest such input (the streamed one) is indexed by some spatial
// variable but not contiguously along it, and the spatial extents that input does not depend
// on (its reuse: dense's M) multiply to at most max_reuse. The lanes (1 or 2 vectors of the
// target) and the rows r are drawn by sample_categorical; rows are those for which
// reuse x r x 2 accumulators leave room for the operands in the vector registers. The space
// without the rfactor is kept, except for a product of inputs that nothing reuses (below,
// replaces_original).
//
// Reused more than that by one spatial loop (a linear on a whole prompt, dense(M=128)'s x
// rows; loops of extent 1 aside), that loop is tiled too: split as [u0, m], the partial sums
// are computed for an m x r register tile of one vector each (m rows of x, r rows of W, both
// read in vectors along k: no packing), m and r drawn from divisors whose accumulators and
// operands fit the vector registers, and the tiles of W grouped in blocks of b that every m
// rows of x meet in turn (b drawn; tile_rows) -- MultiLevelTiling's spaces kept beside it: its
// kernels pack W on every call, and which wins depends on the shape (docs/std_rules.md).
//
// Configuration: {"max_reuse": 4, "max_rows": 8, "tile_reuse": true, "max_block_tiles": 32,
//                 "keep_original": "auto" | "always" | "never"}.
#include <algorithm>
#include <numeric>
#include <optional>

#include "annotation_keys.hpp"
#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"
#include "target_info.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::ExprRef;
using sdk::LoopRV;
using sdk::Schedule;

// What the rule reads off the block before it transforms a copy of the schedule.
struct StreamedReduction {
  size_t row_loop = 0;             // index among the block's loops of the row axis j
  std::vector<size_t> reuse_loops; // spatial loops the streamed input does not depend on
  int64_t reuse = 1;               // the product of their extents
  int64_t reduce_extent = 0;       // the innermost reduction loop's
  size_t inputs_along_k = 0;       // a product of two (x and W) or more, or a sum of one
  int64_t streamed_bytes = 4;      // of an element of the streamed input (W)
  // reuse > max_reuse: the one reuse loop longer than 1, split as [u0, m]; none otherwise.
  std::optional<size_t> tiled_loop;
  bool tiled() const { return tiled_loop.has_value(); }
};

// The register tile of a tiled reuse: m rows of x by r rows of W, one vector each; and how
// many such tiles of W (b) the m rows of x pass before the next m rows come.
struct TileCandidates {
  std::vector<int64_t> m, r, b;
};

// A block of W's rows read by every m rows of x in turn (TileCandidates::b): at most this
// many bytes, within the L2 of any CPU seen (512 KB on Zen, 2 MB on Sapphire Rapids) beside
// the rows of x.
constexpr int64_t kPanelBytes = 256 * 1024;

class VectorRFactor : public sdk::ScheduleRule {
public:
  explicit VectorRFactor(std::string_view text) {
    Config cfg("std.VectorRFactor", text);
    cfg.allow_only({"max_reuse", "max_rows", "tile_reuse", "max_block_tiles", "keep_original"});
    max_reuse_ = cfg.get_int("max_reuse", 4);
    max_block_tiles_ = cfg.get_int("max_block_tiles", 32);
    if (max_block_tiles_ < 1)
      throw sdk::Error(
          MT_ERROR_INVALID_ARGUMENT,
          "std.VectorRFactor: max_block_tiles must be at least 1 (1: no blocks), not " +
              std::to_string(max_block_tiles_));
    max_rows_ = cfg.get_int("max_rows", 8);
    tile_reuse_ = cfg.get_bool("tile_reuse", true);
    keep_original_ = cfg.get_string("keep_original", "auto");
    if (keep_original_ != "auto" && keep_original_ != "always" && keep_original_ != "never")
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.VectorRFactor: keep_original must be \"auto\", \"always\" or "
                       "\"never\", not \"" +
                           keep_original_ + "\"");
  }

  void initialize(const sdk::TuneContext& ctx) override { target_ = TargetInfo::from(ctx); }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (target_.gpu || max_reuse_ <= 0 || !sch.valid(block) || !has_reduce_iter(sch, block))
      return {sch};
    if (block_annotation(sch, block, keys::kTilingStructure)) return {sch};
    std::optional<StreamedReduction> found = analyse(sch, block);
    if (!found) return {sch};
    int64_t lanes = target_.f32_lanes();
    std::vector<int64_t> lane_cands;
    for (int64_t m : {1, 2})
      if (found->reduce_extent % (lanes * m) == 0 && found->reduce_extent > lanes * m &&
          (m == 1 || !found->tiled()))
        lane_cands.push_back(lanes * m);
    TileCandidates tile;
    if (found->tiled())
      tile = tile_candidates(sch, block, *found);
    else
      tile.r = row_candidates(sch, block, *found);
    if (lane_cands.empty() || tile.r.empty() || (found->tiled() && tile.m.empty())) return {sch};
    try {
      Schedule s = sch.copy();
      build(s, block, *found, lane_cands, tile);
      if (replaces_original(*found)) return {s};
      return {sch, s};
    } catch (const sdk::ScheduleError&) {
      return {sch};
    }
  }

private:
  // A product read once (M = 1: no row of x reuses a row of W) has nothing to gain from
  // MultiLevelTiling's spaces, whose packing copies all of W on every call, and their many
  // tile decisions crowd this space's few dozen candidates out of the search: measured on
  // dense(M=1, N=2048 / 32000, K=768), 64 to 128 trials of both found no candidate of this
  // space, where it alone reaches its best in about 30 (docs/std_rules.md). A sum of one input
  // (a norm's, softmax's) keeps its spaces.
  bool replaces_original(const StreamedReduction& f) const {
    if (keep_original_ == "always") return false;
    if (keep_original_ == "never") return true;
    return f.reuse == 1 && f.inputs_along_k >= 2;
  }

  std::optional<StreamedReduction> analyse(const Schedule& sch, BlockRV block) const {
    Schedule probe = sch.copy();
    std::vector<LoopRV> loops = probe.get_loops(block);
    std::vector<sdk::IterVarInfo> ivs = probe.iter_vars(block);
    if (loops.empty() || loops.size() != ivs.size() || !has_trivial_binding(probe, block, loops))
      return std::nullopt;
    std::vector<LoopRole> roles = loop_roles(probe, block, loops);
    // Spatial loops outside, reduction loops inside, as a workload states them.
    size_t first_reduce = loops.size();
    for (size_t i = 0; i < roles.size(); ++i)
      if (roles[i].reduce && first_reduce == loops.size())
        first_reduce = i;
      else if (!roles[i].reduce && first_reduce != loops.size())
        return std::nullopt;
    if (first_reduce == 0 || first_reduce == loops.size()) return std::nullopt;
    ExprRef k = ivs.back().var;
    std::vector<sdk::BufferAccess> writes = probe.writes(block);
    if (writes.size() != 1) return std::nullopt;
    const std::string out = writes[0].buffer.name();
    // Every input read along k reads it as its last index, and nowhere else.
    const sdk::BufferAccess* streamed = nullptr;
    int64_t streamed_size = 0;
    size_t inputs = 0;
    const std::vector<sdk::BufferAccess> reads = probe.reads(block);
    for (const sdk::BufferAccess& r : reads) {
      if (r.buffer.name() == out) continue;
      bool along_k = false;
      for (const std::vector<ExprRef>& index : r.indices) {
        if (index.empty()) continue; // a scalar
        for (size_t d = 0; d + 1 < index.size(); ++d)
          if (index[d].uses(k)) return std::nullopt;
        if (index.back().uses(k)) {
          if (index.back() != k) return std::nullopt;
          along_k = true;
        }
      }
      if (!along_k) continue;
      ++inputs;
      int64_t size = 1;
      for (int64_t e : r.buffer.shape())
        size *= e;
      if (size > streamed_size) streamed = &r, streamed_size = size;
    }
    if (!streamed) return std::nullopt;
    StreamedReduction found;
    found.reduce_extent = ivs.back().extent;
    found.inputs_along_k = inputs;
    found.streamed_bytes = streamed->buffer.dtype().bytes();
    bool has_row = false;
    for (size_t i = 0; i < first_reduce; ++i) {
      bool used = false;
      for (const std::vector<ExprRef>& index : streamed->indices)
        for (const ExprRef& e : index)
          used = used || e.uses(ivs[i].var);
      if (used) {
        found.row_loop = i, has_row = true;
      } else {
        found.reuse_loops.push_back(i);
        found.reuse *= ivs[i].extent;
      }
    }
    if (!has_row) return std::nullopt;
    if (found.reuse > max_reuse_) {
      // One loop to tile; loops of extent 1 (a model's batch of one: [1, seq, features])
      // reuse nothing.
      std::vector<size_t> wide;
      for (size_t i : found.reuse_loops)
        if (ivs[i].extent > 1) wide.push_back(i);
      if (!tile_reuse_ || wide.size() != 1) return std::nullopt;
      found.tiled_loop = wide[0];
    }
    return found;
  }

  // For a tiled reuse: the largest m x r register tile (m dividing the reused loop, r the row
  // loop) whose accumulators, r vectors of W held over the m rows and one of x fit the vector
  // registers, and the divisors up to those limits (m from 2): since the count grows with m
  // and with r, any pair of them fits too. Of equal tiles, the one with more rows of x.
  TileCandidates tile_candidates(const Schedule& sch, BlockRV block,
                                 const StreamedReduction& f) const {
    std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
    const int64_t reuse_extent = ivs[*f.tiled_loop].extent;
    const int64_t row_extent = ivs[f.row_loop].extent;
    auto divisors = [](int64_t extent, int64_t from, int64_t limit) {
      std::vector<int64_t> out;
      for (int64_t d = from; d <= std::min(limit, extent); ++d)
        if (extent % d == 0) out.push_back(d);
      return out;
    };
    const int64_t regs = target_.vector_registers;
    int64_t best_m = 0, best_r = 0;
    for (int64_t m : divisors(reuse_extent, 2, max_rows_))
      for (int64_t r : divisors(row_extent, 1, max_rows_))
        if (m * r + r + 1 <= regs &&
            (m * r > best_m * best_r || (m * r == best_m * best_r && m > best_m)))
          best_m = m, best_r = r;
    if (best_m == 0) return {};
    TileCandidates tile{divisors(reuse_extent, 2, best_m), divisors(row_extent, 1, best_r), {}};
    // b tiles of W per block: powers of two that divide the row extent over every r drawn,
    // the block's b x r rows of W no larger than kPanelBytes (it is read once per m rows of
    // x, from L2, while those rows stay in L1). b = 1, the plain order (u0 inside j0), is
    // always one (a reduction so long that one tile of W is over the limit).
    int64_t rows_lcm = 1;
    for (int64_t r : tile.r)
      rows_lcm = std::lcm(rows_lcm, r);
    const int64_t panel_row_bytes = tile.r.back() * f.reduce_extent * f.streamed_bytes;
    for (int64_t b = 1; b <= max_block_tiles_; b *= 2)
      if (row_extent % (rows_lcm * b) == 0 && (b == 1 || b * panel_row_bytes <= kPanelBytes))
        tile.b.push_back(b);
    return tile;
  }

  // Row counts dividing the row extent whose accumulators (reuse x rows x at most 2 vectors)
  // leave four registers for the operands.
  std::vector<int64_t> row_candidates(const Schedule& sch, BlockRV block,
                                      const StreamedReduction& f) const {
    int64_t extent = sch.iter_vars(block)[f.row_loop].extent;
    int64_t budget = std::max<int64_t>(1, target_.vector_registers - 4);
    std::vector<int64_t> rows;
    for (int64_t r = 1; r <= std::min(max_rows_, extent); ++r)
      if (extent % r == 0 && f.reuse * r * 2 <= budget) rows.push_back(r);
    return rows;
  }

  static std::vector<double> uniform(size_t n) {
    return std::vector<double>(n, 1.0 / static_cast<double>(n));
  }

  // The new space: k split by the lanes and rfactored, the combining block tiled by rows, the
  // partial sums of a tile computed under it as a register tile.
  static void build(Schedule& s, BlockRV block, const StreamedReduction& f,
                    const std::vector<int64_t>& lane_cands, const TileCandidates& tile) {
    size_t n_spatial = 0;
    for (const sdk::IterVarInfo& iv : s.iter_vars(block))
      n_spatial += iv.kind == sdk::IterKind::Spatial ? 1 : 0;
    sdk::ExprRV lanes = s.sample_categorical(lane_cands, uniform(lane_cands.size()));
    LoopRV k = s.get_loops(block).back();
    LoopRV lane = s.split(k, {sdk::Factor(int64_t{-1}), sdk::Factor(lanes)})[1];
    // Partial sums indexed [out..., lane]: contiguous along the lanes, as the input is.
    BlockRV rf = s.rfactor(lane, static_cast<int>(s.writes(block)[0].buffer.ndim()));
    LoopRV at = tile_rows(s, block, f, n_spatial, tile);
    s.compute_at(rf, at);
    s.set_scope(rf, 0, "local");
    order_register_tile(s, rf, at, f, n_spatial);
    // MultiLevelTiling and RandomComputeLocation leave the combining block as it is.
    s.annotate(block, keys::kTilingStructure, std::string("vector_rfactor"));
  }

  // The combining block (the original name) has its own nest [spatial..., lane]: its row loop
  // split as [j0, rows], the reused loops moved inside j0. Where the reuse is tiled, the row
  // loop is split as [j0, jb, rows] and the reused one as [u0, m], ordered j0, u0, jb, m,
  // rows: a block of jb x rows rows of W stays in L2 while every m rows of x pass it, and those
  // m rows stay in L1 while they meet the block's jb register tiles (jb = 1: a tile of W in L1
  // while every row of x passes it, from L2). Returns the loop the partial sums are computed
  // under: j0, or jb where the reuse is tiled.
  static LoopRV tile_rows(Schedule& s, BlockRV block, const StreamedReduction& f, size_t n_spatial,
                          const TileCandidates& tile) {
    auto reused = [&](size_t i) {
      return std::find(f.reuse_loops.begin(), f.reuse_loops.end(), i) != f.reuse_loops.end();
    };
    sdk::ExprRV r = s.sample_categorical(tile.r, uniform(tile.r.size()));
    std::optional<sdk::ExprRV> m;
    if (f.tiled()) m = s.sample_categorical(tile.m, uniform(tile.m.size()));
    std::vector<LoopRV> wl = s.get_loops(block);
    // Tiled: j as [j0, jb, r] (b tiles a block), else [j0, r].
    std::vector<sdk::Factor> j_factors{sdk::Factor(int64_t{-1}), sdk::Factor(r)};
    if (f.tiled())
      j_factors.insert(j_factors.begin() + 1,
                       sdk::Factor(s.sample_categorical(tile.b, uniform(tile.b.size()))));
    std::vector<LoopRV> j = s.split(wl[f.row_loop], j_factors);
    std::vector<LoopRV> u;
    if (f.tiled()) {
      size_t at = *f.tiled_loop < f.row_loop ? *f.tiled_loop : *f.tiled_loop + j.size() - 1;
      u = s.split(s.get_loops(block)[at], {sdk::Factor(int64_t{-1}), sdk::Factor(*m)});
    }
    wl = s.get_loops(block);
    // wl's index of the original spatial loop i, after the splits before it.
    auto loop_of = [&](size_t i) {
      size_t at = i;
      if (i > f.row_loop) at += j.size() - 1;
      if (f.tiled() && i > *f.tiled_loop) ++at;
      return wl[at];
    };
    std::vector<LoopRV> order, inner;
    for (size_t i = 0; i < n_spatial; ++i) {
      if (i == f.row_loop)
        order.push_back(j[0]);
      else if (f.tiled_loop == i)
        inner.insert(inner.end(), {u[0], j[1], u[1]}); // u0, jb, m
      else
        (reused(i) ? inner : order).push_back(loop_of(i));
    }
    order.insert(order.end(), inner.begin(), inner.end());
    order.push_back(j.back());
    order.push_back(wl.back());
    s.reorder(order);
    return f.tiled() ? j[1] : j[0];
  }

  // The partial-sum block's loops under j0 (the local buffer compaction shrinks to the tile):
  // reductions outside (ko last), then the reused rows, the rows, the lanes -- an unrolled
  // register tile of vectors. Loops are told apart by the iteration variable they drive.
  static void order_register_tile(Schedule& s, BlockRV rf, LoopRV j0, const StreamedReduction& f,
                                  size_t n_spatial) {
    std::vector<LoopRV> rl = s.get_loops(rf);
    std::vector<sdk::IterVarInfo> ivs = s.iter_vars(rf); // [out dims..., lane, reductions...]
    size_t outer = 0;
    sdk::ExprRef j0_var = s.loop_var(j0);
    while (outer < rl.size() && s.loop_var(rl[outer]) != j0_var)
      ++outer;
    std::vector<LoopRV> reductions, reuse_rows, row, lane_loop;
    for (size_t l = outer + 1; l < rl.size(); ++l) {
      sdk::ExprRef v = s.loop_var(rl[l]);
      size_t which = ivs.size();
      for (size_t i = 0; i < ivs.size(); ++i)
        if (ivs[i].value && ivs[i].value.uses(v)) which = i;
      if (which == ivs.size()) continue;
      if (which > n_spatial)
        reductions.push_back(rl[l]);
      else if (which == n_spatial)
        lane_loop.push_back(rl[l]);
      else if (which == f.row_loop)
        row.push_back(rl[l]);
      else
        reuse_rows.push_back(rl[l]);
    }
    std::vector<LoopRV> tile = reductions;
    tile.insert(tile.end(), reuse_rows.begin(), reuse_rows.end());
    tile.insert(tile.end(), row.begin(), row.end());
    tile.insert(tile.end(), lane_loop.begin(), lane_loop.end());
    if (tile.size() > 1) s.reorder(tile);
  }

  int64_t max_reuse_ = 4;
  int64_t max_rows_ = 8;
  int64_t max_block_tiles_ = 32; // b at most (1: no blocks)
  bool tile_reuse_ = true;
  std::string keep_original_ = "auto";
  TargetInfo target_;
};

} // namespace

void register_vector_rfactor(sdk::Registry& r) {
  r.add<VectorRFactor>("std.VectorRFactor",
                       "CPU: fork a matrix-vector-like reduction into vector-lane partial sums");
}

} // namespace mt::std_rules
