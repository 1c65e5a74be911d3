// MultiLevelTilingTensorCore (GPU with tensor cores): a block that computes
//   C[..., i, j] += f32(A[..., i, k]) * f32(B[..., k, j])
// on f16 operands, or bf16 ones on sm_80+ (either operand in either layout: A[i, k] or A[k, i],
// B[k, j] or B[j, k];
// leading batch dimensions allowed) with i, j and k multiples of 16, tiled for WMMA's warp-wide
// 16x16x16 operations, as MetaSchedule's tensor-core tiling does:
//
//   blockIdx.x   batch x i0 x j0                  block tile (16*wi*fi) x (16*wj*fj)
//     threadIdx.y  i1 x j1                        one warp per (i1, j1): fi x fj fragments
//       acc = 0                                   wmma.fill  (decompose_reduction)
//       k0:  A, B tiles -> shared                 spread over the block's warps and lanes
//                                                 (RewriteCooperativeFetch, warp execution),
//                                                 software-pipelined: fetched stages-1 k0
//                                                 steps ahead, asynchronously on sm_80+
//         k1:  a, b fragments <- shared           wmma.load_a / wmma.load_b
//              acc += a * b                       wmma.mma, fi x fj of them
//       C <- acc                                  wmma.store (cache_write + reverse_compute_at)
//
// Every 16x16(x16) nest is marked with the program annotation kTensorIntrinsicAnnotation; the
// loops stay, so the interpreter still runs the schedule as written and checks it, and the GPU
// generator emits the instruction after recognising the nest. The tile sizes are sampled
// (sample_perfect_tile), so the search and MutateTileSize explore them like any other.
// The space without tensor cores is returned too: MultiLevelTiling tiles it as usual.
//
// Configuration: {"enabled": "auto" | "always", "max_warps_per_axis": warps per block along
// i and along j, "max_fragments_per_axis": 4 (fragments per warp along i and along j),
// "max_k_tiles": 16-wide k steps per shared tile -- both 2 (the largest block tile 128x128x32:
// 38 KB of shared memory in two pipeline slots) unless the block may have 96 KB or more, then
// 4 (up to 256x256x64), "pad_shared": true
// (storage_align the shared operand tiles against bank conflicts), "pipeline_stages": k0's
// software pipeline (core's software_pipeline.h): shared tiles in flight at once, one value or a
// list the search samples from; [2, 3, 4] where a block may have 96 KB of shared memory or more
// (CUDA's opt-in), else 2; 1 turns it off, "vector_load_lens": the f16 elements each lane
// moves per step of the cooperative fetch into shared memory, sampled uniformly: [4, 8] (8 and
// 16 bytes, cp.async's wide forms; a lane of 1 or 2 elements is a scalar copy, up to 8 times
// the instructions for nothing, which the search used to try half of the time)}.
// "auto" (the default) applies it where the tune context says the target has tensor cores (an
// "arch" of sm_70 or newer); "always" applies it on any GPU target, e.g. OpenCL, where the
// operations are emulated by loops -- how the schedules are checked on a machine without an NVIDIA
// GPU.
//
// On sm_90 (Hopper) a second design space uses the warpgroup MMA (wgmma, "wgmma": "auto" |
// "always" | "never"; "auto" where the arch is sm_90 or newer, "always" also on other GPU
// targets, emulated):
//
//   blockIdx.x   batch x i0 x j0                  block tile (64*wi*fi) x N
//     threadIdx.y  i1                             one warpgroup (128 threads) per i1: fi
//                                                 64xN accumulator tiles in its registers
//       acc = 0                                   wgmma.fill
//       k0:  A, B tiles -> shared                 as core matrices (tensor_op.h), fetched 16
//                                                 bytes a lane, the 8 lanes of a shared-memory
//                                                 phase on 8 rows of one core matrix (no bank
//                                                 conflict), pipelined as above with a spare
//                                                 slot: one tile's products run on while the
//                                                 next tile's are issued
//         k1:  acc += A_s * B_s                   wgmma.mma: m64nNk16 per 16-wide k step, the
//                                                 operands read from shared memory
//       C <- acc                                  wgmma.store
//
// N is drawn from "wgmma_cols" ([64, 128, 256], those dividing j), wi and fi from 1 or 2 (fi
// 1 when N is 256: a thread holds at most 128 accumulator floats), k1 up to max_k_tiles.
// "wgmma_swizzle" ("both" | "always" | "never"): "both" makes two such spaces, one with the
// operands as plain core matrices and one, with k-tiles of 64, that asks for the 128-byte
// swizzled layout (kWgmmaSwizzleAnnotation; the layout CUTLASS and cuBLAS use, whose
// descriptor reads fewer bank-conflicting lines), so that the search measures both.
// "wgmma_tma" ("never", the default, | "both" | "always"): "both" makes the swizzled space twice,
// once with the threads' own asynchronous copies and once asking for the fetches to be copies
// by Hopper's tensor memory accelerator (kWgmmaTmaAnnotation: one thread issues a box copy that
// swizzles the tile itself, counted on an mbarrier). "wgmma_producer" ("never", the default, |
// "both" | "always") likewise doubles the TMA space, once asking for those copies to be issued
// by a producer warpgroup of their own (kWgmmaProducerAnnotation: warp specialisation, the
// generator's producer_warpgroup.h). Both default to "never" until a device has shown them
// right and fast (bench/gpu/on_device.sh turns them on for its run when their device tests
// pass).
#include <optional>
#include <set>

