// Hopper's warpgroup MMA (wgmma) schedules of std.MultiLevelTilingTensorCore, checked without
// an NVIDIA GPU: the OpenCL dialect writes each marked 64xN(x16) nest as its loops, after the
// same recognition and the same one-warpgroup-along-threadIdx.x check as the CUDA dialect, with
// the operand tiles in shared memory as the same core matrices (tensor_op.h) -- the fetches'
// wide moves index them through that layout -- so PoCL and the interpreter check the
// schedules, fetches and barriers. Also: the rule's arch gate and options, and VerifyGPUCode's
// register limit on a warpgroup's accumulator. The CUDA side: warpgroup_mma_cuda_test.cpp.
#include <set>

#include "generated_source.h"
#include "opencl_target.h"
#include "producer_warpgroup.h"
#include "tensor_core_samples.h"
#include "tensor_op.h"
#include "tma_copy.h"

namespace mt {
namespace {

namespace G = mt::gpu_codegen;
using namespace std_rules_test;

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
    ++n;
  return n;
}

// Samples of `space` on PoCL against the interpreter; `label` names them in the printout.
// `tma`: the swizzled operands' fetches are TMA box copies, emulated (tma_copy.h).
void check_on_opencl(const gpu_test::TensorCoreSpace& space, const char* label, bool tma = false) {
  PluginTarget& target = *gpu_test::opencl().target;
  gpu_test::Tally t;
  int two_groups = 0, pipelined = 0, wide = 0, boxes = 0;
  int n = gpu_test::for_each_tensor_core_sample(
      gpu_test::opencl().attrs, 4,
      [&](const gpu_test::TensorCoreSample& s) {
        std::string src = gpu_test::generated_source(s.scheduled, *G::opencl_dialect());
        ASSERT_EQ(src.rfind("refused", 0), std::string::npos) << src << "\n" << s.trace_json;
        // One warpgroup along x; warpgroups along y.
        ASSERT_NE(src.find("reqd_work_group_size(128, "), std::string::npos) << src;
        if (src.find("reqd_work_group_size(128, 2") != std::string::npos) ++two_groups;
        // The fetches move 16 bytes a lane through the core-matrix index.
        if (src.find("8 lanes in one move") != std::string::npos) ++wide;
        // A box copy per operand fetch, in the prologue and in the pipelined loop (a fetch
        // outside a pipeline stays the threads' own).
        const bool is_pipelined = gpu_test::is_pipelined(s.scheduled);
        if (is_pipelined) ++pipelined;
        if (tma && gpu_test::has_pipelined_loop(s.scheduled)) {
          EXPECT_GE(count(src, "TMA emulated"), 2) << src;
        }
        if (src.find("TMA emulated") != std::string::npos) ++boxes;
        EXPECT_EQ(gpu_test::build_and_compare(target, s.scheduled, s.reference, t, 1e-4, 1e-4), "")
            << s.spec << "\ntrace " << s.trace_json;
      },
      space);
  std::printf("[ %s on opencl ] %d samples: %d ran and were compared, %d refused%s%s\n", label, n,
              t.built, t.unsupported, t.last_unsupported.empty() ? "" : "; last: ",
              t.last_unsupported.substr(0, 400).c_str());
  std::printf("[ %s on opencl ] %d with two warpgroups, %d pipelined, %d with 16-byte fetches\n",
              label, two_groups, pipelined, wide);
  EXPECT_GE(n, 12);
  EXPECT_EQ(t.unsupported, 0) << t.last_unsupported;
  EXPECT_GE(two_groups, 1);
  EXPECT_GE(pipelined, 2);
  if (tma) {
    std::printf("[ %s on opencl ] %d with TMA box copies\n", label, boxes);
    EXPECT_GE(boxes, 2);
  } else {
    EXPECT_GE(wide, n / 2);
    EXPECT_EQ(boxes, 0);
  }
}

TEST(WarpgroupSchedules, RandomWgmmaSchedulesMatchTheInterpreterOnOpenCl) {
  REQUIRE_OPENCL();
  check_on_opencl(gpu_test::warpgroup_space(), "wgmma");
}

// The 128-byte swizzled operands (tensor_op.h): the fetches' 16-byte moves and the products'
// reads go through the same swizzled index, pipeline slots included.
TEST(WarpgroupSchedules, RandomSwizzledWgmmaSchedulesMatchTheInterpreterOnOpenCl) {
  REQUIRE_OPENCL();
  check_on_opencl(gpu_test::warpgroup_swizzle_space(), "wgmma swizzled");
}

// The swizzled tiles filled by TMA's box copies (tma_copy.h), which the OpenCL dialect writes
// from TMA's own definition of the swizzle and of a box: PoCL then checks the recogniser's boxes
// (coordinates, shared-memory starts, slots) and the two spellings of the layout against each
// other and the interpreter.
TEST(WarpgroupSchedules, RandomTmaWgmmaSchedulesMatchTheInterpreterOnOpenCl) {
  REQUIRE_OPENCL();
  check_on_opencl(gpu_test::warpgroup_tma_space(), "wgmma TMA", true);
}

// The recogniser (tma_copy.h) on hand-made fetch nests: a box copy is found with its row
// dimension and each box's first iteration; a transposed copy, a partial one, a slot that moves
// and a cast are refused with the reason.
TEST(WarpgroupSchedules, TheTmaRecogniserFindsBoxCopiesAndRefusesTheRest) {
  namespace P = sdk::program;
  P::Buffer S = P::make_buffer("S", P::DType::f16(), {2, 16, 128}, "shared");
  P::Buffer G = P::make_buffer("G", P::DType::f16(), {64, 256}, "global");
  P::Expr k = P::make_var("k"), r = P::make_var("r"), c = P::make_var("c"),
          lane = P::make_var("lane");
  // r, then c in chunks of 8 (a thread-bound loop and a vector, as a cooperative fetch is).
  auto nest = [&](const std::vector<P::Expr>& s, const std::vector<P::Expr>& g, int64_t rows) {
    P::Stmt store = P::make_store(S, s, P::make_load(G, g));
    return P::make_for(r, rows,
                       P::make_for(c, 16, P::make_for(lane, 8, store, P::ForKind::Vectorized),
                                   P::ForKind::ThreadBinding, {}, "threadIdx.x"));
  };
  P::Expr col = c * 8 + lane;
  std::string why;
  auto copy =
      G::match_tma_copy(nest({(k + 1) % 2, r, col}, {k * 0 + r + 16, k * 128 + col}, 16), &why);
  ASSERT_TRUE(copy) << why;
  EXPECT_EQ(copy->row_dim, 0);
  EXPECT_EQ(copy->rows, 16);
  EXPECT_EQ(copy->cols, 128);
  EXPECT_EQ(copy->bytes(), 16 * 128 * 2);
  ASSERT_EQ(copy->boxes.size(), 2u);
  // Box 1 starts at column 64: chunk 8 of the thread-bound loop, lane 0, row 0.
  EXPECT_EQ(copy->boxes[1].first.at(c->var_id), 8);
  EXPECT_EQ(copy->boxes[1].first.at(lane->var_id), 0);
  EXPECT_EQ(copy->boxes[1].first.at(r->var_id), 0);

  auto refused = [&](const P::Stmt& loop) {
    std::string reason;
    EXPECT_FALSE(G::match_tma_copy(loop, &reason));
    return reason;
  };
  EXPECT_EQ(refused(nest({(k + 1) % 2, r, col}, {col, r}, 16)),
            "the global index is not the tile's index plus one origin");
  EXPECT_EQ(refused(nest({(k + 1) % 2, r, col}, {r, col}, 8)),
            "the nest does not move every element of the tile");
  EXPECT_EQ(refused(nest({r % 2, r, col}, {r, col}, 16)), "the slot changes within the nest");
  P::Buffer F = P::make_buffer("F", P::DType::f32(), {64, 256}, "global");
  EXPECT_NE(refused(P::make_for(r, 16,
                                P::make_for(c, 128,
                                            P::make_store(S, {k % 2, r, c},
                                                          P::make_cast(P::DType::f16(),
                                                                       P::make_load(F, {r, c})))))),
            "");
}

// The producer warpgroup's plan (producer_warpgroup.h) on a hand-made pipeline of box copies:
// found with its stages and spare slot where each copy goes to its tile's slot; refused, with
// the reason, where a slot is off by one, the fetch does more than copy, the products write
// shared memory, or a loop runs the pipeline more than once.
TEST(WarpgroupSchedules, TheProducerPlanFollowsTheTilesAndRefusesTheRest) {
  namespace P = sdk::program;
  // Two stages and a spare slot: 3 slots; 4 k-tiles of 64 x 128.
  P::Buffer S = P::make_buffer("S", P::DType::f16(), {3, 16, 128}, "shared");
  P::Buffer G = P::make_buffer("G", P::DType::f16(), {16, 512}, "global");
  P::Buffer acc = P::make_buffer("acc", P::DType::f32(), {1}, "local");
  P::Expr k = P::make_var("k"), kp = P::make_var("kp"), r = P::make_var("r"), c = P::make_var("c"),
          lane = P::make_var("lane"), ty = P::make_var("ty"), bx = P::make_var("bx"),
          outer = P::make_var("outer");
  auto nest = [&](const P::Expr& slot, const P::Expr& tile) {
    P::Expr col = c * 8 + lane;
    P::Stmt store = P::make_store(S, {slot, r, col}, P::make_load(G, {r, tile * 128 + col}));
    return P::make_for(r, 16,
                       P::make_for(c, 16, P::make_for(lane, 8, store, P::ForKind::Vectorized),
                                   P::ForKind::ThreadBinding, {}, "threadIdx.x"));
  };
  P::Stmt product =
      P::make_store(acc, {0}, P::make_cast(P::DType::f32(), P::make_load(S, {k % 3, 0, 0})));
  auto kernel = [&](const P::Expr& loop_slot, const P::Stmt& extra_fetch,
                    const P::Stmt& extra_product, int64_t repeats) {
    std::vector<P::Stmt> fetch{nest(loop_slot, k + 1)};
    if (extra_fetch) fetch.push_back(extra_fetch);
    std::vector<P::Stmt> body{P::make_if(k < 3, P::make_seq(fetch)), product};
    if (extra_product) body.push_back(extra_product);
    P::Stmt pipeline = P::make_for(
        k, 4, P::make_seq(body), P::ForKind::Serial,
        {{P::kSoftwarePipelineStages, int64_t{2}}, {P::kSoftwarePipelineSpareSlots, int64_t{1}}});
    P::Stmt prologue = P::make_for(kp, 1, nest(kp, kp), P::ForKind::Serial,
                                   {{P::kSoftwarePipelinePrologue, int64_t{1}}});
    P::Stmt inner = P::make_allocate(acc, P::make_seq({prologue, pipeline}));
    if (repeats > 1) inner = P::make_for(outer, repeats, inner);
    return P::make_for(bx, 8,
                       P::make_for(ty, 2, inner, P::ForKind::ThreadBinding, {}, "threadIdx.y"),
                       P::ForKind::ThreadBinding, {}, "blockIdx.x");
  };
  // The box copies, as the writer finds them (tma_copy.h).
  auto plan = [&](const P::Stmt& body, std::string* why) {
    std::map<const P::StmtNode*, G::TmaCopy> copies;
    P::visit_stmts(body, [&](const P::Stmt& x) {
      if (x->kind != P::StmtKind::For || x->thread_tag != "" || x->extent != 16) return true;
      std::string unused;
      if (auto copy = G::match_tma_copy(x, &unused)) copies.emplace(x.get(), std::move(*copy));
      return true;
    });
    return G::plan_producer(
        body,
        [&](const P::StmtNode* n) -> const G::TmaCopy* {
          auto it = copies.find(n);
          return it == copies.end() ? nullptr : &it->second;
        },
        why);
  };
  std::string why;
  P::Stmt good = kernel((k + 1) % 3, nullptr, nullptr, 1);
  auto found = plan(good, &why);
  ASSERT_TRUE(found) << why;
  EXPECT_EQ(found->stages, 2);
  EXPECT_EQ(found->spare, 1);
  ASSERT_NE(found->pipeline, nullptr);
  EXPECT_EQ(found->pipeline->extent, 4);
  ASSERT_NE(found->prologue, nullptr);

  auto refused = [&](const P::Stmt& body) {
    std::string reason;
    EXPECT_FALSE(plan(body, &reason));
    return reason;
  };
  EXPECT_EQ(refused(kernel((k + 2) % 3, nullptr, nullptr, 1)),
            "a copy's slot is not its tile's (iteration 0 of `k`)");
  EXPECT_EQ(refused(kernel((k + 1) % 3, P::make_store(S, {0, 0, 0}, P::make_load(G, {0, 0})),
                           nullptr, 1)),
            "the pipeline's fetch does more than its TMA copies");
  EXPECT_EQ(refused(kernel((k + 1) % 3, nullptr,
                           P::make_store(S, {0, 0, 0}, P::make_load(G, {0, 0})), 1)),
            "the pipelined loop's products write shared memory");
  EXPECT_EQ(refused(kernel((k + 1) % 3, nullptr, nullptr, 2)),
            "the pipeline is under a loop of 2 iterations");
}

// The value of an index expression over constants (the operations core_matrix_offset writes).
int64_t evaluate(const sdk::program::Expr& e) {
  using K = sdk::program::ExprKind;
  if (e->kind == K::IntImm) return e->int_value;
  const int64_t a = evaluate(e->args[0]), b = evaluate(e->args[1]);
  switch (e->kind) {
  case K::Add:
    return a + b;
  case K::Sub:
    return a - b;
  case K::Mul:
    return a * b;
  case K::FloorDiv:
    return a / b; // the operands are not negative
  case K::FloorMod:
    return a % b;
  default:
    ADD_FAILURE() << "unexpected " << sdk::program::to_string(e);
    return 0;
  }
}

// The 128-byte swizzle as the hardware reads it (CUTLASS's Swizzle<3, 4, 3> on byte addresses,
// as wgmma_swizzle_probe_test.cpp lays its operands out): in each 1024-byte atom of 8 rows of
// 128 bytes, chunk j of row r at chunk j ^ r; atoms down the rows; 64-column blocks R*64 apart.
TEST(WarpgroupSchedules, TheSwizzledLayoutIsTheHardwaresAndABijection) {
  namespace P = sdk::program;
  const int64_t slots = 2, R = 64, C = 128;
  P::Buffer buf = P::make_buffer("B_shared", P::DType::f16(), {slots, R, C}, "shared");
  std::vector<bool> seen(static_cast<size_t>(slots * R * C), false);
  for (int64_t s = 0; s < slots; ++s)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t got = evaluate(G::core_matrix_offset(
            *buf, {P::int_imm(s), P::int_imm(r), P::int_imm(c)}, G::CoreMatrixLayout::Swizzle128));
        const int64_t byte = s * R * C * 2 + (c / 64) * R * 128 + r * 128 + (c % 64) * 2;
        const int64_t swizzled = byte ^ (((byte >> 7) & 7) << 4);
        ASSERT_EQ(got * 2, swizzled) << "slot " << s << " row " << r << " column " << c;
        ASSERT_FALSE(seen[static_cast<size_t>(got)]);
        seen[static_cast<size_t>(got)] = true;
      }
  // The descriptors' offsets: those the probe reads (K-major: stride 1024; MN-major B[k, n]:
  // leading R * 128 along n, stride 1024 along k).
  // One tile of rows x columns: as A[m, k] it is K-major, as B[k, n] MN-major.
  G::Tile tile{buf, {}, 1, 2};
  G::GroupOperand a = G::group_operand(tile, true, G::CoreMatrixLayout::Swizzle128);
  G::GroupOperand b = G::group_operand(tile, false, G::CoreMatrixLayout::Swizzle128);
  EXPECT_TRUE(a.k_major && a.swizzle128);
  EXPECT_EQ(a.sbo_bytes, 1024);
  EXPECT_TRUE(!b.k_major && b.swizzle128);
  EXPECT_EQ(b.lbo_bytes, R * 128);
  EXPECT_EQ(b.sbo_bytes, 1024);
}

