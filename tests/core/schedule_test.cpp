// Schedule primitives on concrete workloads: structure of the result, numbers against the
// unscheduled function in the interpreter, and the errors of refused primitives.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/ir/parser.h"
#include "core/ir/printer.h"
#include "core/ir/structural.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/runtime/arguments.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"

namespace mt {
namespace {

// Runs `f` on deterministic random inputs; outputs start as NaN so unwritten elements show.
std::vector<NDArray> run(const Function& f, uint64_t seed = 7) {
  std::vector<NDArray> args = make_arguments(f, {.seed = seed});
  interpret(f, pointers(args));
  return args;
}

void expect_same_numbers(const Function& ref, const Function& got) {
  auto a = run(ref), b = run(got);
  for (size_t i = 0; i < a.size(); ++i) {
    std::string why;
    EXPECT_TRUE(allclose(b[i], a[i], 1e-4, 1e-5, &why)) << "param " << i << ": " << why << "\n"
                                                        << print(got);
  }
}

TEST(Schedule, SplitReorderFuseMatmul) {
  Function f = make_workload("matmul(M=32,N=24,K=16)");
  Schedule sch(f);
  BlockRV c = sch.get_block(sch.name_of(sch.all_blocks()[0]));
  auto loops = sch.get_loops(c);
  ASSERT_EQ(loops.size(), 3u);
  auto i = sch.split(loops[0], {int64_t(4), int64_t(8)});
  auto j = sch.split(loops[1], {int64_t(-1), int64_t(8)});
  sch.reorder({i[0], j[0], loops[2], i[1], j[1]});
  sch.vectorize(j[1]);
  LoopRV fused = sch.fuse({i[0], j[0]});
  sch.parallel(fused);
  EXPECT_EQ(sch.get(fused).extent, 4 * 3);
  EXPECT_EQ(sch.get(fused).for_kind, ForKind::Parallel);
  EXPECT_EQ(sch.get_loops(c).size(), 4u);
  expect_same_numbers(f, sch.func());
}

TEST(Schedule, ImperfectSplitAddsPredicate) {
  Function f = make_workload("matmul(M=10,N=6,K=5)");
  Schedule sch(f);
  BlockRV c = sch.all_blocks()[0];
  auto l = sch.get_loops(c);
  auto parts = sch.split(l[0], {int64_t(-1), int64_t(4)});
  EXPECT_EQ(sch.get(parts[0]).extent, 3);
  EXPECT_NE(print(sch.func()).find("<"), std::string::npos);
  expect_same_numbers(f, sch.func());
}

TEST(Schedule, RefusalsNameThePrimitiveAndLeaveTheScheduleUnchanged) {
  Function f = make_workload("matmul(M=8,N=8,K=8)");
  Schedule sch(f);
  BlockRV c = sch.all_blocks()[0];
  auto l = sch.get_loops(c);
  std::string before = print(sch.func());
  size_t trace_len = sch.trace().size();
  try {
    sch.parallel(l[2]); // the reduction loop
    FAIL() << "parallel on a reduction loop must be refused";
  } catch (const ScheduleError& e) {
    EXPECT_EQ(e.primitive(), "parallel");
    EXPECT_NE(std::string(e.what()).find("reduction"), std::string::npos) << e.what();
    EXPECT_NE(e.subject().find("l2"), std::string::npos) << e.subject();
  }
  EXPECT_THROW(sch.split(l[0], {int64_t(3), int64_t(2)}), ScheduleError); // 6 < 8
  EXPECT_THROW(sch.split(l[0], {int64_t(0), int64_t(-1)}), ScheduleError);
  EXPECT_THROW(sch.fuse({l[0], l[2]}), ScheduleError); // not directly nested
  EXPECT_THROW(sch.compute_inline(c), ScheduleError);  // reduction writing an output
  EXPECT_THROW(sch.get_block("nope"), ScheduleError);
  EXPECT_EQ(print(sch.func()), before);
  EXPECT_EQ(sch.trace().size(), trace_len);
}

// A producer whose value (`terms` products) is read `reads` times by its consumer.
Function copied_value_function(int terms, int reads) {
  std::string value = "A[vi]";
  for (int t = 1; t < terms; ++t)
    value = "(" + value + " * A[vi] + " + std::to_string(t) + "f32)";
  std::string uses = "t[vi]";
  for (int r = 1; r < reads; ++r)
    uses += " + t[vi] * " + std::to_string(r) + "f32";
  return parse_function("func copied(A: f32[16], B: f32[16]) {\n"
                        "  buffer t: f32[16]\n"
                        "  for i in 16 {\n"
                        "    block t(vi: S[16] = i) {\n"
                        "      t[vi] = " +
                            value +
                            "\n"
                            "    }\n"
                            "  }\n"
                            "  for i in 16 {\n"
                            "    block B(vi: S[16] = i) {\n"
                            "      B[vi] = " +
                            uses +
                            "\n"
                            "    }\n"
                            "  }\n"
                            "}\n",
                        "copied.ir");
}

// Inlining copies the producer's value into each read: refused past 4096 added nodes (the
// schedule unchanged, the reason named), in either direction; a small copy goes ahead.
TEST(Schedule, InliningThatWouldCopyAValueTooOftenIsRefused) {
  Function big = copied_value_function(40, 64); // about 200 nodes, 64 reads
  for (bool reverse : {false, true}) {
    Schedule sch(big);
    std::string before = print(sch.func());
    try {
      if (reverse)
        sch.reverse_compute_inline(sch.get_block("B"));
      else
        sch.compute_inline(sch.get_block("t"));
      FAIL() << "an inlining of 64 copies of a 200-node value must be refused";
    } catch (const ScheduleError& e) {
      EXPECT_NE(std::string(e.what()).find("expression nodes into 64 reads"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(print(sch.func()), before);
  }
  Function small = copied_value_function(4, 8);
  Schedule sch(small);
  sch.compute_inline(sch.get_block("t"));
  EXPECT_EQ(sch.all_blocks().size(), 1u);
  expect_same_numbers(small, sch.func());
}

TEST(Schedule, ComputeAtAndInlineOnDenseGelu) {
  Function f = make_workload("dense(M=8,N=16,K=12,bias=1,act=gelu)");
  Schedule sch(f);
  auto blocks = sch.all_blocks();
  ASSERT_GE(blocks.size(), 2u);
  // Inline every elementwise block that can be inlined, then tile the matmul and move the
  // epilogue under its outer loop.
  for (size_t k = 1; k + 1 < blocks.size(); ++k) {
    try {
      sch.compute_inline(blocks[k]);
    } catch (const ScheduleError&) {
    }
  }
  BlockRV mm = blocks[0];
  auto l = sch.get_loops(mm);
  auto i = sch.split(l[0], {int64_t(2), int64_t(4)});
  BlockRV last = sch.all_blocks().back();
  sch.reverse_compute_at(last, i[0]);
  expect_same_numbers(f, sch.func());
}

// A register tile whose rows do not divide the extent (6 rows over 100): the accumulator
// block is predicated by its own bound, so the write-back can still follow it per tile.
TEST(Schedule, ReverseComputeAtFollowsAnImperfectSplit) {
  Function f = make_workload("matmul(M=100,N=32,K=24)");
  Schedule sch(f);
  BlockRV c = sch.all_blocks()[0];
  auto l = sch.get_loops(c);
  auto i = sch.split(l[0], {int64_t(3), int64_t(6), int64_t(6)}); // 108 rows for 100
  auto j = sch.split(l[1], {int64_t(-1), int64_t(16)});
  sch.reorder({i[0], j[0], i[1], l[2], i[2], j[1]});
  BlockRV cw = sch.cache_write(c, 0, "local");
  sch.reverse_compute_at(cw, i[1]);
  sch.decompose_reduction(c, l[2]);
  sch.vectorize(j[1]);
  sch.unroll(i[2]);
  sch.parallel(i[0]);
  expect_same_numbers(f, sch.func());
}

// Splitting a loop that came from an earlier perfect split guards the block with the inner
// part only (`i1_0*6 + i1_1 < 32`), which does not bound the rows written per outer
// iteration: following it would read rows nothing wrote.
TEST(Schedule, ReverseComputeAtRefusesAGuardBeyondTheBlockDomain) {
  Function f = make_workload("matmul(M=64,N=16,K=8)");
  Schedule sch(f);
  BlockRV c = sch.all_blocks()[0];
  auto l = sch.get_loops(c);
  auto i = sch.split(l[0], {int64_t(2), int64_t(32)});
  auto ii = sch.split(i[1], {int64_t(6), int64_t(6)}); // 36 for 32
  sch.reorder({i[0], ii[0], l[1], l[2], ii[1]});
  BlockRV cw = sch.cache_write(c, 0, "local");
  std::string before = print(sch.func());
  try {
    sch.reverse_compute_at(cw, ii[0]);
    FAIL() << "accepted:\n" << print(sch.func());
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("predicated beyond its own bounds"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(print(sch.func()), before);
}

// dense's weight staged and packed as [K, N] -- what MultiLevelTiling does to the operand its
// register tile loads as vectors; returns the copy's block.
BlockRV stage_weight_packed(Schedule& sch, BlockRV dense) {
  BlockRV w = sch.cache_read(dense, 1, "global");
  sch.transform_layout(w, 0, {1, 0});
  return w;
}

// The schedule's trace, replayed on `f`, gives the same function.
void expect_trace_replays(const Function& f, const Schedule& sch) {
  Schedule again(f);
  Trace::from_json(sch.trace().to_json()).apply_to(again);
  EXPECT_TRUE(structural_equal(again.func(), sch.func()));
}

// The staged copy of dense's weight transposed to [K, N]: same numbers, the trace replays
// to the same function, and a function argument's layout is refused.
TEST(Schedule, TransformLayoutPermutesAStagedBuffer) {
  Function f = make_workload("dense(M=8,N=16,K=12,bias=0,act=none)");
  Schedule sch(f);
  BlockRV c = sch.all_blocks()[0];
  BlockRV w = stage_weight_packed(sch, c);
  sch.compute_at(w, sch.get_loops(c)[0]);
  Buffer staged;
  for (const Buffer& b : sch.func().buffers)
    if (b->name == "weight_global") staged = b;
  ASSERT_TRUE(staged);
  EXPECT_EQ(staged->shape, (std::vector<int64_t>{12, 16}));
  expect_same_numbers(f, sch.func());
  expect_trace_replays(f, sch);

  std::string before = print(sch.func());
  EXPECT_THROW(sch.transform_layout(c, 0, {1, 0}), ScheduleError); // writes the argument
  EXPECT_THROW(sch.transform_layout(w, 0, {0, 0}), ScheduleError);
  EXPECT_THROW(sch.transform_layout(w, 0, {1}), ScheduleError);
  EXPECT_EQ(print(sch.func()), before);
}

// compute_at gives a producer its loops in the order of the dimensions it writes: the staged
// weight packed as [K, N] copies with N innermost (whole vectors stored along it, the reads
// gathered), not in the source's [N, K] order, whose every store would be a scatter. A
// producer that writes in its iter vars' order keeps that order.
TEST(Schedule, ComputeAtOrdersAProducersLoopsByWhatItWrites) {
  Function f = make_workload("dense(M=8,N=16,K=12,bias=0,act=none)");
  Schedule sch(f);
  BlockRV c = sch.all_blocks()[0];
  BlockRV w = stage_weight_packed(sch, c);
  BlockRV d = sch.cache_read(c, 0, "global");
  std::vector<LoopRV> loops = sch.get_loops(c);
  sch.compute_at(w, loops[0]);
  sch.compute_at(d, loops[0]);
  std::string text = print(sch.func());
  size_t copy = text.find("block weight_global");
  ASSERT_NE(copy, std::string::npos) << text;
  std::string before_copy = text.substr(0, copy);
  size_t k_loop = before_copy.rfind("for ax1 in 12"), n_loop = before_copy.rfind("for ax0 in 16");
  ASSERT_NE(k_loop, std::string::npos) << text;
  ASSERT_NE(n_loop, std::string::npos) << text;
  EXPECT_LT(k_loop, n_loop) << text; // K outer, N (the packed layout's last) innermost
  size_t data_copy = text.find("block data_global");
  ASSERT_NE(data_copy, std::string::npos) << text;
  EXPECT_LT(text.rfind("for ax0", data_copy), data_copy);
  EXPECT_LT(text.rfind("for ax0", data_copy), text.rfind("for ax1", data_copy)) << text;
  expect_same_numbers(f, sch.func());
  expect_trace_replays(f, sch);
}

TEST(Schedule, CacheReadWriteDecomposeRfactor) {
  Function f = make_workload("matmul(M=8,N=8,K=16)");
  {
    Schedule sch(f);
    BlockRV c = sch.all_blocks()[0];
    auto l = sch.get_loops(c);
    BlockRV ar = sch.cache_read(c, 0, "shared");
    sch.compute_at(ar, l[0]);
    BlockRV cw = sch.cache_write(c, 0, "local");
    sch.reverse_compute_at(cw, sch.get_loops(c)[0]);
    sch.decompose_reduction(c, sch.get_loops(c)[1]);
    expect_same_numbers(f, sch.func());
  }
  {
    Schedule sch(f);
    BlockRV c = sch.all_blocks()[0];
    auto l = sch.get_loops(c);
    auto k = sch.split(l[2], {int64_t(4), int64_t(4)});
    BlockRV rf = sch.rfactor(k[1], 0);
    EXPECT_EQ(sch.all_blocks().size(), 2u);
    EXPECT_NE(sch.name_of(rf), sch.name_of(c));
    expect_same_numbers(f, sch.func());
  }
}

// A buffer in "shared" scope computed at a loop under threadIdx serves every thread of the
// block: its region is relaxed over the thread-bound loops (the block's rows, not one thread's),
// so that a GPU, where the loops that fill it run once per block, gets what each thread reads.
// A "local" buffer stays per thread.
TEST(Schedule, ComputeAtUnderThreadLoopsCoversTheBlockForSharedScope) {
  Function f = make_workload("matmul(M=16,N=16,K=16)");
  auto rows_of = [&](const std::string& scope) {
    Schedule sch(f);
    BlockRV c = sch.all_blocks()[0];
    auto l = sch.get_loops(c);
    auto i = sch.split(l[0], {int64_t(4), int64_t(4)});
    auto k = sch.split(l[2], {int64_t(4), int64_t(4)});
    sch.reorder({i[0], i[1], l[1], k[0], k[1]});
    sch.bind(i[0], "blockIdx.x");
    sch.bind(i[1], "threadIdx.x");
    BlockRV a = sch.cache_read(c, 0, scope);
    sch.compute_at(a, k[0]);
    expect_same_numbers(f, sch.func());
    // Elements the nest under k_0 writes into the cache per iteration of k_0.
    int64_t per_iteration = 0;
    std::function<void(const Stmt&, int64_t, bool)> walk = [&](const Stmt& s, int64_t n,
                                                               bool below) {
      if (!s) return;
      if (s->kind == StmtKind::For) {
        auto* fl = as<ForNode>(s);
        walk(fl->body, below ? n * fl->extent : n, below || fl->loop_var->name == "k_0");
        return;
      }
      if (s->kind == StmtKind::Store && as<StoreNode>(s)->buffer->scope == scope && below)
        per_iteration = n;
      for (const Stmt& c : children(s))
        walk(c, n, below);
    };
    walk(lower(sch.func()).body, 1, false);
    return per_iteration;
  };
  EXPECT_EQ(rows_of("shared"), 4 * 4); // the 4 threads' rows of the k_0 tile, once per block
  EXPECT_EQ(rows_of("local"), 1 * 4);  // this thread's row
}

TEST(Trace, JsonRoundTripAndReplayGiveEqualFunctions) {
  Function f = make_workload("matmul(M=16,N=16,K=16)");
  Schedule sch(f, 42);
  BlockRV c = sch.all_blocks()[0];
  auto l = sch.get_loops(c);
  auto t0 = sch.sample_perfect_tile(l[0], 3, 8);
  sch.split(l[0], std::vector<Factor>(t0.begin(), t0.end()));
  auto u = sch.sample_categorical({0, 16, 64}, {0.2, 0.3, 0.5});
  sch.annotate(c, "meta_schedule.unroll_explicit", u);
  std::string js = sch.trace().to_json();
  Trace back = Trace::from_json(js);
  EXPECT_EQ(back.to_json(), js);
  Schedule re(f, 999);
  back.apply_to(re, true);
  EXPECT_TRUE(structural_equal(re.func(), sch.func())) << print(re.func()) << "\n---\n"
                                                       << print(sch.func());
  EXPECT_EQ(structural_hash(re.func()), structural_hash(sch.func()));
}

TEST(Trace, SameSeedSameTraceAndChangedDecisionStillCorrect) {
  Function f = make_workload("matmul(M=16,N=32,K=8)");
  auto build = [&](uint64_t seed) {
    auto s = std::make_unique<Schedule>(f, seed);
    BlockRV c = s->all_blocks()[0];
    auto l = s->get_loops(c);
    auto t = s->sample_perfect_tile(l[1], 2, 16);
    s->split(l[1], std::vector<Factor>(t.begin(), t.end()));
    return s;
  };
  EXPECT_EQ(build(5)->trace().to_json(), build(5)->trace().to_json());
  auto s = build(5);
  size_t idx = s->trace().sampling_indices().at(0);
  std::vector<int64_t> old = *s->trace().instructions()[idx].decision;
  std::vector<int64_t> changed =
      old[0] == 32 ? std::vector<int64_t>{16, 2} : std::vector<int64_t>{32, 1};
  Trace mutated = s->trace().with_decision(idx, changed);
  Schedule re(f);
  mutated.apply_to(re, true);
  EXPECT_FALSE(structural_equal(re.func(), s->func()));
  expect_same_numbers(f, re.func());
}

TEST(Trace, MalformedJsonGivesLocatedErrors) {
  const char* bad[] = {
      "",
      "[1, 2",
      "{}",
      "[[], [], []]",
      R"([[["split", ["l0", 4], [], ["l1", "l2"]]], []])",
      R"([[["get_block", [], ["C"], ["b0"]]], [[5, 1]]])",
      R"([[["get_block", [], ["C"], ["b0"]]], [[0, 1]]])",
      R"([[["get_block", [], ["C"], ["x0"]]], []])",
      R"([[["get_block", [], [{}], ["b0"]]], []])",
  };
  for (const char* text : bad) {
    try {
      Trace::from_json(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const TraceParseError& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    }
  }
  // Well-formed JSON that does not fit the function fails at replay, with the instruction.
  Trace t = Trace::from_json(R"([[["get_block", [], ["nope"], ["b0"]]], []])");
  Schedule sch(make_workload("matmul(M=4,N=4,K=4)"));
  EXPECT_THROW(t.apply_to(sch), ScheduleError);
  Trace t2 = Trace::from_json(R"([[["frobnicate", [], [], []]], []])");
  try {
    t2.apply_to(sch);
    ADD_FAILURE();
  } catch (const TraceParseError& e) {
    EXPECT_NE(std::string(e.what()).find("instruction 0"), std::string::npos);
  }
}

TEST(Trace, SimplifiedDropsDeadLookups) {
  Function f = make_workload("matmul(M=8,N=8,K=8)");
  Schedule sch(f);
  BlockRV c = sch.all_blocks()[0];
  sch.get_loops(c); // unused
  auto l = sch.get_loops(c);
  sch.sample_perfect_tile(l[0], 2, 4); // unused
  sch.parallel(l[0]);
  Trace s = sch.trace().simplified();
  EXPECT_LT(s.size(), sch.trace().size());
  Schedule re(f);
  s.apply_to(re);
  EXPECT_TRUE(structural_equal(re.func(), sch.func()));
}

} // namespace
} // namespace mt