#include "annotation_keys.hpp"
#include "block_analysis.hpp"
#include "config.hpp"
#include "metatune/sdk/cuda_arch.hpp"
#include "sampled_annotation.hpp"
#include "std_components.hpp"
#include "target_info.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::LoopRV;
using sdk::Schedule;

const std::string kRule = "std.MultiLevelTilingTensorCore";
constexpr int64_t kTile = 16;
constexpr int64_t kWarp = 32;
constexpr int64_t kGroupRows = 64;     // wgmma's m64
constexpr int64_t kSwizzleK = 64;      // k-tile of the swizzled space: 128 bytes of f16
constexpr int64_t kGroupThreads = 128; // a warpgroup

// The roles of a matmul-like block's iteration variables and reads.
struct MatmulRoles {
  size_t i = 0, j = 0, k = 0; // positions in iter_vars
  std::vector<size_t> batch;  // the other spatial ones, outermost first
  std::string a, b;           // the f16 (or bf16) operands' buffer names
  sdk::DType operand;         // their type
};

// The 16-bit operand types WMMA multiplies: f16, and bf16 on sm_80+.
bool is_f16(sdk::DType t) {
  return (t.kind == sdk::DTypeKind::Float || t.kind == sdk::DTypeKind::BFloat) && t.bits == 16;
}
bool is_f32(sdk::DType t) {
  return t.kind == sdk::DTypeKind::Float && t.bits == 32;
}

// The value of the block's store: C + f32(A) * f32(B) (either order of the sum and product).
bool is_widened_multiply_add(const sdk::ExprRef& v) {
  if (!v || v.kind() != sdk::ExprKind::Add) return false;
  sdk::ExprRef prod = v.arg(1).kind() == sdk::ExprKind::Mul ? v.arg(1) : v.arg(0);
  if (prod.kind() != sdk::ExprKind::Mul) return false;
  for (size_t x = 0; x < 2; ++x) {
    sdk::ExprRef o = prod.arg(x);
    if (o.kind() != sdk::ExprKind::Cast || !is_f32(o.dtype())) return false;
    sdk::ExprRef l = o.arg(0);
    if (l.kind() != sdk::ExprKind::Load || !is_f16(l.dtype())) return false;
  }
  return true;
}