// The tensor-core rule's design spaces for a 128x128x64 f16 matmul on `arch` with `config`,
// counted by what their traces ask for.
struct SpaceCounts {
  int wgmma = 0, swizzled = 0, wmma = 0, tma = 0, producer = 0;
};
SpaceCounts tensor_core_spaces(const std::string& arch, const std::string& config = "") {
  TuneAttributes attrs = gpu_set().attrs;
  attrs["arch"] = arch;
  std::vector<std::unique_ptr<PluginScheduleRule>> rules;
  rules.push_back(host().create_schedule_rule("std.MultiLevelTilingTensorCore", config));
  rules.back()->initialize(attrs);
  SpaceCounts n;
  for (const auto& space : generate_design_spaces(
           make_workload("matmul(M=128,N=128,K=64,dtype=f16,out_dtype=f32)"), rules, 1)) {
    const std::string json = space->trace().to_json();
    n.wgmma += json.find("wgmma.mma") != std::string::npos;
    n.swizzled += json.find(sdk::program::kWgmmaSwizzleAnnotation) != std::string::npos;
    n.wmma += json.find("wmma.mma") != std::string::npos;
    n.tma += json.find(sdk::program::kWgmmaTmaAnnotation) != std::string::npos;
    n.producer += json.find(sdk::program::kWgmmaProducerAnnotation) != std::string::npos;
  }
  return n;
}

