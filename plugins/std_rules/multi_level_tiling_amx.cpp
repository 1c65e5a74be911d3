// MultiLevelTilingAmx (CPU with Intel AMX-BF16, under -fpmath=bf16): a block that computes
//   C[..., i, j] += A[..., i, k] * B[..., k, j]
// in f32 (either operand in either layout, possibly a cast of a bf16 load; leading batch
// dimensions allowed), with i and j multiples of 16 and k of 32, tiled for AMX's tile product
// (16 rows x 16 f32 columns, 32 deep), as MetaSchedule's tensorised tilings do:
//
//   batch x i0 x j0                 (ParallelVectorizeUnroll makes them the parallel loop)
//     B panel <- B                  [K, 16 * j1 * j2] copied, j last: the code generator lays
//                                   it out in the instruction's pairs of rows, rounded to bf16
//     i1 x j1:
//       C block = 0                 (decompose_reduction; C a cache of the block's results)
//       k0:  i2 x j2:               one tile product per (i2, j2): 16 x 16 x 32
//              C[16 x 16] += A[16 x 32] * B_panel[32 x 16]      marked "amx.bf16"
//       out <- epilogue(C)          the write-back, with a single elementwise consumer (bias,
//                                   activation) folded in while the block is in cache
//
// with A copied whole first (its rows along k, rounded to bf16 where it is made). i2 and j2
// (at most 2 each) make the block of accumulators the code generator keeps in tile registers
// through k0 (2 x 2 of them, with 2 tiles of A and 2 of B, fill AMX's 8); i1 and j1 (at most
// max_tiles_per_axis each) are drawn with them by sample_perfect_tile, so the search and
// MutateTileSize explore them. The loops stay: the interpreter checks every schedule as written,
// and the llvm target runs each marked nest as one tdpbf16ps after proving that it is one
// (plugins/llvm_cpu/src/amx_tile.h). The untiled space is returned too, for MultiLevelTiling.
//
// Configuration: {"enabled": "auto" (where the tune context's "tile_products" is "amx.bf16": the
// llvm target says so under -fpmath=bf16 on a CPU with AMX-BF16) | "always" | "never",
// "max_tiles_per_axis": 8}.
#include <optional>

#include "annotation_keys.hpp"
#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::LoopRV;
using sdk::Schedule;

constexpr int64_t kRows = 16, kCols = 16, kDepth = 32;
constexpr int kBlock = 2; // tiles of a block along i and along j (the generator's AmxBlock)
constexpr const char* kIntrinsic = "amx.bf16";
const std::string kRule = "std.MultiLevelTilingAmx";

bool is_f32(sdk::DType t) {
  return t.kind == sdk::DTypeKind::Float && t.bits == 32;
}

// An operand of the product: a load of f32, or of bf16 widened to f32.
bool is_operand(const sdk::ExprRef& o) {
  if (!is_f32(o.dtype())) return false;
  sdk::ExprRef l = o.kind() == sdk::ExprKind::Cast ? o.arg(0) : o;
  return l.kind() == sdk::ExprKind::Load &&
         (is_f32(l.dtype()) || (l.dtype().kind == sdk::DTypeKind::BFloat && l.dtype().bits == 16));
}

// C + x * y (either order of the sum), x and y operands.
bool is_multiply_add(const sdk::ExprRef& v) {
  if (!v || v.kind() != sdk::ExprKind::Add) return false;
  sdk::ExprRef prod = v.arg(1).kind() == sdk::ExprKind::Mul ? v.arg(1) : v.arg(0);
  return prod.kind() == sdk::ExprKind::Mul && is_operand(prod.arg(0)) && is_operand(prod.arg(1));
}

struct Roles {
  MatmulAxes axes;  // A moves with i, B with j
  std::string a, b; // the operands' buffer names
};

