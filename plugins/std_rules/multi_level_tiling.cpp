// MultiLevelTiling: the main rule. A block with data reuse (a reduction some of whose inputs
// are not indexed by every spatial iteration variable: matmul, convolutions, ...) is tiled
// into a structure such as "SSRSRS" (CPU) or "SSSRRSRS" (GPU): every spatial loop is split by
// sample_perfect_tile into one loop per 'S', every reduction loop into one per 'R', and the
// pieces are reordered level by level. Then, as configured per target:
//   - bind: the loops of the first levels are fused and bound (GPU: blockIdx.x, vthread,
//     threadIdx.x);
//   - write reuse: the result is computed into a cache (cache_write) that is written back under
//     the loops of one level (reverse_compute_at), with a single elementwise consumer folded
//     into that write-back. "may" forks the space: without the cache, and with it at each
//     level; "must" always adds it;
//   - read reuse (GPU): every input is staged into a shared-memory cache under one level
//     (cache_read + compute_at), annotated for RewriteCooperativeFetch.
// The block gets the annotation meta_schedule.tiling_structure = the structure.
//
// Configuration (defaults per target kind from the tune context; "target": "cpu"|"gpu" forces):
//   structure, max_innermost_factor (64), tile_binds,
//   write_reuse ("none"|"may"|"must"), write_levels, write_scope,
//   read_reuse, read_levels, read_scope, vector_load_lens (GPU: [1, 2, 4]),
//   max_thread_factor (GPU: 32), max_vthread_factor (GPU: 2), max_thread_work (GPU: 8),
//   max_shared_k (GPU: 32), pipeline_stages (GPU: [1, 2], sampled: the k loop the inputs are
//   staged under software-pipelined, its next tiles fetched -- asynchronously with cp.async
//   on sm_80+ -- while this one is computed on; 1 = not; core/lower/software_pipeline.h).
// Levels are 1-based positions in the structure: level l means under the last loop of the
// l-th structure position.
#include <algorithm>
#include <optional>
#include <set>

#include "annotation_keys.hpp"
#include "block_analysis.hpp"
#include "config.hpp"
#include "sampled_annotation.hpp"
#include "std_components.hpp"
#include "target_info.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::LoopRV;
using sdk::Schedule;

enum class Reuse { None, May, Must };

Reuse parse_reuse(const std::string& s) {
  if (s == "none") return Reuse::None;
  if (s == "may") return Reuse::May;
  if (s == "must") return Reuse::Must;
  throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                   "std.MultiLevelTiling: reuse must be \"none\", \"may\" or \"must\", not \"" + s +
                       "\"");
}

struct Options {
  std::string structure;
  int max_innermost_factor = 64;
  std::vector<std::string> tile_binds;
  Reuse write_reuse = Reuse::None;
  std::vector<int64_t> write_levels;
  std::string write_scope = "global";
  Reuse read_reuse = Reuse::None;
  std::vector<int64_t> read_levels;
  std::string read_scope = "shared";
  // "levels": each input staged under the loops of read_levels (one design space per level);
  // "sampled": each input staged at a location drawn by sample_compute_location (root, inline
  // = not staged, or any loop of the tile), which the search mutates like any decision.
  std::string read_location = "levels";
  // Which inputs are staged: "all", or "vector": only those the vectorized axis (the block's
  // innermost spatial iter var) indexes -- the ones the register tile loads as whole vectors,
  // where a contiguous panel pays; an input it does not index is read one broadcast scalar per
  // row, and a copy of it mostly costs.
  std::string read_inputs = "all";
  std::vector<int64_t> vector_load_lens;
  // Depths of the software pipeline of the loop the inputs are staged under, sampled
  // uniformly (1: none); empty = not annotated.
  std::vector<int64_t> pipeline_stages;
  // GPU: the largest factor one spatial loop gives the level bound to threadIdx / vthread
  // (see bound_levels()): 32 x 32 threads per block at most, and 2 x 2 virtual threads.
  int64_t max_thread_factor = 32;
  int64_t max_vthread_factor = 2;
  // GPU: the most iterations of one spatial loop a thread runs itself (the unbound levels
  // together), and of the reduction levels inside a shared tile (its k extent).
  int64_t max_thread_work = 8;
  int64_t max_shared_k = 32;
  // Innermost factors the row loop (the last spatial loop before the vectorized one) may also
  // take when they do not divide its extent: one more design space each, the rest of the loop
  // tiled perfectly (see tile()).
  std::vector<int64_t> padded_inner_factors;
  // More design spaces whose vector lanes run along another spatial axis than the innermost
  // (see channel_lanes()): a convolution vectorised over its output channels, as oneDNN's
  // blocked kernels are, instead of over output width.
  bool channel_lanes = false;
  // Each channel-lane space also offered with its broadcast input (a convolution's padded
  // data) written channels-last by its producer: the dimension indexed by reduction variables
  // alone moved last (see add_channels_last_input()). Offered next to the unchanged space, not
  // instead of it: replaying hand-edited best traces with the pad written NDHWC / NHWC, conv3d
  // and ResNet 3x3 ran 4 % faster, dilated 4 % slower, the stem unchanged. Tuned with both
  // (256 trials), the eight fastest records of conv3d, ResNet 3x3 and dilated all came from
  // the channels-last spaces (Zen 1, 2026-12-03; docs/std_rules.md). On by default on CPU.
  bool channels_last_input = false;
  // One more design space (and its padded ones) whose register tile is structured as the
  // channel-lane spaces' are, with the lanes along the innermost spatial axis: rows drawn from
  // 3..8 by one or two whole vectors within the register budget (see RegisterBudget), every
  // other spatial loop 1 at the innermost level. Free
  // draws of sample_perfect_tile rarely give such a tile (a 1 x 4 tile is as likely as 6 x 16),
  // and with a small budget the search does not find it from there. Unset (the CPU default):
  // offered to a block that has no channel-lane space -- matmul, dense, batch matmul, whose
  // only register tiles would otherwise be free draws -- and not to a convolution, whose
  // channel-lane spaces already are register tiles (more spaces there meant fewer samples of
  // each: conv1d lost 0.98 -> 0.67 and 0.57 of oneDNN with it in 64-trial runs). dense+bias+gelu
  // at 64 trials, three seeds each, best records replayed side by side three times: 31.1 GFLOPS
  // on average without it, 36.2 with it (oneDNN 31-47 in the same rounds; Zen 1, 2026-12-02).
  std::optional<bool> register_tile;
  // Whether the spaces whose tiles are free draws of sample_perfect_tile stay when a
  // register-tile or channel-lane space exists for the block (they always do when none does).
  // Unset (the CPU default): dropped for blocks with channel-lane spaces (convolutions), kept
  // for the others. Every best convolution kernel of the 128-trial suite run came from a
  // channel-lane space; the free ones (conv3d had 26 spaces, half free) drew tiles such as 7
  // lanes along the output width and took the trials: ResNet 3x3 at 64 trials, seeds 1-3,
  // 0.53 / 0.81 / 0.48 of oneDNN with them, 0.81 / 0.87 / 0.71 without (conv3d 0.68 / 0.75 /
  // 0.70 vs 0.59 / 0.80 / 0.72; Zen 1, 2026-12-02). For dense the 64-trial runs were
  // inconclusive (0.90 / 0.49 with, 0.53 / 0.51 without), so matmuls keep them.
  std::optional<bool> free_tiles;
};