// "auto" adds the wgmma space where the arch is sm_90 or newer, and only there.
TEST(WarpgroupSchedules, TheRuleAddsTheWgmmaSpaceFromSm90) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    SpaceCounts n = tensor_core_spaces(arch);
    // Two wgmma spaces: plain core matrices and the 128-byte swizzle ("wgmma_swizzle": "both";
    // "wgmma_tma": "never" by default).
    EXPECT_EQ(n.wgmma, std::string(arch) == "sm_90" ? 2 : 0) << arch;
    EXPECT_EQ(n.swizzled, std::string(arch) == "sm_90" ? 1 : 0) << arch;
    EXPECT_EQ(n.wmma, 1) << arch;
  }
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTilingTensorCore",
                                           R"({"wgmma_swizzle": "sometimes"})"),
               std::exception);
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTilingTensorCore",
                                           R"({"wgmma_tma": "sometimes"})"),
               std::exception);
  // "wgmma_tma": a third wgmma space ("both"), or the swizzled one asking for TMA ("always").
  for (const char* tma : {"both", "always"}) {
    SpaceCounts n = tensor_core_spaces("sm_90", std::string(R"({"wgmma_tma": ")") + tma + "\"}");
    EXPECT_EQ(n.wgmma, std::string(tma) == "both" ? 3 : 2) << tma;
    EXPECT_EQ(n.tma, 1) << tma;
  }
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTilingTensorCore",
                                           R"({"wgmma_producer": "sometimes"})"),
               std::exception);
  // "wgmma_producer" doubles the TMA space ("both": one of the two asks for a producer
  // warpgroup) or makes it ask ("always"); without TMA ("never", the default) it adds nothing.
  for (const char* producer : {"both", "always"})
    for (const char* tma : {"both", "never"}) {
      SpaceCounts n =
          tensor_core_spaces("sm_90", std::string(R"({"wgmma_tma": ")") + tma +
                                          R"(", "wgmma_producer": ")" + producer + "\"}");
      const bool both = std::string(producer) == "both";
      if (std::string(tma) == "never") {
        EXPECT_EQ(n.wgmma, 2) << producer;
        EXPECT_EQ(n.producer, 0) << producer;
        continue;
      }
      EXPECT_EQ(n.wgmma, both ? 4 : 3) << producer;
      EXPECT_EQ(n.tma, both ? 2 : 1) << producer;
      EXPECT_EQ(n.producer, 1) << producer;
    }
  EXPECT_THROW(
      host().create_schedule_rule("std.MultiLevelTilingTensorCore", R"({"wgmma_cols": [72]})"),
      std::exception);
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTilingTensorCore", R"({"wgmma": "yes"})"),
               std::exception);
}