std::optional<Roles> recognise(const Schedule& sch, BlockRV block) {
  if (!sch.valid(block) || block_annotation(sch, block, keys::kTilingStructure)) return {};
  std::vector<sdk::BufferAccess> writes = sch.writes(block);
  if (writes.size() != 1 || !is_f32(writes[0].buffer.dtype())) return {};
  auto [body, init] = sch.block_body(block);
  if (!body || body.kind() != sdk::StmtKind::Store || !is_multiply_add(body.value())) return {};
  std::vector<sdk::BufferAccess> ops;
  for (const sdk::BufferAccess& r : sch.reads(block))
    if (r.buffer != writes[0].buffer) {
      if (r.indices.size() != 1) return {};
      ops.push_back(r);
    }
  if (ops.size() != 2) return {};
  std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
  std::optional<MatmulAxes> axes = matmul_axes(ivs, ops[0], ops[1], true);
  if (!axes) return {};
  if (ivs[axes->k].extent % kDepth || ivs[axes->i].extent % kRows || ivs[axes->j].extent % kCols)
    return {};
  Roles m{*axes, ops[0].buffer.name(), ops[1].buffer.name()};
  if (!in_plain_serial_nest(sch, block)) return {};
  // C contiguous along j: j's index is the output's last.
  const auto& out_idx = writes[0].indices.at(0);
  if (out_idx.empty() || !out_idx.back().uses(ivs[m.axes.j].var)) return {};
  return m;
}

// The copy `cache` of operand `name` laid out with the dimension the block indexes by `last`
// innermost (A: k, B: j), as the tile loads them.
void dimension_last(Schedule& sch, BlockRV block, BlockRV cache, const sdk::ExprRef& last) {
  const std::string copy = sch.writes(cache).at(0).buffer.name();
  for (const sdk::BufferAccess& a : sch.reads(block)) {
    if (a.buffer.name() != copy || a.indices.empty()) continue;
    const auto& idx = a.indices[0];
    std::vector<int64_t> chosen;
    for (size_t d = 0; d < idx.size(); ++d)
      if (idx[d].uses(last)) chosen.push_back(static_cast<int64_t>(d));
    if (chosen.size() != 1)
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE, "std.MultiLevelTilingAmx: " + copy +
                                                      ": the tile's axis is not one dimension");
    if (chosen[0] == static_cast<int64_t>(idx.size()) - 1) return;
    if (!sch.can_transform_layout())
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE,
                               "std.MultiLevelTilingAmx: the host cannot transform layouts");
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < static_cast<int64_t>(idx.size()); ++d)
      if (d != chosen[0]) perm.push_back(d);
    perm.push_back(chosen[0]);
    sch.transform_layout(cache, 0, perm);
    return;
  }
}

class MultiLevelTilingAmx : public sdk::ScheduleRule {
public:
  explicit MultiLevelTilingAmx(std::string_view text) : config_("std.MultiLevelTilingAmx", text) {
    config_.allow_only({"enabled", "max_tiles_per_axis"});
    enabled_ = config_.get_string("enabled", "auto");
    if (enabled_ != "auto" && enabled_ != "always" && enabled_ != "never")
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTilingAmx: 'enabled' must be "
                                                  "\"auto\", \"always\" or \"never\"");
    max_tiles_ = static_cast<int>(config_.get_int("max_tiles_per_axis", 8));
    if (max_tiles_ < 1)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.MultiLevelTilingAmx: 'max_tiles_per_axis' must be at least 1");
  }

  void initialize(const sdk::TuneContext& ctx) override {
    std::optional<std::string> products;
    try {
      products = ctx.get_string("tile_products");
    } catch (const sdk::Error&) {
    }
    active_ = enabled_ == "always" || (enabled_ == "auto" && products == kIntrinsic);
  }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (!active_) return {sch};
    std::optional<Roles> roles = recognise(sch, block);
    if (!roles) return {sch};
    Schedule tiled = sch.copy();
    try {
      tile(tiled, block, *roles);
    } catch (const sdk::ScheduleError&) {
      return {sch};
    }
    return {tiled, sch};
  }