// The block's innermost spatial iteration variable: the axis ParallelVectorizeUnroll
// vectorizes (the register tile's lanes).
std::optional<sdk::ExprRef> vector_axis(const Schedule& sch, BlockRV block) {
  std::optional<sdk::ExprRef> lane;
  for (const auto& iv : sch.iter_vars(block))
    if (iv.kind == sdk::IterKind::Spatial) lane = iv.var;
  return lane;
}

// Whether `e` uses `var` only inside floor divisions by constants above 1: the value stays the
// same over runs of consecutive values of var, so the element is reused along var (a head's
// probabilities read by each of its 64 channels when the channels are one flat axis:
// probs[k // 64, j]).
bool only_divided(const sdk::ExprRef& e, const sdk::ExprRef& var) {
  if (!e.uses(var)) return true;
  if (e.kind() == sdk::ExprKind::FloorDiv && e.num_args() == 2 &&
      e.arg(1).kind() == sdk::ExprKind::IntImm && e.arg(1).int_value() > 1)
    return true;
  if (e == var || e.num_args() == 0) return false;
  for (const sdk::ExprRef& a : e.args())
    if (!only_divided(a, var)) return false;
  return true;
}

// Whether the access reads each element for more than one value of `var`: var is absent from
// its indices, or only divided.
bool access_reuses_along(const sdk::BufferAccess& a, const sdk::ExprRef& var) {
  for (const auto& tuple : a.indices)
    for (const sdk::ExprRef& e : tuple)
      if (!only_divided(e, var)) return false;
  return true;
}

// A design space in the making: the schedule, the block, and its loops per structure position.
struct State {
  Schedule sch;
  BlockRV block;
  std::vector<std::vector<LoopRV>> tiles;
  // The iteration variable the register tile runs along in vector lanes, when it is not the
  // block's innermost spatial one (a convolution's output channels: see channel_lanes()).
  std::optional<sdk::ExprRef> lane;

  State fork() const { return State{sch.copy(), block, tiles, lane}; }
};

// The lane of a design space: its own, or the block's innermost spatial iter var.
std::optional<sdk::ExprRef> lane_of(const Schedule& sch, BlockRV block,
                                    const std::optional<sdk::ExprRef>& lane) {
  return lane ? lane : vector_axis(sch, block);
}

// The dimension permutation that moves last the one dimension of `access` whose index
// `selects` (a predicate on the index expression); empty when it is already last, or when not
// exactly one dimension is selected.
template <class Selects>
std::vector<int64_t> one_dimension_last(const sdk::BufferAccess& access, Selects selects) {
  if (access.indices.empty()) return {};
  const auto& idx = access.indices[0];
  std::vector<int64_t> chosen;
  for (size_t d = 0; d < idx.size(); ++d)
    if (selects(idx[d])) chosen.push_back(static_cast<int64_t>(d));
  if (chosen.size() != 1 || chosen[0] == static_cast<int64_t>(idx.size()) - 1) return {};
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < static_cast<int64_t>(idx.size()); ++d)
    if (d != chosen[0]) perm.push_back(d);
  perm.push_back(chosen[0]);
  return perm;
}

// The permutation that moves the one dimension of `access` indexed by `lane` last.
std::vector<int64_t> lane_last_permutation(const sdk::BufferAccess& access,
                                           const sdk::ExprRef& lane) {
  return one_dimension_last(access, [&](const sdk::ExprRef& e) { return e.uses(lane); });
}

class MultiLevelTiling : public sdk::ScheduleRule {
public:
  explicit MultiLevelTiling(std::string_view text) : config_("std.MultiLevelTiling", text) {
    config_.allow_only({"target",
                        "structure",
                        "max_innermost_factor",
                        "tile_binds",
                        "write_reuse",
                        "write_levels",
                        "write_scope",
                        "read_reuse",
                        "read_levels",
                        "read_scope",
                        "read_location",
                        "read_inputs",
                        "vector_load_lens",
                        "pipeline_stages",
                        "padded_inner_factors",
                        "max_thread_factor",
                        "max_vthread_factor",
                        "max_thread_work",
                        "max_shared_k",
                        "channel_lanes",
                        "register_tile",
                        "vector_registers",
                        "free_tiles",
                        "channels_last_input"});
    std::string target = config_.get_string("target", "");
    if (!target.empty() && target != "cpu" && target != "gpu")
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.MultiLevelTiling: 'target' must be \"cpu\" or \"gpu\"");
    configure(target == "gpu");
    budget_.registers = config_.get_int("vector_registers", budget_.registers);
    if (budget_.registers < 4)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.MultiLevelTiling: 'vector_registers' must be at least 4");
  }

  void initialize(const sdk::TuneContext& ctx) override {
    TargetInfo info = TargetInfo::from(ctx);
    if (!config_.has("target")) configure(info.gpu);
    lanes_ = info.f32_lanes();
    // The target's count unless the config gives one (a tile shape to try on purpose).
    if (!config_.has("vector_registers")) budget_.registers = info.vector_registers;
  }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (!needs_tiling(sch, block)) return {sch};
    std::vector<State> states;
    try {
      State s = tile(sch, block, {}, {}, false);
      bind(s);
      states.push_back(std::move(s));
    } catch (const sdk::ScheduleError&) {
      return {sch}; // the block's nest cannot be tiled this way: leave it alone
    }
    add_padded(sch, block, {}, false, &states);
    size_t free_spaces = states.size();
    std::vector<size_t> lanes;
    if (opts_.channel_lanes) lanes = channel_lanes(sch, block);
    if (opts_.register_tile.value_or(lanes.empty())) {
      try {
        State s = tile(sch, block, {}, {}, true);
        bind(s);
        states.push_back(std::move(s));
        add_padded(sch, block, {}, true, &states);
      } catch (const sdk::ScheduleError&) {
        // No whole vectors along the innermost axis: the free spaces stand.
      }
    }
    if (opts_.channel_lanes) {
      for (size_t lane : lanes) {
        try {
          State s = tile(sch, block, {}, lane, true);
          bind(s);
          states.push_back(std::move(s));
        } catch (const sdk::ScheduleError&) {
          continue;
        }
        add_padded(sch, block, lane, true, &states);
      }
    }
    if (!opts_.free_tiles.value_or(lanes.empty()) && states.size() > free_spaces)
      states.erase(states.begin(), states.begin() + static_cast<std::ptrdiff_t>(free_spaces));
    states = add_write_reuse(std::move(states));
    states = add_read_reuse(std::move(states));
    states = add_channels_last_input(std::move(states));
    std::vector<Schedule> out;
    for (State& s : states)
      out.push_back(s.sch);
    return out;
  }