// A thread holds at most 255 registers: a warpgroup accumulator of 64 x 256 floats (128 a
// thread) passes VerifyGPUCode, one of 128 x 256 (256 a thread) is refused with the reason.
TEST(WarpgroupSchedules, AnAccumulatorBeyondAThreadsRegistersIsRefusedWithTheReason) {
  TuneAttributes attrs = gpu_set().attrs;
  attrs["max_local_memory_per_block"] = int64_t{255 * 4};
  auto postprocs = gpu_test::gpu_postprocs(attrs);
  Function func = make_workload("matmul(M=256,N=256,K=64,dtype=f16,out_dtype=f32)");
  for (int64_t rows : {int64_t{64}, int64_t{128}}) {
    Schedule sch(func);
    BlockRV b = sch.get_block("matmul");
    BlockRV acc = sch.cache_write(b, 0, "wgmma.accumulator");
    std::vector<LoopRV> loops = sch.get_loops(b);
    std::vector<LoopRV> i = sch.split(loops[0], {-1, 2, rows}); // [block, warpgroup, rows]
    sch.bind(i[0], "blockIdx.x");
    sch.bind(i[1], "threadIdx.y");
    sch.reverse_compute_at(acc, i[1]);
    std::shared_ptr<Schedule> s;
    std::string refused;
    SampleOutcome got = sample(func, sch.trace(), 1, false, postprocs, &s, &refused);
    if (rows == 64) {
      EXPECT_EQ(refused.find("bytes of local memory"), std::string::npos) << refused;
    } else {
      EXPECT_NE(got, SampleOutcome::Ok);
      EXPECT_NE(refused.find("1024 bytes of local memory (limit 1020)"), std::string::npos)
          << refused;
    }
  }
}

} // namespace
} // namespace mt