private:
  void tile(Schedule& sch, BlockRV block, const Roles& m) const {
    std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
    BlockRV a_copy = sch.cache_read(block, read_index(sch, block, m.a, kRule), "global");
    dimension_last(sch, block, a_copy, ivs[m.axes.k].var);
    BlockRV b_copy = sch.cache_read(block, read_index(sch, block, m.b, kRule), "global");
    dimension_last(sch, block, b_copy, ivs[m.axes.j].var);

    std::vector<LoopRV> loops = sch.get_loops(block);
    auto loop_of = [&](size_t iv) {
      for (LoopRV l : loops)
        if (sch.loop_var(l) == ivs[iv].value) return l;
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE, "std.MultiLevelTilingAmx: " + sch.name_of(block) +
                                                      ": binding not trivial");
    };
    // i, j -> [outer, tiles, block (1 or 2), 16]; k -> [k0, 32].
    auto spatial = [&](LoopRV l, int64_t tile) {
      std::vector<LoopRV> t = sch.split(l, {sdk::Factor(-1), sdk::Factor(tile)});
      std::vector<sdk::ExprRV> f = sch.sample_perfect_tile(t[0], 2, kBlock);
      std::vector<LoopRV> p = sch.split(t[0], {f[0], f[1]});
      std::vector<sdk::ExprRV> g = sch.sample_perfect_tile(p[0], 2, max_tiles_);
      std::vector<LoopRV> q = sch.split(p[0], {g[0], g[1]});
      return std::vector<LoopRV>{q[0], q[1], p[1], t[1]};
    };
    // Every role's loop looked up before the first split (which retires the split loop).
    std::vector<LoopRV> order;
    for (size_t x : m.axes.batch)
      order.push_back(loop_of(x));
    const LoopRV li = loop_of(m.axes.i), lj = loop_of(m.axes.j), lk = loop_of(m.axes.k);
    std::vector<LoopRV> ti = spatial(li, kRows), tj = spatial(lj, kCols);
    std::vector<LoopRV> tk = sch.split(lk, {sdk::Factor(-1), sdk::Factor(kDepth)});
    for (LoopRV l : {ti[0], tj[0], ti[1], tj[1], tk[0], ti[2], tj[2], ti[3], tj[3], tk[1]})
      order.push_back(l);
    sch.reorder(order);
    sch.compute_at(b_copy, tj[0]);
    // The block's results go through a cache written back under (i1, j1), with a single
    // elementwise consumer (bias, activation) folded in: the epilogue runs on the block while
    // it is in cache. Where that is refused the products write C themselves.
    Schedule attempt = sch.copy();
    try {
      BlockRV back = attempt.cache_write(block, 0, "global");
      attempt.reverse_compute_at(back, tj[1]);
      std::vector<BlockRV> consumers = attempt.get_consumers(back);
      if (consumers.size() == 1 && !has_reduce_iter(attempt, consumers[0]))
        attempt.reverse_compute_inline(consumers[0]);
      sch = attempt;
    } catch (const sdk::ScheduleError&) {
    }
    sch.decompose_reduction(block, tk[0]);
    // Marked after decompose_reduction, whose init copies the loops with their annotations.
    sch.annotate(ti[3], sdk::program::kTensorIntrinsicAnnotation, std::string(kIntrinsic));
    sch.annotate(block, keys::kTilingStructure, std::string("amx"));
  }

  Config config_;
  std::string enabled_;
  int max_tiles_ = 8;
  bool active_ = false;
};

} // namespace

void register_multi_level_tiling_amx(sdk::Registry& r) {
  r.add<MultiLevelTilingAmx>(
      "std.MultiLevelTilingAmx",
      "CPU with AMX-BF16 (-fpmath=bf16): tile f32 matmul-like blocks for AMX tile products "
      "(16 x 16 x 32, bf16 operands, f32 sums)");
}

} // namespace mt::std_rules