std::optional<MatmulRoles> recognise(const Schedule& sch, BlockRV block) {
  if (!sch.valid(block) || block_annotation(sch, block, keys::kTilingStructure)) return {};
  std::vector<sdk::BufferAccess> writes = sch.writes(block);
  if (writes.size() != 1 || !is_f32(writes[0].buffer.dtype())) return {};
  auto [body, init] = sch.block_body(block);
  if (!body || body.kind() != sdk::StmtKind::Store || !is_widened_multiply_add(body.value()))
    return {};
  std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
  std::vector<sdk::BufferAccess> ops;
  for (const sdk::BufferAccess& r : sch.reads(block))
    if (r.buffer != writes[0].buffer) {
      if (!is_f16(r.buffer.dtype()) || r.indices.size() != 1) return {};
      ops.push_back(r);
    }
  if (ops.size() != 2 || ops[0].buffer.dtype() != ops[1].buffer.dtype()) return {};
  std::optional<MatmulAxes> axes = matmul_axes(ivs, ops[0], ops[1], false);
  if (!axes) return {};
  for (size_t x : {axes->i, axes->j, axes->k})
    if (ivs[x].extent % kTile) return {};
  MatmulRoles m;
  m.operand = ops[0].buffer.dtype();
  m.i = axes->i;
  m.j = axes->j;
  m.k = axes->k;
  m.batch = axes->batch;
  m.a = ops[0].buffer.name();
  m.b = ops[1].buffer.name();
  if (!in_plain_serial_nest(sch, block)) return {};
  return m;
}

inline constexpr int64_t kDeepPipelineShared = 96 * 1024;

// A wgmma design space's operand tiles: 128-byte swizzled, copied by TMA, and those copies
// issued by a producer warpgroup.
struct GroupLayout {
  bool swizzle = false, tma = false, producer = false;
};

class MultiLevelTilingTensorCore : public sdk::ScheduleRule {
public:
  explicit MultiLevelTilingTensorCore(std::string_view text)
      : config_("std.MultiLevelTilingTensorCore", text) {
    config_.allow_only({"enabled", "max_warps_per_axis", "max_fragments_per_axis", "max_k_tiles",
                        "pad_shared", "pipeline_stages", "vector_load_lens", "wgmma", "wgmma_cols",
                        "wgmma_swizzle", "wgmma_tma", "wgmma_producer"});
    wgmma_ = config_.get_string("wgmma", "auto");
    if (wgmma_ != "auto" && wgmma_ != "always" && wgmma_ != "never")
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTilingTensorCore: 'wgmma' must "
                                                  "be \"auto\", \"always\" or \"never\"");
    const std::string swizzle = config_.get_string("wgmma_swizzle", "both");
    if (swizzle == "both")
      group_swizzles_ = {true, false};
    else if (swizzle == "always" || swizzle == "never")
      group_swizzles_ = {swizzle == "always"};
    else
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTilingTensorCore: "
                                                  "'wgmma_swizzle' must be \"both\", \"always\" or "
                                                  "\"never\"");
    const std::string tma = config_.get_string("wgmma_tma", "never");
    if (tma != "both" && tma != "always" && tma != "never")
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTilingTensorCore: 'wgmma_tma' "
                                                  "must be \"both\", \"always\" or \"never\"");
    const std::string producer = config_.get_string("wgmma_producer", "never");
    if (producer != "both" && producer != "always" && producer != "never")
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTilingTensorCore: "
                                                  "'wgmma_producer' must be \"both\", \"always\" "
                                                  "or \"never\"");
    // One wgmma space per layout: TMA copies lay out only the swizzled tiles, and only TMA
    // copies have a producer warpgroup.
    for (bool swizzle : group_swizzles_) {
      if (swizzle && tma != "never") {
        if (producer != "never") group_layouts_.push_back({true, true, true});
        if (producer != "always") group_layouts_.push_back({true, true, false});
      }
      if (!swizzle || tma != "always") group_layouts_.push_back({swizzle, false, false});
    }
    group_cols_ = config_.get_ints("wgmma_cols", group_cols_);
    for (int64_t n : group_cols_)
      if (n < 16 || n > 256 || n % 16)
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTilingTensorCore: "
                                                    "'wgmma_cols' holds multiples of 16 up to 256");
    pad_shared_ = config_.get_bool("pad_shared", true);
    if (config_.is_list("pipeline_stages"))
      stages_ = config_.get_ints("pipeline_stages", {});
    else if (config_.has("pipeline_stages"))
      stages_ = {config_.get_int("pipeline_stages", 2)};
    for (int64_t s : stages_)
      if (s < 1 || s > 8)
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTilingTensorCore: "
                                                    "'pipeline_stages' must be 1 to 8 (or a list "
                                                    "of such)");
    fetch_lanes_ = config_.get_ints("vector_load_lens", fetch_lanes_);
    for (int64_t l : fetch_lanes_)
      if (l != 1 && l != 2 && l != 4 && l != 8)
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTilingTensorCore: "
                                                    "'vector_load_lens' holds 1, 2, 4 or 8 (f16 "
                                                    "elements, up to 16 bytes)");
    if (fetch_lanes_.empty())
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.MultiLevelTilingTensorCore: 'vector_load_lens' is empty");
    enabled_ = config_.get_string("enabled", "auto");
    if (enabled_ != "auto" && enabled_ != "always")
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.MultiLevelTilingTensorCore: 'enabled' must be \"auto\" or \"always\"");
    max_warps_ = static_cast<int>(config_.get_int("max_warps_per_axis", 2));
    max_frags_ = static_cast<int>(config_.get_int("max_fragments_per_axis", 4));
    max_k_ = static_cast<int>(config_.get_int("max_k_tiles", 2));
    if (max_warps_ < 1 || max_frags_ < 1 || max_k_ < 1)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.MultiLevelTilingTensorCore: the maxima must be at least 1");
  }

  void initialize(const sdk::TuneContext& ctx) override {
    TargetInfo info = TargetInfo::from(ctx);
    sm_ = sm_version(ctx);
    active_ = info.gpu && (enabled_ == "always" || sm_ >= 70);
    group_active_ = info.gpu && (wgmma_ == "always" || (wgmma_ == "auto" && sm_ >= 90));
    // Deeper pipelines where the block may have the shared memory for them (CUDA from sm_70,
    // sizing it at launch beyond 48 KB): a 128x128x32 tile takes 19 KB a slot.
    const bool roomy = info.max_shared_memory_per_block >= kDeepPipelineShared;
    if (!config_.has("pipeline_stages"))
      stages_ = roomy ? std::vector<int64_t>{2, 3, 4} : std::vector<int64_t>{2};
    // And larger block tiles (up to 256x256x64; VerifyGPUCode drops what exceeds the limit).
    if (!config_.has("max_warps_per_axis")) max_warps_ = roomy ? 4 : 2;
    if (!config_.has("max_k_tiles")) max_k_ = roomy ? 4 : 2;
  }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (!active_) return {sch};
    std::optional<MatmulRoles> roles = recognise(sch, block);
    if (!roles) return {sch};
    const bool bf16 = roles->operand.kind == sdk::DTypeKind::BFloat;
    if (bf16 && enabled_ != "always" && sm_ < 80) return {sch};
    std::vector<Schedule> out;
    if (group_active_)
      for (const GroupLayout& layout : group_layouts_) {
        Schedule wg = sch.copy();
        try {
          tile_warpgroups(wg, block, *roles, layout);
          out.push_back(wg);
        } catch (const sdk::ScheduleError&) {
        }
      }
    Schedule tc = sch.copy();
    try {
      tile(tc, block, *roles);
      out.push_back(tc);
    } catch (const sdk::ScheduleError&) {
    }
    out.push_back(sch);
    return out;
  }