private:
  void configure(bool gpu) {
    Options o;
    o.structure = gpu ? "SSSRRSRS" : "SSRSRS";
    if (gpu) {
      o.tile_binds = {"blockIdx.x", "vthread", "threadIdx.x"};
      o.write_reuse = Reuse::Must;
      o.write_levels = {3};
      o.write_scope = "local";
      o.read_reuse = Reuse::Must;
      o.read_levels = {4};
      o.read_scope = "shared";
      o.vector_load_lens = {1, 2, 4};
      o.pipeline_stages = {1, 2};
      o.register_tile = false; // a CPU register tile: threads tile a GPU block
      o.free_tiles = true;
    } else {
      o.write_reuse = Reuse::May;
      o.write_levels = {1, 2};
      o.write_scope = "global";
      o.read_reuse = Reuse::May;
      // The vector-loaded operand (matmul's B, dense's weight) packed once per column block
      // (level 1: a K x NR panel reused by every row tile of the block) or per tile (level 2).
      // The packed B panel at level 1 with a 6 x 16 tile is the structure of the fastest
      // kernels found (bench/matmul_trace, ~0.9-1.0 of oneDNN).
      o.read_levels = {1, 2};
      o.read_scope = "global";
      o.read_inputs = "vector";
      // A register tile of 6 rows x 2 vectors keeps 12 accumulators in the 16 vector
      // registers of AVX2 (BLIS's Haswell kernel); 1024 rows are no multiple of 6, and
      // sample_perfect_tile only ever draws divisors, so without this the best tiles of
      // power-of-two matmuls (4 x 16: 8 accumulators, FMA latency barely hidden) stay ~5 %
      // slower (bench/matmul_trace).
      o.padded_inner_factors = {6};
      o.channel_lanes = true;
      o.channels_last_input = true;
    }
    o.structure = config_.get_string("structure", o.structure);
    o.max_innermost_factor =
        static_cast<int>(config_.get_int("max_innermost_factor", o.max_innermost_factor));
    o.tile_binds = config_.get_strings("tile_binds", o.tile_binds);
    if (config_.has("write_reuse"))
      o.write_reuse = parse_reuse(config_.get_string("write_reuse", ""));
    o.write_levels = config_.get_ints("write_levels", o.write_levels);
    o.write_scope = config_.get_string("write_scope", o.write_scope);
    if (config_.has("read_reuse")) o.read_reuse = parse_reuse(config_.get_string("read_reuse", ""));
    o.read_levels = config_.get_ints("read_levels", o.read_levels);
    o.read_scope = config_.get_string("read_scope", o.read_scope);
    o.read_location = config_.get_string("read_location", o.read_location);
    o.read_inputs = config_.get_string("read_inputs", o.read_inputs);
    o.vector_load_lens = config_.get_ints("vector_load_lens", o.vector_load_lens);
    if (config_.is_list("pipeline_stages"))
      o.pipeline_stages = config_.get_ints("pipeline_stages", {});
    else if (config_.has("pipeline_stages"))
      o.pipeline_stages = {config_.get_int("pipeline_stages", 1)};
    for (int64_t st : o.pipeline_stages)
      if (st < 1 || st > 8)
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTiling: 'pipeline_stages' must "
                                                    "be 1 to 8 (or a list of such)");
    o.max_thread_factor = config_.get_int("max_thread_factor", o.max_thread_factor);
    o.max_vthread_factor = config_.get_int("max_vthread_factor", o.max_vthread_factor);
    o.max_thread_work = config_.get_int("max_thread_work", o.max_thread_work);
    o.max_shared_k = config_.get_int("max_shared_k", o.max_shared_k);
    if (o.max_thread_factor < 1 || o.max_vthread_factor < 1 || o.max_thread_work < 1 ||
        o.max_shared_k < 1)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.MultiLevelTiling: max_thread_factor, max_vthread_factor, "
                       "max_thread_work and max_shared_k must be at least 1");
    o.padded_inner_factors = config_.get_ints("padded_inner_factors", o.padded_inner_factors, true);
    o.channel_lanes = config_.get_bool("channel_lanes", o.channel_lanes);
    o.channels_last_input = config_.get_bool("channels_last_input", o.channels_last_input);
    if (config_.has("register_tile")) o.register_tile = config_.get_bool("register_tile", false);
    if (config_.has("free_tiles")) o.free_tiles = config_.get_bool("free_tiles", true);
    validate(o);
    opts_ = std::move(o);
  }

  static void validate(const Options& o) {
    auto bad = [](const std::string& why) {
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiLevelTiling: " + why);
    };
    if (o.structure.empty() || o.structure.find_first_not_of("SR") != std::string::npos ||
        o.structure.find('S') == std::string::npos)
      bad("structure must be a non-empty string of 'S' and 'R' with at least one 'S'");
    if (o.tile_binds.size() > o.structure.size()) bad("more tile_binds than structure levels");
    if (o.read_location != "levels" && o.read_location != "sampled")
      bad("read_location must be \"levels\" or \"sampled\", not \"" + o.read_location + "\"");
    if (o.read_inputs != "all" && o.read_inputs != "vector")
      bad("read_inputs must be \"all\" or \"vector\", not \"" + o.read_inputs + "\"");
    for (size_t i = 0; i < o.tile_binds.size(); ++i)
      if (o.structure[i] != 'S') bad("tile_binds may only bind spatial ('S') levels");
    for (int64_t f : o.padded_inner_factors)
      if (f < 2 || f > o.max_innermost_factor)
        bad("padded_inner_factors must lie in [2, max_innermost_factor]");
    for (const auto* levels : {&o.write_levels, &o.read_levels})
      for (int64_t l : *levels)
        if (l < 1 || l > static_cast<int64_t>(o.structure.size()))
          bad("reuse level " + std::to_string(l) + " is outside the structure");
  }

  // MetaSchedule's condition: a reduction with one output whose inputs show reuse, i.e. some
  // input is not indexed by some (non-trivial) spatial iteration variable; a plain loop nest.
  bool needs_tiling(const Schedule& sch, BlockRV block) const {
    if (!sch.valid(block)) return false;
    if (block_annotation(sch, block, keys::kTilingStructure)) return false;
    std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
    bool has_reduce = false;
    for (const auto& iv : ivs)
      has_reduce = has_reduce || iv.kind == sdk::IterKind::Reduce;
    if (!has_reduce) return false;
    if (sch.writes(block).size() != 1) return false;
    std::vector<sdk::BufferAccess> reads = sch.reads(block);
    if (reads.empty()) return false;
    if (!in_plain_serial_nest(sch, block)) return false;
    for (const sdk::BufferAccess& r : reads) {
      for (const auto& iv : ivs) {
        if (iv.kind != sdk::IterKind::Spatial || iv.extent <= 1) continue;
        if (access_reuses_along(r, iv.var)) return true;
      }
    }
    return false;
  }

  // The padded spaces (one per padded_inner_factors) of the tiling with lanes along loop
  // `lane` (nullopt: the innermost spatial loop), appended to *states; `register_tile` as
  // tile()'s.
  void add_padded(const Schedule& sch, BlockRV block, std::optional<size_t> lane,
                  bool register_tile, std::vector<State>* states) const {
    for (int64_t f : opts_.padded_inner_factors) {
      try {
        std::optional<State> s = tile_padded(sch, block, f, lane, register_tile);
        if (!s) continue;
        bind(*s);
        states->push_back(std::move(*s));
      } catch (const sdk::ScheduleError&) {
        // This factor does not work for this nest; the perfect tiling stands.
      }
    }
  }

  // Loops (indices into the block's loops) that may carry the vector lanes instead of the
  // innermost spatial one. The innermost spatial iter var x qualifies for replacement when it
  // indexes an input through a sliding window (one index expression with a reduction
  // variable: a convolution's x * stride + kx), where vectors along x need the input's stride
  // to be 1 and its width to be a multiple of the lanes. A loop qualifies as the lane when its
  // iter var v is spatial, no input that x indexes uses v, and some input does: the
  // convolution's output channels, which only the weight uses. The register tile then
  // broadcasts one input element to a whole vector of output channels (stride and dilation
  // no longer matter) and loads the weight packed with v last.
  std::vector<size_t> channel_lanes(const Schedule& original, BlockRV block) const {
    Schedule sch = original.copy(); // its lookups are recorded in a trace thrown away
    std::vector<LoopRV> loops = sch.get_loops(block);
    std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
    std::vector<sdk::BufferAccess> reads = sch.reads(block);
    std::optional<sdk::ExprRef> x = vector_axis(sch, block);
    if (!x) return {};
    auto windowed = [&](const sdk::BufferAccess& a) {
      for (const auto& tuple : a.indices)
        for (const sdk::ExprRef& e : tuple) {
          if (!e.uses(*x)) continue;
          for (const auto& iv : ivs)
            if (iv.kind == sdk::IterKind::Reduce && e.uses(iv.var)) return true;
        }
      return false;
    };
    bool sliding = false;
    for (const sdk::BufferAccess& r : reads)
      sliding = sliding || windowed(r);
    if (!sliding) return {};
    std::vector<size_t> out;
    for (size_t i = 0; i < loops.size(); ++i) {
      sdk::ExprRef lv = sch.loop_var(loops[i]);
      const sdk::IterVarInfo* iv = nullptr;
      for (const auto& info : ivs)
        if (info.value && info.value.get() == lv.get()) iv = &info;
      if (!iv || iv->kind != sdk::IterKind::Spatial || iv->extent < 4 || iv->var.get() == x->get())
        continue;
      bool used = false, with_x = false;
      for (const sdk::BufferAccess& r : reads) {
        if (!access_uses(r, iv->var)) continue;
        used = true;
        with_x = with_x || access_uses(r, *x);
      }
      if (used && !with_x) out.push_back(i);
    }
    return out;
  }

  // The padded space: the row loop -- the last spatial loop before the innermost spatial one
  // (which ParallelVectorizeUnroll vectorizes) -- gets innermost factor `f` although f does
  // not divide its extent. It is first split into [ceil(extent / f), f] (the guard this
  // leaves on the block is its own bounds, which reverse_compute_at follows and lowering
  // partitions out of every full tile), then the outer part is tiled perfectly over the other
  // levels. nullopt when there is no such loop or f divides it (the perfect space has it).
  std::optional<State> tile_padded(const Schedule& original, BlockRV block, int64_t f,
                                   std::optional<size_t> lane_loop, bool register_tile) const {
    Schedule probe = original.copy(); // its lookups are recorded in a trace thrown away
    std::optional<size_t> row = row_loop(probe, block, lane_loop);
    if (!row) return std::nullopt;
    int64_t extent = probe.extent(probe.get_loops(block)[*row]);
    if (extent <= f || extent % f == 0) return std::nullopt;
    return tile(original, block, std::make_pair(*row, f), lane_loop, register_tile);
  }

  // The row loop of the register tile -- the last spatial loop before the lane loop
  // (`lane_loop`, else the innermost spatial one), preferably one that no vector-loaded input
  // depends on, so that the tile's rows reuse the same vector loads (matmul's i for B; a
  // convolution's output channels for its input window -- not its output rows, which each load
  // their own input row -- or, with lanes along the channels, its output width). nullopt when
  // there is none.
  static std::optional<size_t> row_loop(Schedule& probe, BlockRV block,
                                        std::optional<size_t> lane_loop) {
    std::vector<LoopRV> loops = probe.get_loops(block);
    std::vector<LoopRole> roles = loop_roles(probe, block, loops);
    std::vector<size_t> spatial;
    for (size_t i = 0; i < loops.size(); ++i)
      if (!roles[i].reduce && probe.extent(loops[i]) > 1) spatial.push_back(i);
    if (spatial.size() < 2) return std::nullopt;
    size_t lane_index = lane_loop ? *lane_loop : spatial.back();
    if (lane_loop) {
      spatial.erase(std::remove(spatial.begin(), spatial.end(), *lane_loop), spatial.end());
      if (spatial.empty()) return std::nullopt;
      spatial.push_back(*lane_loop); // the lane last, as tile() orders it
    }
    std::vector<sdk::IterVarInfo> ivs = probe.iter_vars(block);
    std::vector<sdk::BufferAccess> reads = probe.reads(block);
    // Buffer indices use the block's iteration variables; the nest binds one to each loop.
    auto iter_var_of = [&](LoopRV l) -> std::optional<sdk::ExprRef> {
      sdk::ExprRef v = probe.loop_var(l);
      for (const auto& iv : ivs)
        if (iv.value && iv.value.get() == v.get()) return iv.var;
      return std::nullopt;
    };
    std::optional<sdk::ExprRef> lane_var = iter_var_of(loops[lane_index]);
    if (!lane_var) return std::nullopt;
    sdk::ExprRef lane = *lane_var;
    auto used_by_vector_inputs = [&](const sdk::ExprRef& var) {
      for (const sdk::BufferAccess& r : reads)
        if (access_uses(r, lane) && access_uses(r, var)) return true;
      return false;
    };
    size_t row = spatial[spatial.size() - 2];
    for (size_t k = spatial.size() - 1; k-- > 0;) {
      std::optional<sdk::ExprRef> v = iter_var_of(loops[spatial[k]]);
      if (v && !used_by_vector_inputs(*v)) {
        row = spatial[k];
        break;
      }
    }
    return row;
  }

  // A loop tiled over its rounded-up extent: (loop index, innermost factor); see tile_padded.
  using Padded = std::optional<std::pair<size_t, int64_t>>;

  // Tiles the block's loops by the structure; `padded` = (loop index, innermost factor) of a
  // loop tiled with that factor over its rounded-up extent (tile_padded); `lane_loop`: the
  // loop placed last in every spatial level, whose innermost piece becomes the vector lanes
  // (nullopt: the loops keep their order, the innermost spatial one last); `register_tile`:
  // the innermost spatial level is a register tile (rows by whole vectors along the lane loop,
  // or along the innermost spatial loop without one), which must exist when there is no lane
  // loop (ScheduleError otherwise).
  State tile(const Schedule& original, BlockRV block, Padded padded,
             std::optional<size_t> lane_loop, bool register_tile) const {
    State s{original.copy(), block, {}, {}};
    Schedule& sch = s.sch;
    Nest nest{sch.get_loops(block), {}};
    nest.roles = loop_roles(sch, block, nest.loops);
    if (lane_loop) {
      sdk::ExprRef lv = sch.loop_var(nest.loops.at(*lane_loop));
      for (const auto& iv : sch.iter_vars(block))
        if (iv.value && iv.value.get() == lv.get()) s.lane = iv.var;
      if (!s.lane)
        throw sdk::ScheduleError(MT_ERROR_SCHEDULE,
                                 "std.MultiLevelTiling: the lane loop binds no iter var");
    }
    const std::string& st = opts_.structure;
    const int n_s = static_cast<int>(std::count(st.begin(), st.end(), 'S'));
    const int n_r = static_cast<int>(st.size()) - n_s;
    const RegisterTile rt =
        plan_register_tile(sch, block, nest, padded, lane_loop, register_tile, n_s);
    // pieces[i][k]: level k of loop i.
    std::vector<std::vector<LoopRV>> pieces;
    std::vector<bool> is_reduce;
    for (size_t i = 0; i < nest.loops.size(); ++i) {
      const bool reduce = nest.roles[i].reduce;
      is_reduce.push_back(reduce);
      pieces.push_back(split_levels(sch, nest, i, reduce ? n_r : n_s, rt, padded));
    }
    s.tiles.assign(st.size(), {});
    int level_s = 0, level_r = 0;
    for (size_t p = 0; p < st.size(); ++p) {
      bool reduce = st[p] == 'R';
      int level = reduce ? level_r++ : level_s++;
      for (size_t i = 0; i < nest.loops.size(); ++i)
        if (is_reduce[i] == reduce && i != lane_loop)
          s.tiles[p].push_back(pieces[i][static_cast<size_t>(level)]);
      if (!reduce && lane_loop)
        s.tiles[p].push_back(pieces[*lane_loop][static_cast<size_t>(level)]);
    }
    std::vector<LoopRV> order;
    for (const auto& level : s.tiles)
      order.insert(order.end(), level.begin(), level.end());
    if (n_r == 0)
      for (size_t i = 0; i < nest.loops.size(); ++i)
        if (is_reduce[i]) order.push_back(pieces[i][0]);
    sch.reorder(order);
    sch.annotate(block, keys::kTilingStructure, st);
    return s;
  }

  // GPU: the levels bound to threads get their factors by draws of their own, each bounded
  // (threadIdx by max_thread_factor, vthread by max_vthread_factor), the innermost unbound
  // levels first: one n-way sample_perfect_tile per loop gave the bound levels most factors
  // of a large extent -- of 200 samples of a 4096^3 matmul, none passed VerifyGPUCode (16 to
  // 1024 virtual threads against 8). blockIdx takes what is left. Mutations of the first draw
  // that move a factor out of the rest leave the later draws' decisions invalid; those
  // mutants fail to replay, the others (and fresh samples) explore.
  bool bound_levels(int n) const {
    return !opts_.tile_binds.empty() && n > static_cast<int>(opts_.tile_binds.size());
  }

  // GPU reduction loops: the shared tiles are staged under the outermost reduction level, so
  // the levels inside it (the k extent of one tile) are drawn together, bounded by
  // max_shared_k, then split; unbounded, most tiles of a 4096-long k exceeded the shared
  // memory.
  std::vector<LoopRV> split_shared_k(Schedule& sch, LoopRV loop, int n) const {
    std::vector<sdk::ExprRV> g = sch.sample_perfect_tile(loop, 2, opts_.max_shared_k);
    std::vector<LoopRV> two = sch.split(loop, {g[0], g[1]});
    std::vector<LoopRV> out = {two[0]};
    if (n == 2) {
      out.push_back(two[1]);
      return out;
    }
    std::vector<sdk::ExprRV> f = sch.sample_perfect_tile(two[1], n - 1, opts_.max_innermost_factor);
    std::vector<LoopRV> inner = sch.split(two[1], std::vector<sdk::Factor>(f.begin(), f.end()));
    out.insert(out.end(), inner.begin(), inner.end());
    return out;
  }

  int64_t level_bound(const std::string& tag) const {
    if (tag.rfind("threadIdx", 0) == 0) return opts_.max_thread_factor;
    if (tag.rfind("vthread", 0) == 0) return opts_.max_vthread_factor;
    return 0;
  }

  std::vector<LoopRV> split_bound_levels(Schedule& sch, LoopRV loop, int n) const {
    const int binds = static_cast<int>(opts_.tile_binds.size());
    std::vector<LoopRV> out(static_cast<size_t>(n));
    // A thread's own work along the loop (the unbound inner levels together), bounded, then
    // split among those levels; the rest goes to the bound ones.
    std::vector<sdk::ExprRV> w = sch.sample_perfect_tile(loop, 2, opts_.max_thread_work);
    std::vector<LoopRV> rest_work = sch.split(loop, {w[0], w[1]});
    LoopRV rest = rest_work[0];
    if (n - binds == 1) {
      out[static_cast<size_t>(binds)] = rest_work[1];
    } else {
      std::vector<sdk::ExprRV> f =
          sch.sample_perfect_tile(rest_work[1], n - binds, opts_.max_innermost_factor);
      std::vector<LoopRV> parts =
          sch.split(rest_work[1], std::vector<sdk::Factor>(f.begin(), f.end()));
      for (int l = binds; l < n; ++l)
        out[static_cast<size_t>(l)] = parts[static_cast<size_t>(l - binds)];
    }
    for (int l = binds - 1; l >= 1; --l) {
      int64_t bound = level_bound(opts_.tile_binds[static_cast<size_t>(l)]);
      std::vector<sdk::ExprRV> g =
          sch.sample_perfect_tile(rest, 2, bound > 0 ? bound : opts_.max_innermost_factor);
      std::vector<LoopRV> two = sch.split(rest, {g[0], g[1]});
      out[static_cast<size_t>(l)] = two[1];
      rest = two[0];
    }
    out[0] = rest;
    return out;
  }

  // The register tile of a space whose lanes run along a non-innermost axis: 3 to 8 rows (or
  // the padded factor) by one or two whole vectors, within the register budget.
  static constexpr int64_t kMaxTileRows = 8;

  // A register tile of R rows by V vectors holds R x V accumulators, the V vectors of the
  // operand it loads (a weight row, B's panel) and one broadcast: R x V + V + 1 registers.
  // Over the target's count, LLVM spills -- a ResNet 3x3 conv's 7 x 2 tile on AVX2 (17 of 16)
  // stored two accumulators and the broadcasts it re-used across the unrolled taps to the
  // stack on every step of the reduction.
  struct RegisterBudget {
    int64_t registers = 16;
    int64_t max_rows(int64_t vectors) const {
      if (vectors <= 0) return kMaxTileRows;
      return std::min(kMaxTileRows, (registers - 1 - vectors) / vectors);
    }
  };

  // Rows from two axes: when no row count of the row loop fits two vectors (a width of 14 on
  // AVX2: 7 x 2 needs 17 registers, 7 x 1 holds only 7 accumulators, 2 x 2 only 4), `rows` of
  // it times `outer_rows` of the nearest spatial loop outside it, their product within the
  // two-vector budget: 2 x 2 output positions of a 14 x 14 plane by 2 vectors, 8
  // accumulators. The largest product, then the most rows along the row loop. Measured on
  // Zen 1 before it was a space (a conv3d 64 -> 64, 8 x 14 x 14 record edited from 7 x 1 to
  // this, `metatune replay`, alternating rounds): 64.9-68.1 GFLOPS against 63.3-69.3 on two
  // cores, 35.1 against 29.7-32.0 alone on one; bench_register_tile: 4 x 2 at 96 % of the FMA
  // peak, 7 x 1 at 81-85 %. The tuned results: README (operator suite).
  struct TwoAxisRows {
    size_t outer_loop = 0;
    int64_t rows = 0, outer_rows = 0;
  };
  std::optional<TwoAxisRows> two_axis_rows(const Schedule& sch, const std::vector<LoopRV>& loops,
                                           const std::vector<LoopRole>& roles, size_t row,
                                           size_t lane) const {
    int64_t max_rows = budget_.max_rows(2);
    int64_t row_extent = sch.extent(loops[row]);
    if (sch.extent(loops[lane]) % (2 * lanes_) != 0) return std::nullopt;
    if (!row_counts(row_extent, max_rows).empty()) return std::nullopt;
    std::optional<size_t> outer;
    for (size_t i = row; i-- > 0;)
      if (!roles[i].reduce && i != lane && sch.extent(loops[i]) > 1) {
        outer = i;
        break;
      }
    if (!outer) return std::nullopt;
    int64_t outer_extent = sch.extent(loops[*outer]);
    std::optional<TwoAxisRows> best;
    for (int64_t r = 2; r <= max_rows; ++r) {
      if (row_extent % r != 0) continue;
      for (int64_t o = 2; r * o <= max_rows; ++o)
        if (outer_extent % o == 0 && (!best || r * o > best->rows * best->outer_rows ||
                                      (r * o == best->rows * best->outer_rows && r > best->rows)))
          best = TwoAxisRows{*outer, r, o};
    }
    return best;
  }

  // The block's loops before tiling and what each does.
  struct Nest {
    std::vector<LoopRV> loops;
    std::vector<LoopRole> roles;
  };

  // How the innermost spatial level becomes a register tile: its row loop, the loop its width
  // runs along in whole vectors (`tile_lane`, with `vectors` of them) and that loop's levels,
  // already split; rows over two loops where one is too short (`two_axis`). No row: no
  // register tile.
  struct RegisterTile {
    std::optional<size_t> row, tile_lane;
    std::optional<TwoAxisRows> two_axis;
    std::optional<std::vector<LoopRV>> lane_pieces;
    int64_t vectors = 0;
  };

  RegisterTile plan_register_tile(Schedule& sch, BlockRV block, const Nest& nest, Padded padded,
                                  std::optional<size_t> lane_loop, bool register_tile,
                                  int n_s) const {
    RegisterTile rt;
    rt.tile_lane = lane_loop;
    // Lanes along another axis than the innermost: the innermost spatial level is the register
    // tile alone -- rows (at most kMaxTileRows, or the padded factor) by a whole number of
    // vectors along the lane loop -- and every other spatial loop is tiled over the outer
    // levels. Left to sample_perfect_tile, such tiles are rare among the draws (and the space
    // has them all the same: the mutators move factors between levels).
    if (register_tile && !rt.tile_lane) {
      for (size_t i = 0; i < nest.loops.size(); ++i)
        if (!nest.roles[i].reduce && sch.extent(nest.loops[i]) > 1) rt.tile_lane = i;
    }
    if (register_tile && rt.tile_lane && n_s >= 2) {
      Schedule probe = sch.copy(); // its lookups are recorded in a trace thrown away
      rt.row = padded ? padded->first : row_loop(probe, block, lane_loop);
    }
    if (register_tile && !lane_loop && !rt.row)
      throw sdk::ScheduleError(MT_ERROR_SCHEDULE, "std.MultiLevelTiling: no register tile");
    if (rt.row && lane_loop && !padded)
      rt.two_axis = two_axis_rows(sch, nest.loops, nest.roles, *rt.row, *lane_loop);
    // The register tile's width is split first: its row count must leave registers for the
    // loaded vectors and the broadcast (see RegisterBudget).
    if (rt.row && n_s >= 2 && !nest.roles[*rt.tile_lane].reduce) {
      std::optional<int64_t> padded_rows;
      if (padded) padded_rows = padded->second;
      rt.lane_pieces =
          split_lanes(sch, nest.loops[*rt.tile_lane], n_s, sch.extent(nest.loops[*rt.row]),
                      padded_rows, rt.two_axis.has_value(), &rt.vectors);
      if (!rt.lane_pieces && !lane_loop)
        throw sdk::ScheduleError(MT_ERROR_SCHEDULE,
                                 "std.MultiLevelTiling: no whole vectors along the lanes");
    }
    return rt;
  }

  // Loop i split into its n levels, outermost first: by the register tile's plan where it is
  // one of its loops, else padded, bound to threads, shared along k, or sampled.
  std::vector<LoopRV> split_levels(Schedule& sch, const Nest& nest, size_t i, int n,
                                   const RegisterTile& rt, Padded padded) const {
    const LoopRV loop = nest.loops[i];
    const bool reduce = nest.roles[i].reduce;
    if (rt.row && !reduce && n >= 2 && !(padded && padded->first == i)) {
      std::optional<std::vector<LoopRV>> p;
      if (i == *rt.tile_lane)
        p = rt.lane_pieces;
      else if (i == *rt.row && rt.two_axis)
        p = split_inner_from(sch, loop, n, {rt.two_axis->rows});
      else if (i == *rt.row)
        p = split_rows(sch, loop, n, budget_.max_rows(rt.vectors));
      else if (rt.two_axis && i == rt.two_axis->outer_loop)
        p = split_inner_from(sch, loop, n, {rt.two_axis->outer_rows});
      else
        p = split_outer_levels(sch, loop, n);
      if (p) return std::move(*p);
    }
    // A structure without 'R' keeps reduction loops innermost, untiled.
    if (n <= 1) return {loop};
    if (padded && padded->first == i) {
      int64_t inner = padded->second, extent = sch.extent(loop);
      return split_inner(sch, loop, n, (extent + inner - 1) / inner, inner);
    }
    if (!reduce && bound_levels(n)) return split_bound_levels(sch, loop, n);
    if (reduce && !opts_.tile_binds.empty()) return split_shared_k(sch, loop, n);
    int64_t max_inner = rt.row && i == *rt.row ? kMaxTileRows : opts_.max_innermost_factor;
    std::vector<sdk::ExprRV> f = sch.sample_perfect_tile(loop, n, max_inner);
    return sch.split(loop, std::vector<sdk::Factor>(f.begin(), f.end()));
  }

  // Splits `loop` into [outer, inner], then tiles outer perfectly over the n - 1 outer levels
  // (no limit on their innermost: it is a middle level of the structure): `n` pieces.
  static std::vector<LoopRV> split_inner(Schedule& sch, LoopRV loop, int n, sdk::Factor outer,
                                         sdk::Factor inner) {
    std::vector<LoopRV> two = sch.split(loop, {outer, inner});
    std::vector<LoopRV> p{two[0]};
    if (n - 1 > 1) {
      std::vector<sdk::ExprRV> f = sch.sample_perfect_tile(two[0], n - 1, 0);
      p = sch.split(two[0], std::vector<sdk::Factor>(f.begin(), f.end()));
    }
    p.push_back(two[1]);
    return p;
  }

  // split_inner with the innermost piece drawn from `widths` (those dividing the extent;
  // nullopt when none does).
  static std::optional<std::vector<LoopRV>> split_inner_from(Schedule& sch, LoopRV loop, int n,
                                                             const std::vector<int64_t>& widths) {
    int64_t extent = sch.extent(loop);
    std::vector<int64_t> fit;
    for (int64_t w : widths)
      if (w > 0 && extent % w == 0) fit.push_back(w);
    if (fit.empty()) return std::nullopt;
    std::vector<double> probs(fit.size(), 1.0 / static_cast<double>(fit.size()));
    return split_inner(sch, loop, n, -1, sch.sample_categorical(fit, probs));
  }

  // The lane loop: two whole vectors when some row count of the row loop (`row_extent`, or
  // the padded space's `padded_rows`) fits the register budget with them, else one vector when
  // one fits with it (the row loop of width 14 on AVX2: 7 x 1, not 7 x 2), else either with a
  // 2-row tile (split_rows' fallback); two vectors always with rows from two axes
  // (`two_axis`, see TwoAxisRows). Decided from the extents, not drawn: re-sampling a
  // space draws every decision afresh, and a row count drawn for one width must fit the
  // other too. With `vectors` the widest width offered.
  std::optional<std::vector<LoopRV>> split_lanes(Schedule& sch, LoopRV loop, int n,
                                                 int64_t row_extent,
                                                 std::optional<int64_t> padded_rows, bool two_axis,
                                                 int64_t* vectors) const {
    int64_t extent = sch.extent(loop);
    if (two_axis) { // two_axis_rows() checked that two vectors divide the lanes
      *vectors = 2;
      return split_inner_from(sch, loop, n, {2 * lanes_});
    }
    auto fits = [&](int64_t v) {
      if (extent % (v * lanes_) != 0) return false;
      return padded_rows ? *padded_rows <= budget_.max_rows(v)
                         : !row_counts(row_extent, budget_.max_rows(v)).empty();
    };
    std::vector<int64_t> widths;
    if (fits(2))
      widths = {2 * lanes_};
    else if (fits(1))
      widths = {lanes_};
    else
      widths = {lanes_, 2 * lanes_};
    *vectors = widths.back() / lanes_;
    return split_inner_from(sch, loop, n, widths);
  }

  // Row counts of a register tile: 3 to `max_rows` that divide `extent`.
  static std::vector<int64_t> row_counts(int64_t extent, int64_t max_rows) {
    std::vector<int64_t> rows;
    for (int64_t r = 3; r <= max_rows; ++r)
      if (extent % r == 0) rows.push_back(r);
    return rows;
  }

  // The row loop: 3 to `max_rows` rows (2 when nothing larger divides it); a row count that
  // divides nothing is the padded space's. Drawn from the candidates, not from every divisor,
  // so that the first samples already are register tiles: a 1- or 2-row tile leaves the FMA
  // units waiting on each other's latency.
  static std::optional<std::vector<LoopRV>> split_rows(Schedule& sch, LoopRV loop, int n,
                                                       int64_t max_rows) {
    int64_t extent = sch.extent(loop);
    std::vector<int64_t> rows = row_counts(extent, max_rows);
    if (rows.empty() && extent % 2 == 0) rows.push_back(2);
    return split_inner_from(sch, loop, n, rows);
  }

  // Any other spatial loop of such a tile: tiled over the outer levels, 1 at the innermost.
  static std::vector<LoopRV> split_outer_levels(Schedule& sch, LoopRV loop, int n) {
    std::vector<sdk::Factor> factors;
    if (n - 1 > 1) {
      std::vector<sdk::ExprRV> f = sch.sample_perfect_tile(loop, n - 1, 0);
      factors.assign(f.begin(), f.end());
    } else {
      factors.push_back(-1);
    }
    factors.push_back(1);
    return sch.split(loop, factors);
  }

  void bind(State& s) const {
    for (size_t p = 0; p < opts_.tile_binds.size(); ++p) {
      if (s.tiles[p].empty()) continue;
      LoopRV l = s.tiles[p].size() > 1 ? s.sch.fuse(s.tiles[p]) : s.tiles[p][0];
      s.sch.bind(l, opts_.tile_binds[p]);
      s.tiles[p] = {l};
    }
  }

  // The loop a reuse level refers to: the innermost loop of that structure position (or of
  // the nearest outer position that has loops).
  static std::optional<LoopRV> level_loop(const State& s, int64_t level) {
    for (int64_t p = level - 1; p >= 0; --p)
      if (!s.tiles[static_cast<size_t>(p)].empty()) return s.tiles[static_cast<size_t>(p)].back();
    return std::nullopt;
  }

  std::vector<State> add_write_reuse(std::vector<State> states) const {
    if (opts_.write_reuse == Reuse::None) return states;
    std::vector<State> out;
    for (State& s : states) {
      std::vector<State> forks;
      for (int64_t level : opts_.write_levels) {
        std::optional<LoopRV> at = level_loop(s, level);
        if (!at) continue;
        State f = s.fork();
        try {
          BlockRV cache = f.sch.cache_write(f.block, 0, opts_.write_scope);
          f.sch.reverse_compute_at(cache, *at);
          fold_epilogue(f.sch, cache);
          if (f.lane) {
            // The accumulators with the lanes last, so that the tile's updates are whole
            // vectors; the write-back transposes once per output element.
            if (!f.sch.can_transform_layout()) continue;
            std::vector<int64_t> perm = lane_last_permutation(f.sch.writes(f.block).at(0), *f.lane);
            if (!perm.empty()) f.sch.transform_layout(f.block, 0, perm);
          }
          forks.push_back(std::move(f));
        } catch (const sdk::ScheduleError&) {
          // This level does not work for this block; the others may.
        }
      }
      // "may" keeps the space without the cache; so does "must" if no level worked. Lanes
      // along a non-innermost axis need the cache (their output elements are not adjacent).
      if ((opts_.write_reuse == Reuse::May && !s.lane) || forks.empty())
        out.push_back(std::move(s));
      for (State& f : forks)
        out.push_back(std::move(f));
    }
    return out;
  }

  // A channel-lane tile broadcasts one input element per row and step of the reduction; in the
  // input's own layout ([N, C, D, H, W]) the elements of successive channels lie a whole plane
  // apart (conv3d's padded planes: 10 KB, 32 sets of a 64-set L1 apart), so the few rows of a
  // tile's window share a handful of cache sets. Written channels-last by the producer (the pad
  // block, which copies every element anyway), they are adjacent. Each channel-lane space is
  // kept as it is and offered once more with that layout; the search picks per operator.
  std::vector<State> add_channels_last_input(std::vector<State> states) const {
    if (!opts_.channels_last_input) return states;
    std::vector<State> out;
    for (State& s : states) {
      std::optional<State> f;
      if (s.lane && s.sch.can_transform_layout()) {
        f = s.fork();
        if (!write_input_channels_last(*f)) f.reset();
      }
      out.push_back(std::move(s));
      if (f) out.push_back(std::move(*f));
    }
    return out;
  }

  // Transforms the producer of each input the lane does not index so that the dimension its
  // access indexes by reduction variables only (the input channels) comes last. Inputs without
  // a producer block (function arguments) keep their layout. True if any producer changed.
  static bool write_input_channels_last(State& s) {
    std::vector<sdk::ExprRef> reduce, spatial;
    for (const auto& iv : s.sch.iter_vars(s.block))
      (iv.kind == sdk::IterKind::Spatial ? spatial : reduce).push_back(iv.var);
    bool changed = false;
    for (const sdk::BufferAccess& a : s.sch.reads(s.block)) {
      if (access_uses(a, *s.lane)) continue; // the weight, loaded as vectors of the lane
      std::vector<int64_t> perm = reduce_only_last_permutation(a, reduce, spatial);
      if (perm.empty()) continue;
      for (BlockRV p : s.sch.get_producers(s.block)) {
        std::vector<sdk::BufferAccess> w = s.sch.writes(p);
        for (size_t i = 0; i < w.size(); ++i) {
          if (!(w[i].buffer == a.buffer)) continue;
          try {
            s.sch.transform_layout(p, static_cast<int>(i), perm);
            changed = true;
          } catch (const sdk::ScheduleError&) {
            // Refused (a function argument, a layout in use): the input keeps its layout.
          }
        }
      }
    }
    return changed;
  }

  // The permutation moving last the one dimension of `a` indexed by some of the `reduce`
  // variables and none of the `spatial` ones; empty when there is no such single dimension or
  // it is already last.
  static std::vector<int64_t>
  reduce_only_last_permutation(const sdk::BufferAccess& a, const std::vector<sdk::ExprRef>& reduce,
                               const std::vector<sdk::ExprRef>& spatial) {
    auto uses_any = [](const sdk::ExprRef& e, const std::vector<sdk::ExprRef>& vars) {
      return std::any_of(vars.begin(), vars.end(),
                         [&](const sdk::ExprRef& v) { return e.uses(v); });
    };
    return one_dimension_last(
        a, [&](const sdk::ExprRef& e) { return uses_any(e, reduce) && !uses_any(e, spatial); });
  }

  // Folds a single elementwise consumer of the write-back block into it, so that an epilogue
  // (bias, activation) runs on the tile while it is hot. A refusal keeps the consumer apart.
  static void fold_epilogue(Schedule& sch, BlockRV cache) {
    std::vector<BlockRV> consumers = sch.get_consumers(cache);
    if (consumers.size() != 1 || has_reduce_iter(sch, consumers[0])) return;
    try {
      sch.reverse_compute_inline(consumers[0]);
    } catch (const sdk::ScheduleError&) {
    }
  }

  // Stages every input into a cache under one level. "must": one level (the first) for all
  // inputs, as on GPU. "may" (CPU): the space without caches plus one space per level, so the
  // search can pick packing (a contiguous copy of a panel, no cache-set conflicts from large
  // power-of-two strides) where it pays.
  std::vector<State> add_read_reuse(std::vector<State> states) const {
    if (opts_.read_reuse == Reuse::None || opts_.read_levels.empty()) return states;
    std::vector<State> out;
    for (State& s : states) {
      std::vector<int64_t> levels = opts_.read_levels;
      if (opts_.read_reuse == Reuse::Must)
        levels.resize(1);
      else if (!s.lane) // other lanes load the unpacked operand with a stride: always stage
        out.push_back(s.fork());
      size_t before = out.size();
      if (opts_.read_reuse == Reuse::May && opts_.read_location == "sampled") {
        State v = s.fork();
        if (stage_inputs_sampled(v)) out.push_back(std::move(v));
        continue;
      }
      for (int64_t level : levels) {
        State v = s.fork();
        if (stage_inputs(v, level) || opts_.read_reuse == Reuse::Must) out.push_back(std::move(v));
      }
      if (out.size() == before && s.lane) out.push_back(std::move(s));
    }
    return out;
  }

  // A packed copy is only worth its cost if the vectorized axis -- the block's innermost
  // spatial iter var -- runs along the copy's last dimension: dense's weight[N, K] read along N
  // is staged as [K, N], so that the register tile loads whole vectors instead of gathering
  // (needs host ABI 1.2; without it, or when the axis is already last, the layout stays).
  static void pack_vector_axis_last(Schedule& sch, BlockRV block, BlockRV cache,
                                    const std::optional<sdk::ExprRef>& own_lane) {
    if (!sch.can_transform_layout()) return;
    std::optional<sdk::ExprRef> lane = lane_of(sch, block, own_lane);
    if (!lane) return;
    sdk::BufferRef staged = sch.writes(cache).at(0).buffer;
    for (const sdk::BufferAccess& a : sch.reads(block)) {
      if (a.buffer != staged || a.indices.empty()) continue;
      std::vector<int64_t> perm = lane_last_permutation(a, *lane);
      if (!perm.empty()) sch.transform_layout(cache, 0, perm);
      return;
    }
  }

  // Whether read `i` of the block is one to stage under read_inputs.
  bool wanted_input(const Schedule& sch, BlockRV block, size_t i,
                    const std::optional<sdk::ExprRef>& own_lane) const {
    if (opts_.read_inputs == "all") return true;
    std::optional<sdk::ExprRef> lane = lane_of(sch, block, own_lane);
    std::vector<sdk::BufferAccess> reads = sch.reads(block);
    return lane && i < reads.size() && access_uses(reads[i], *lane);
  }

  // Every input staged at its own sampled location; true if at least one was.
  bool stage_inputs_sampled(State& s) const {
    bool staged = false;
    size_t n = s.sch.reads(s.block).size();
    for (size_t i = 0; i < n; ++i) {
      if (!wanted_input(s.sch, s.block, i, s.lane)) continue;
      Schedule origin = s.sch.copy();
      BlockRV cache;
      try {
        cache = origin.cache_read(s.block, static_cast<int>(i), opts_.read_scope);
        pack_vector_axis_last(origin, s.block, cache, s.lane);
      } catch (const sdk::ScheduleError&) {
        continue;
      }
      // A drawn location the schedule refuses is drawn again (each draw from a fresh copy:
      // copies of one schedule draw alike), so that the space keeps the staged input.
      for (int attempt = 0; attempt < 8; ++attempt) {
        origin = origin.copy();
        Schedule t = origin.copy();
        try {
          LoopRV at = t.sample_compute_location(cache);
          t.compute_at(cache, at);
          s.sch = t;
          staged = true;
          break;
        } catch (const sdk::ScheduleError&) {
        }
      }
    }
    return staged;
  }

  // True if at least one input was staged.
  bool stage_inputs(State& s, int64_t level) const {
    std::optional<LoopRV> at = level_loop(s, level);
    if (!at) return false;
    bool staged = false;
    size_t n = s.sch.reads(s.block).size();
    for (size_t i = 0; i < n; ++i) {
      if (!wanted_input(s.sch, s.block, i, s.lane)) continue;
      // Each input on its own copy, so that one refusal does not leave a cache at the root.
      Schedule attempt = s.sch.copy();
      try {
        BlockRV cache = attempt.cache_read(s.block, static_cast<int>(i), opts_.read_scope);
        if (opts_.read_reuse == Reuse::May) pack_vector_axis_last(attempt, s.block, cache, s.lane);
        attempt.compute_at(cache, *at);
        if (!opts_.vector_load_lens.empty()) {
          std::vector<double> probs(opts_.vector_load_lens.size(),
                                    1.0 / static_cast<double>(opts_.vector_load_lens.size()));
          annotate_sampled(attempt, cache, keys::kCooperativeFetch, opts_.vector_load_lens, probs);
        } else if (opts_.read_reuse == Reuse::Must) {
          attempt.annotate(cache, keys::kCooperativeFetch, int64_t{1});
        }
        s.sch = attempt;
        staged = true;
      } catch (const sdk::ScheduleError&) {
      }
    }
    if (staged) pipeline(s.sch, *at);
    return staged;
  }

  // The loop the inputs are staged under, software-pipelined where asked: lowering builds the
  // pipeline where the loop's body begins with the fetches (leaves the loop as it is
  // elsewhere), and a sampled depth is resolved by std.RewriteSoftwarePipeline.
  void pipeline(Schedule& sch, LoopRV loop) const {
    const std::vector<int64_t>& st = opts_.pipeline_stages;
    if (st.empty() || (st.size() == 1 && st[0] == 1)) return;
    if (st.size() == 1) {
      sch.annotate(loop, sdk::program::kSoftwarePipelineStages, st[0]);
      return;
    }
    annotate_sampled(sch, loop, sdk::program::kSoftwarePipelineStages, st,
                     std::vector<double>(st.size(), 1.0 / static_cast<double>(st.size())));
  }

  Config config_;
  Options opts_;
  int64_t lanes_ = 8;
  RegisterBudget budget_;
};

} // namespace

void register_multi_level_tiling(sdk::Registry& r) {
  r.add<MultiLevelTiling>("std.MultiLevelTiling",
                          "tile reductions with reuse: SSRSRS (CPU) / SSSRRSRS (GPU) + caches");
}

} // namespace mt::std_rules
