// Per-store features: the layout, operation counts against the workload's own arithmetic,
// the loop features a schedule should move (and only those), buffers, allocation and GPU
// features, determinism under replay, finiteness over random schedules, and speed (printed).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

#include "core/ir/printer.h"
#include "core/lower/lower.h"
#include "core/schedule/random_schedule.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/features/features.h"
#include "core/workload/library.h"

namespace mt {
namespace {

constexpr int64_t M = 64, N = 48, K = 32;

Function matmul() {
  return make_workload("matmul(M=" + std::to_string(M) + ",N=" + std::to_string(N) +
                       ",K=" + std::to_string(K) + ")");
}

float get(const std::vector<float>& row, const char* name) {
  return row[feature_index(name)];
}

// The row of the store that does the multiply-add (the one with float multiplies).
const std::vector<float>& update_row(const std::vector<std::vector<float>>& rows) {
  for (const auto& r : rows)
    if (get(r, "op.float_mul") > 0) return r;
  throw std::runtime_error("no row with a multiply");
}

size_t count_stores(const Function& lowered) {
  size_t n = 0;
  visit_stmts(lowered.body, [&](const Stmt& s) {
    n += s->kind == StmtKind::Store;
    return true;
  });
  return n;
}

// matmul with i split by 8 and j by 16, the outer pair fused and parallel, j inner vectorized.
Schedule split_vectorize_parallel(const Function& f) {
  Schedule sch(f);
  BlockRV c = sch.get_block("matmul");
  auto l = sch.get_loops(c);
  auto i = sch.split(l[0], {int64_t(-1), int64_t(8)});
  auto j = sch.split(l[1], {int64_t(-1), int64_t(16)});
  sch.reorder({i[0], j[0], l[2], i[1], j[1]});
  sch.vectorize(j[1]);
  sch.parallel(sch.fuse({i[0], j[0]}));
  return sch;
}

TEST(Features, LayoutIsNamedAndConsistent) {
  const auto& names = feature_names();
  ASSERT_EQ(names.size(), static_cast<size_t>(kFeaturesPerStore));
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
  for (int i = 0; i < kFeaturesPerStore; ++i)
    EXPECT_EQ(feature_index(names[i]), i);
  EXPECT_EQ(names[kArithOffset], "op.float_add");
  EXPECT_EQ(names[kLoopOffset], "vec.num");
  EXPECT_EQ(names[kBufferOffset], "buf0.acc_read");
  EXPECT_EQ(names[kBufferOffset + kFeaturesPerBuffer], "buf1.acc_read");
  EXPECT_EQ(names[kIntensityOffset], "intensity.0");
  EXPECT_EQ(names[kAllocOffset], "alloc.size");
  EXPECT_EQ(names[kOuterOffset], "outer_prod");
  EXPECT_THROW(feature_index("no.such.feature"), std::out_of_range);
  EXPECT_TRUE(feature_is_log_scaled(feature_index("vec.len")));
  EXPECT_FALSE(feature_is_log_scaled(feature_index("vec.pos.none")));
}

TEST(Features, MatmulFlopsAreMNK) {
  Function f = matmul();
  const double mnk = double(M) * N * K;
  for (const Function& g : {f, split_vectorize_parallel(f).func()}) {
    auto raw = extract_features(g, FeatureOptions{false});
    ASSERT_EQ(raw.size(), count_stores(lower(g))); // the init store and the update
    const auto& u = update_row(raw);
    EXPECT_EQ(get(u, "op.float_mul"), mnk);
    EXPECT_EQ(get(u, "op.float_add"), mnk);
    EXPECT_EQ(get(u, "op.float_fma"), mnk);
    EXPECT_EQ(get(u, "op.float_div"), 0);
    EXPECT_EQ(get(u, "outer_prod"), mnk);
    // A is M x K and B is K x N floats, read once per multiply-add.
    EXPECT_EQ(get(u, "buf1.bytes") + get(u, "buf2.bytes"), 2 * mnk * 4);
    EXPECT_EQ(get(u, "buf0.acc_rw"), 1); // the output comes first: read and written
    EXPECT_EQ(get(u, "buf0.unique_bytes"), double(M) * N * 4);
    // The init store runs once per output element: its k loop is pinned by `k == 0`.
    for (const auto& r : raw) {
      if (&r == &u) continue;
      EXPECT_EQ(get(r, "outer_prod"), double(M) * N);
    }

    auto scaled = extract_features(g);
    const auto& us = update_row(scaled);
    EXPECT_NEAR(get(us, "op.float_mul"), std::log2(1 + mnk), 1e-4);
    EXPECT_NEAR(std::exp2(get(us, "op.float_mul")) - 1, mnk, mnk * 1e-5);
  }
}

TEST(Features, SplitVectorizeParallelMoveTheLoopFeaturesOnly) {
  Function f = matmul();
  auto before = update_row(extract_features(f, FeatureOptions{false}));
  auto after =
      update_row(extract_features(split_vectorize_parallel(f).func(), FeatureOptions{false}));

  EXPECT_EQ(get(before, "vec.num"), 0);
  EXPECT_EQ(get(before, "vec.len"), 0);
  EXPECT_EQ(get(before, "vec.pos.none"), 1);
  EXPECT_EQ(get(before, "parallel.len"), 0);
  EXPECT_EQ(get(before, "parallel.pos.none"), 1);

  EXPECT_EQ(get(after, "vec.num"), 1);
  EXPECT_EQ(get(after, "vec.len"), 16);
  EXPECT_EQ(get(after, "vec.prod"), 16);
  EXPECT_EQ(get(after, "vec.pos.inner_spatial"), 1);
  EXPECT_EQ(get(after, "vec.pos.none"), 0);
  EXPECT_EQ(get(after, "parallel.num"), 1);
  EXPECT_EQ(get(after, "parallel.len"), (M / 8) * (N / 16));
  EXPECT_EQ(get(after, "parallel.pos.outer_spatial"), 1);
  EXPECT_EQ(get(after, "unroll.pos.none"), 1);
  EXPECT_EQ(get(after, "num_loops"), 4);
  EXPECT_EQ(get(before, "num_loops"), 3);

  // What the schedule cannot change: the arithmetic on floats, the work, the footprints.
  for (const char* same :
       {"op.float_add", "op.float_mul", "op.float_fma", "outer_prod", "buf0.unique_bytes",
        "buf1.unique_bytes", "buf2.unique_bytes", "buf0.bytes", "gpu.is_gpu"})
    EXPECT_EQ(get(before, same), get(after, same)) << same;
  // The new loops index through fused / split variables: integer index arithmetic appears.
  EXPECT_EQ(get(before, "op.int_divmod"), 0);
  EXPECT_GT(get(after, "op.int_divmod"), 0);
  // B[k, j] was walked with stride N along the innermost loop k; now j_1 (stride 1) is inside.
  int b_before = -1, b_after = -1;
  for (int b = 0; b < kBuffersPerStore; ++b) {
    std::string p = "buf" + std::to_string(b) + ".";
    if (get(before, (p + "stride").c_str()) == N) b_before = b;
    if (get(after, (p + "unique_bytes").c_str()) == double(K) * N * 4) b_after = b;
  }
  ASSERT_GE(b_before, 0);
  ASSERT_GE(b_after, 0);
  EXPECT_EQ(get(after, ("buf" + std::to_string(b_after) + ".stride").c_str()), 1);
  EXPECT_LT(get(after, ("buf" + std::to_string(b_after) + ".lines").c_str()),
            get(before, ("buf" + std::to_string(b_before) + ".lines").c_str()));
}

TEST(Features, UnrollAnnotationsAndUnrolledLoops) {
  Function f = matmul();
  Schedule sch(f);
  BlockRV c = sch.get_block("matmul");
  auto l = sch.get_loops(c);
  auto k = sch.split(l[2], {int64_t(-1), int64_t(4)});
  sch.unroll(k[1]);
  sch.annotate(c, "meta_schedule.unroll_explicit", AnnValue(int64_t(64)));
  auto u = update_row(extract_features(sch.func(), FeatureOptions{false}));
  EXPECT_EQ(get(u, "unroll.num"), 1);
  EXPECT_EQ(get(u, "unroll.len"), 4);
  EXPECT_EQ(get(u, "unroll.pos.inner_reduce"), 1);
  EXPECT_EQ(get(u, "auto_unroll_max_step"), 64);

  Schedule s2(f);
  auto l2 = s2.get_loops(s2.get_block("matmul"));
  s2.annotate(l2[0], "pragma_auto_unroll_max_step", AnnValue(int64_t(16)));
  EXPECT_EQ(
      get(update_row(extract_features(s2.func(), FeatureOptions{false})), "auto_unroll_max_step"),
      16);
  EXPECT_EQ(get(update_row(extract_features(f, FeatureOptions{false})), "auto_unroll_max_step"), 0);
}

TEST(Features, GpuBindingExtents) {
  Function f = matmul();
  Schedule sch(f);
  auto l = sch.get_loops(sch.get_block("matmul"));
  sch.bind(l[0], "blockIdx.x");
  sch.bind(l[1], "threadIdx.x");
  auto u = update_row(extract_features(sch.func(), FeatureOptions{false}));
  EXPECT_EQ(get(u, "gpu.is_gpu"), 1);
  EXPECT_EQ(get(u, "gpu.blockIdx.x"), M);
  EXPECT_EQ(get(u, "gpu.threadIdx.x"), N);
  EXPECT_EQ(get(u, "gpu.threadIdx.y"), 0);
  EXPECT_EQ(get(update_row(extract_features(f)), "gpu.is_gpu"), 0);
}

TEST(Features, AllocationOfACacheStage) {
  Function f = matmul();
  Schedule sch(f);
  BlockRV c = sch.get_block("matmul");
  BlockRV copy = sch.cache_write(c, 0, "cache");
  // Whole-array staging buffer first, then written back per row of i.
  {
    auto rows = extract_features(sch.func(), FeatureOptions{false});
    EXPECT_EQ(get(update_row(rows), "alloc.size"), double(M) * N * 4);
    EXPECT_EQ(get(update_row(rows), "alloc.outer_prod"), 1);
  }
  sch.reverse_compute_at(copy, sch.get_loops(c)[0]);
  Function lowered = lower(sch.func());
  auto rows = extract_features(lowered, FeatureOptions{false});
  EXPECT_EQ(rows.size(), count_stores(lowered));
  const auto& u = update_row(rows);
  EXPECT_EQ(get(u, "alloc.size"), double(N) * 4) << print(lowered);
  EXPECT_EQ(get(u, "alloc.outer_prod"), M);
  EXPECT_EQ(get(u, "alloc.prod"), double(M) * N * 4);
  EXPECT_EQ(get(u, "alloc.inner_prod"), double(N) * K);
  // The write-back store writes the function's output, which is not allocated inside.
  for (const auto& r : rows)
    if (get(r, "op.float_mul") == 0 && get(r, "buf0.acc_write") == 1 && get(r, "alloc.size") == 0)
      return;
  ADD_FAILURE() << "no store without an allocation (the write-back)";
}

TEST(Features, SameScheduleSameFeaturesAndReplayAgrees) {
  Function f = matmul();
  Schedule sch = split_vectorize_parallel(f);
  auto a = extract_features(sch.func());
  auto b = extract_features(sch.func());
  EXPECT_EQ(a, b);
  Schedule again(f);
  Trace::from_json(sch.trace().to_json()).apply_to(again);
  EXPECT_EQ(extract_features(again.func()), a);
  EXPECT_EQ(extract_features(lower(sch.func())), a); // lowered or not: the same rows
  EXPECT_NE(extract_features(f), a);

  FeatureMatrix m = extract_feature_matrix(sch.func());
  ASSERT_EQ(m.rows, a.size());
  ASSERT_EQ(m.cols, static_cast<size_t>(kFeaturesPerStore));
  for (size_t r = 0; r < m.rows; ++r)
    for (size_t c = 0; c < m.cols; ++c)
      ASSERT_EQ(m.at(r, c), a[r][c]);
  EXPECT_EQ(m.row(1)[3], a[1][3]);
}

TEST(Features, FiniteForEveryWorkloadUnderRandomSchedules) {
  int rows_seen = 0;
  for (const std::string& spec : test_workload_specs()) {
    Function f = make_workload(spec);
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      Schedule sch(f, seed);
      apply_random_primitives(sch, 8);
      Function lowered = lower(sch.func());
      auto rows = extract_features(lowered);
      ASSERT_EQ(rows.size(), count_stores(lowered)) << spec;
      for (const auto& r : rows) {
        ASSERT_EQ(r.size(), static_cast<size_t>(kFeaturesPerStore));
        for (int i = 0; i < kFeaturesPerStore; ++i) {
          ASSERT_TRUE(std::isfinite(r[i]))
              << spec << " seed " << seed << ": " << feature_names()[i] << " = " << r[i] << "\n"
              << sch.trace().to_json();
          ASSERT_GE(r[i], 0) << spec << " seed " << seed << ": " << feature_names()[i];
        }
        ++rows_seen;
      }
      EXPECT_EQ(extract_features(lowered), rows);
    }
  }
  EXPECT_GT(rows_seen, 0);
}

TEST(Features, SpeedIsPrinted) {
  Schedule sch = split_vectorize_parallel(matmul());
  Function lowered = lower(sch.func());
  constexpr int kReps = 300;
  // Wall time and this process's CPU time (the latter is what matters on a loaded machine).
  auto wall = [] { return std::chrono::steady_clock::now(); };
  size_t rows = 0;
  auto w0 = wall();
  std::clock_t c0 = std::clock();
  for (int i = 0; i < kReps; ++i)
    rows += extract_features(lowered).size();
  auto w1 = wall();
  std::clock_t c1 = std::clock();
  for (int i = 0; i < kReps; ++i)
    rows += extract_features(sch.func()).size();
  auto w2 = wall();
  std::clock_t c2 = std::clock();
  EXPECT_EQ(rows, 2u * kReps * 2);
  auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count() / kReps; };
  auto cpu_us = [](std::clock_t d) { return 1e6 * double(d) / CLOCKS_PER_SEC / kReps; };
  std::printf("[ features ] matmul, split + vectorize + parallel, per candidate: %.1f us wall "
              "/ %.1f us CPU already lowered; %.1f us wall / %.1f us CPU including lower()\n",
              us(w1 - w0), cpu_us(c1 - c0), us(w2 - w1), cpu_us(c2 - c1));
}

} // namespace
} // namespace mt