private:
  // The target's "arch" as a number (sm_80 -> 80), 0 if it is none: sm_70 (Volta) and later
  // have WMMA's f16 16x16x16 shape, sm_80 (Ampere) and later its bf16 one.
  static int sm_version(const sdk::TuneContext& ctx) {
    std::optional<std::string> arch = ctx.get_string("arch");
    return arch ? sdk::sm_version(*arch) : 0;
  }

  // The next tiles fetched while this one is computed on (lowering builds the pipeline). A
  // sampled depth is linked to its sample, which std.RewriteSoftwarePipeline resolves.
  void annotate_pipeline(Schedule& sch, LoopRV k0) const {
    if (stages_.size() > 1)
      annotate_sampled(
          sch, k0, sdk::program::kSoftwarePipelineStages, stages_,
          std::vector<double>(stages_.size(), 1.0 / static_cast<double>(stages_.size())));
    else if (stages_[0] > 1)
      sch.annotate(k0, sdk::program::kSoftwarePipelineStages, stages_[0]);
  }

  // The block's loops by role (the binding is trivial: recognise() checked it).
  struct RoleLoops {
    LoopRV i, j, k;
    std::vector<LoopRV> batch;
  };
  static RoleLoops loops_by_role(Schedule& sch, BlockRV block, const MatmulRoles& m) {
    std::vector<LoopRV> loops = sch.get_loops(block);
    std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
    auto loop_of = [&](size_t iv) {
      for (LoopRV l : loops)
        if (sch.loop_var(l) == ivs[iv].value) return l;
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE, "std.MultiLevelTilingTensorCore: " +
                                                      sch.name_of(block) + ": binding not trivial");
    };
    RoleLoops r{loop_of(m.i), loop_of(m.j), loop_of(m.k), {}};
    for (size_t x : m.batch)
      r.batch.push_back(loop_of(x));
    return r;
  }

  // A loop of extent 16 * n split into [n, 16]; the tile loop is returned second.
  static std::vector<LoopRV> split_tile(Schedule& sch, LoopRV loop) {
    return sch.split(loop, {sdk::Factor(-1), sdk::Factor(kTile)});
  }

  // The loops of a block copied under `at` (after compute_at / reverse_compute_at / decompose):
  // those with more than 16 iterations split into [n, 16], the 16s moved innermost in their
  // order, the fragment loops unrolled (a fragment array is indexed by constants once they
  // are), and the outermost 16 marked with the operation.
  static void mark_tiles(Schedule& sch, BlockRV block, size_t first_own,
                         const std::string& intrinsic) {
    std::vector<LoopRV> loops = sch.get_loops(block);
    std::vector<LoopRV> outer, tiles;
    for (size_t x = first_own; x < loops.size(); ++x) {
      // Every multiple of 16 split, 16 itself too ([1, 16]): the trace then stays valid when a
      // mutation changes how many fragments the loop covers. A batch dimension here is 1.
      int64_t e = sch.extent(loops[x]);
      if (e % kTile == 0) {
        std::vector<LoopRV> parts = split_tile(sch, loops[x]);
        outer.push_back(parts[0]);
        tiles.push_back(parts[1]);
      } else {
        outer.push_back(loops[x]);
      }
    }
    std::vector<LoopRV> order = outer;
    order.insert(order.end(), tiles.begin(), tiles.end());
    if (order.size() > 1) sch.reorder(order);
    for (LoopRV l : outer)
      sch.unroll(l);
    if (tiles.empty())
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE,
                               "std.MultiLevelTilingTensorCore: " + sch.name_of(block) +
                                   ": no 16x16 tile to mark");
    sch.annotate(tiles[0], sdk::program::kTensorIntrinsicAnnotation, intrinsic);
  }

  void tile(Schedule& sch, BlockRV block, const MatmulRoles& m) const {
    auto written = [&](BlockRV b) { return sch.writes(b).at(0).buffer.name(); };
    BlockRV a_shared = sch.cache_read(block, read_index(sch, block, m.a, kRule), "shared");
    BlockRV a_frag =
        sch.cache_read(block, read_index(sch, block, written(a_shared), kRule), "wmma.matrix_a");
    BlockRV b_shared = sch.cache_read(block, read_index(sch, block, m.b, kRule), "shared");
    BlockRV b_frag =
        sch.cache_read(block, read_index(sch, block, written(b_shared), kRule), "wmma.matrix_b");
    BlockRV store = sch.cache_write(block, 0, "wmma.accumulator");
    // Rows of the shared tiles padded so that a row's stride is an odd number of 16-byte units
    // (8 f16 past a multiple of 16): the 8 rows of 16 bytes a warp's fragment load reads at
    // once then fall in the 8 different 16-byte groups of the 128 bytes of banks (a stride of
    // 64 f16 puts them all in one, an 8-way conflict; 16 f16, two ways). The least padding that
    // does it (16 -> 24, 32 -> 40, 64 -> 72), and the stride stays a multiple of 8 elements, as
    // wmma loads and 16-byte fetches need.
    if (pad_shared_)
      for (BlockRV shared : {a_shared, b_shared}) {
        size_t ndim = sch.writes(shared).at(0).buffer.ndim();
        if (ndim >= 2) sch.storage_align(shared, 0, static_cast<int>(ndim) - 2, 16, 8);
      }

    auto [li, lj, lk, batch] = loops_by_role(sch, block, m);

    // i, j -> [block, warp, fragment, 16]; k -> [k0, k1, 16]. Fragments and warps each drawn
    // with their own bound: one three-way draw over a 4096 extent gave the warps most of the
    // factors (8192 threads per block), which VerifyGPUCode then refused in every sample.
    auto spatial = [&](LoopRV l) {
      std::vector<LoopRV> t = split_tile(sch, l);
      std::vector<sdk::ExprRV> f = sch.sample_perfect_tile(t[0], 2, max_frags_);
      std::vector<LoopRV> rest_frag = sch.split(t[0], {f[0], f[1]});
      std::vector<sdk::ExprRV> w = sch.sample_perfect_tile(rest_frag[0], 2, max_warps_);
      std::vector<LoopRV> p = sch.split(rest_frag[0], {w[0], w[1]});
      p.push_back(rest_frag[1]);
      p.push_back(t[1]);
      return p;
    };
    std::vector<LoopRV> ti = spatial(li), tj = spatial(lj);
    std::vector<LoopRV> tk = split_tile(sch, lk);
    std::vector<sdk::ExprRV> fk = sch.sample_perfect_tile(tk[0], 2, max_k_);
    std::vector<LoopRV> k01 = sch.split(tk[0], {fk[0], fk[1]});
    std::vector<LoopRV> order = batch;
    for (LoopRV l : {ti[0], tj[0], ti[1], tj[1], k01[0], k01[1], ti[2], tj[2], ti[3], tj[3], tk[1]})
      order.push_back(l);
    sch.reorder(order);
    std::vector<LoopRV> grid = batch;
    grid.push_back(ti[0]);
    grid.push_back(tj[0]);
    LoopRV bx = grid.size() > 1 ? sch.fuse(grid) : grid[0];
    sch.bind(bx, "blockIdx.x");
    LoopRV ty = sch.fuse({ti[1], tj[1]});
    sch.bind(ty, "threadIdx.y");
    sch.unroll(ti[2]);
    sch.unroll(tj[2]);

    // Where each copy goes: the write-back under the warp, the operand tiles under k0 (shared)
    // and k1 (fragments). Depths are counted from the loops above them afterwards.
    sch.reverse_compute_at(store, ty);
    // (A copy goes under a loop only once its consumer is there: fragments first.)
    sch.compute_at(a_frag, k01[1]);
    sch.compute_at(b_frag, k01[1]);
    sch.compute_at(a_shared, k01[0]);
    sch.compute_at(b_shared, k01[0]);
    BlockRV init = sch.decompose_reduction(block, k01[0]);
    // Marked after decompose_reduction, whose init copies the loops with their annotations.
    sch.annotate(ti[3], sdk::program::kTensorIntrinsicAnnotation, std::string("wmma.mma"));
    annotate_pipeline(sch, k01[0]);

    const size_t under_warp = 2, under_k1 = 4; // below bx, ty (and k0, k1)
    mark_tiles(sch, store, under_warp, "wmma.store");
    mark_tiles(sch, init, under_warp, "wmma.fill");
    mark_tiles(sch, a_frag, under_k1, "wmma.load_a");
    mark_tiles(sch, b_frag, under_k1, "wmma.load_b");
    // Each lane's share of a fetch step: vector_load_lens f16 (one wide load where the
    // generator proves the lanes contiguous and aligned, vector_copy.h).
    const std::vector<double> uniform(fetch_lanes_.size(),
                                      1.0 / static_cast<double>(fetch_lanes_.size()));
    for (BlockRV cache : {a_shared, b_shared}) {
      annotate_sampled(sch, cache, keys::kCooperativeFetch, fetch_lanes_, uniform);
      sch.annotate(cache, keys::kWarpExecution, int64_t{1});
    }
    sch.annotate(block, keys::kTilingStructure, std::string("tensor_core"));
  }

  // The wgmma design space (the header's second diagram).
  void tile_warpgroups(Schedule& sch, BlockRV block, const MatmulRoles& m,
                       const GroupLayout& layout) const {
    const bool swizzle = layout.swizzle;
    const std::string block_name = sch.name_of(block);
    BlockRV a_shared = sch.cache_read(block, read_index(sch, block, m.a, kRule), "shared");
    BlockRV b_shared = sch.cache_read(block, read_index(sch, block, m.b, kRule), "shared");
    BlockRV store = sch.cache_write(block, 0, "wgmma.accumulator");
    auto [li, lj, lk, batch] = loops_by_role(sch, block, m);
    std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
    const int64_t extent_i = ivs[m.i].extent, extent_j = ivs[m.j].extent;
    if (extent_i % kGroupRows)
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE, "std.MultiLevelTilingTensorCore: " + block_name +
                                                      ": i is not a multiple of 64");
    std::vector<int64_t> cols;
    for (int64_t n : group_cols_)
      if (extent_j % n == 0) cols.push_back(n);
    if (cols.empty())
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE, "std.MultiLevelTilingTensorCore: " + block_name +
                                                      ": no wgmma N divides j");
    sdk::ExprRV n = sch.sample_categorical(
        cols, std::vector<double>(cols.size(), 1.0 / static_cast<double>(cols.size())));
    const bool wide = sch.get(n) > 128;
    // i -> [i0, i1 (warpgroups), i2 (64-row tiles per warpgroup), 64]; j -> [j0, N];
    // k -> [k0, k1, 16].
    std::vector<LoopRV> ti = sch.split(li, {sdk::Factor(-1), sdk::Factor(kGroupRows)});
    std::vector<sdk::ExprRV> f = sch.sample_perfect_tile(ti[0], 2, wide ? 1 : 2);
    std::vector<LoopRV> rest_frag = sch.split(ti[0], {f[0], f[1]});
    std::vector<sdk::ExprRV> w = sch.sample_perfect_tile(rest_frag[0], 2, 2);
    std::vector<LoopRV> pi = sch.split(rest_frag[0], {w[0], w[1]});
    std::vector<LoopRV> tj = sch.split(lj, {sdk::Factor(-1), sdk::Factor(n)});
    std::vector<LoopRV> tk = split_tile(sch, lk);
    std::vector<LoopRV> k01;
    if (swizzle) {
      // k-tiles of 64: A's rows (K-major) are then whole 128-byte lines, as the swizzle needs.
      if (ivs[m.k].extent % kSwizzleK)
        throw sdk::ScheduleError(MT_ERROR_SCHEDULE, "std.MultiLevelTilingTensorCore: " +
                                                        block_name + ": k is not a multiple of 64");
      k01 = sch.split(tk[0], {sdk::Factor(-1), sdk::Factor(kSwizzleK / kTile)});
    } else {
      std::vector<sdk::ExprRV> fk = sch.sample_perfect_tile(tk[0], 2, max_k_);
      k01 = sch.split(tk[0], {fk[0], fk[1]});
    }
    std::vector<LoopRV> order = batch;
    for (LoopRV l : {pi[0], tj[0], pi[1], k01[0], k01[1], rest_frag[1], ti[1], tj[1], tk[1]})
      order.push_back(l);
    sch.reorder(order);
    std::vector<LoopRV> grid = batch;
    grid.push_back(pi[0]);
    grid.push_back(tj[0]);
    LoopRV bx = grid.size() > 1 ? sch.fuse(grid) : grid[0];
    sch.bind(bx, "blockIdx.x");
    sch.bind(pi[1], "threadIdx.y");
    sch.unroll(rest_frag[1]);

    sch.reverse_compute_at(store, pi[1]);
    sch.compute_at(a_shared, k01[0]);
    sch.compute_at(b_shared, k01[0]);
    BlockRV init = sch.decompose_reduction(block, k01[0]);
    sch.annotate(ti[1], sdk::program::kTensorIntrinsicAnnotation, std::string("wgmma.mma"));
    if (swizzle) sch.annotate(ti[1], sdk::program::kWgmmaSwizzleAnnotation, int64_t{128});
    if (layout.tma) sch.annotate(ti[1], sdk::program::kWgmmaTmaAnnotation, int64_t{1});
    if (layout.producer) sch.annotate(ti[1], sdk::program::kWgmmaProducerAnnotation, int64_t{1});
    annotate_pipeline(sch, k01[0]);
    // One slot more than the stages: the products of a k-tile read shared memory after their
    // iteration, so the fetch overwrites the slot read two iterations before, and the barrier
    // before it leaves the last tile's products running (the generator's wait depth).
    sch.annotate(k01[0], sdk::program::kSoftwarePipelineSpareSlots, int64_t{1});
    const size_t under_warpgroup = 2; // below bx, ty
    mark_group_tiles(sch, store, under_warpgroup, "wgmma.store");
    mark_group_tiles(sch, init, under_warpgroup, "wgmma.fill");
    for (BlockRV cache : {a_shared, b_shared}) {
      order_fetch_by_core_matrix(sch, cache);
      sch.annotate(cache, keys::kCooperativeFetch, int64_t{8});
      sch.annotate(cache, keys::kWarpExecution, kGroupThreads);
    }
    sch.annotate(block, keys::kTilingStructure, std::string("tensor_core"));
  }

  // The accumulator's copies under the warpgroup (fill, store): their last two loops are the
  // rows and the N columns; the rows split into [fi, 64] with the tile loop unrolled, and the
  // 64 x N nest marked with the operation. Split even where fi is 1 when the space is made:
  // fi is a sampled decision, and a trace without the split would give every sample with more
  // than one tile a warpgroup a nest the generator refuses.
  static void mark_group_tiles(Schedule& sch, BlockRV block, size_t first_own,
                               const std::string& intrinsic) {
    std::vector<LoopRV> loops = sch.get_loops(block);
    if (loops.size() < first_own + 2)
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE,
                               "std.MultiLevelTilingTensorCore: " + sch.name_of(block) +
                                   ": not a 2-d accumulator copy");
    std::vector<LoopRV> parts =
        sch.split(loops[loops.size() - 2], {sdk::Factor(-1), sdk::Factor(kGroupRows)});
    sch.unroll(parts[0]);
    sch.annotate(parts[1], sdk::program::kTensorIntrinsicAnnotation, intrinsic);
  }

  // A shared tile [R, C] fetched in the order (R/8, C/(8q), q, 8 rows, 8 elements): the
  // cooperative fetch gives each lane 8 elements (16 bytes, one core-matrix row) and
  // consecutive lanes consecutive rows, so the 8 lanes of a shared-memory phase write 8
  // different rows of one core matrix (8 different bank groups), and a warp reads q 16-byte
  // chunks of each of 8 rows of device memory (q = 4: 64 contiguous bytes a row).
  static void order_fetch_by_core_matrix(Schedule& sch, BlockRV cache) {
    std::vector<LoopRV> loops = sch.get_loops(cache);
    if (loops.size() < 2)
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE, "std.MultiLevelTilingTensorCore: " +
                                                      sch.name_of(cache) + ": not a 2-d tile");
    LoopRV r = loops[loops.size() - 2], c = loops[loops.size() - 1];
    const int64_t rows = sch.extent(r), cols = sch.extent(c);
    if (rows % 8 || cols % 8)
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE,
                               "std.MultiLevelTilingTensorCore: " + sch.name_of(cache) +
                                   ": a tile not of whole core matrices");
    const int64_t q = cols % 32 == 0 ? 4 : cols % 16 == 0 ? 2 : 1;
    std::vector<LoopRV> rs = sch.split(r, {sdk::Factor(-1), sdk::Factor(8)});
    std::vector<LoopRV> cs = sch.split(c, {sdk::Factor(-1), sdk::Factor(q), sdk::Factor(8)});
    sch.reorder({rs[0], cs[0], cs[1], rs[1], cs[2]});
  }

  Config config_;
  std::string enabled_;
  std::string wgmma_ = "auto";
  std::vector<bool> group_swizzles_ = {true, false}; // the layouts "wgmma_swizzle" asks for
  std::vector<GroupLayout> group_layouts_;           // one wgmma space each
  std::vector<int64_t> group_cols_{64, 128, 256};
  bool group_active_ = false;
  bool pad_shared_ = true;
  std::vector<int64_t> stages_{2};         // candidates, sampled uniformly
  std::vector<int64_t> fetch_lanes_{4, 8}; // likewise
  int max_warps_ = 4, max_frags_ = 4, max_k_ = 4;
  bool active_ = false;
  int sm_ = 0;
};

} // namespace

void register_multi_level_tiling_tensor_core(sdk::Registry& r) {
  r.add<MultiLevelTilingTensorCore>(
      "std.MultiLevelTilingTensorCore",
      "GPU: tile f16/bf16 matmul-like blocks for tensor cores (WMMA 16x16x16, f32 accumulator)");
}

} // namespace mt::std_rules
