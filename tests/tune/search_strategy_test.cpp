// The search strategies with the real std_rules plugin (CPU set) on real workloads: batches
// hold only post-processed, distinct candidates that compute what the unscheduled function
// computes (reference interpreter); a seed fixes the batches; nothing measured or proposed is
// proposed again (records stored with their postprocessor instructions included); a
// postprocessor that refuses everything ends the search with an empty batch and a diagnosis
// naming it, within a bounded number of samples.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "../std_rules/std_rules_test_util.h"
#include "core/ir/stmt.h"
#include "core/ir/structural.h"
#include "core/search/candidate_sampler.h"
#include "core/search/design_space.h"
#include "core/search/search_strategy.h"
#include "core/workload/library.h"
#include "search_test_util.h"

namespace mt {
namespace {

using namespace std_rules_test;

constexpr const char* kMatmul = "matmul(M=64,N=64,K=64)";
constexpr const char* kConv = "conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1)";
// A linear layer on a few rows, its weight [N, K] as checkpoints store it.
constexpr const char* kLinear = "dense(M=3,N=40,K=32,bias=0,act=none)";

// A search context for `spec` with the standard CPU set (rules, postprocessors and mutators
// with their default probabilities), no cost model.
SearchContext cpu_context(const std::string& spec, uint64_t seed) {
  ComponentSet set = cpu_set();
  Instances in = instantiate(set);
  SearchContext ctx;
  ctx.workload = make_workload(spec);
  ctx.design_spaces = generate_design_spaces(ctx.workload, in.rules, seed);
  ctx.postprocs = std::move(in.postprocs);
  for (auto& m : in.mutators)
    ctx.mutators.emplace_back(std::move(m), 1.0);
  ctx.seed = seed;
  return ctx;
}

using search_test::has_postproc_annotation;
using search_test::small_options;

// Checks a batch: distinct (also from `seen`, which it extends), post-processed, correct.
void check_batch(const std::vector<std::shared_ptr<Schedule>>& batch,
                 const std::vector<NDArray>& reference, std::set<uint64_t>& seen) {
  for (const auto& sch : batch) {
    ASSERT_TRUE(sch);
    EXPECT_TRUE(seen.insert(structural_hash(sch->func())).second) << "proposed twice";
    EXPECT_FALSE(has_postproc_annotation(sch->func())) << "not post-processed";
    EXPECT_EQ(compare(reference, sch->func()), "");
  }
}

std::vector<uint64_t> hashes(const std::vector<std::shared_ptr<Schedule>>& batch) {
  std::vector<uint64_t> h;
  for (const auto& s : batch)
    h.push_back(structural_hash(s->func()));
  return h;
}

// Pseudo run times derived from the candidate (not measured: the interpreter is too slow to
// time and the tests must not depend on the LLVM target); they only need to be deterministic
// and to differ between candidates, so that notify() has an order to keep.
double pseudo_seconds(const Schedule& sch) {
  return 1e-3 * (1.0 + static_cast<double>(structural_hash(sch.func()) % 1000) / 1000.0);
}

void check_workload(const std::string& spec) {
  SCOPED_TRACE(spec);
  SearchContext ctx = cpu_context(spec, 3);
  ASSERT_FALSE(ctx.design_spaces.empty());
  std::vector<NDArray> reference = run(ctx.workload);
  auto search = make_evolutionary_search(host(), ctx, small_options());
  std::set<uint64_t> seen;
  for (int round = 0; round < 2; ++round) {
    std::vector<std::shared_ptr<Schedule>> batch = search->next_batch(8);
    EXPECT_EQ(batch.size(), 8u) << search->stats().diagnosis();
    check_batch(batch, reference, seen);
    std::vector<double> secs;
    for (const auto& s : batch)
      secs.push_back(pseudo_seconds(*s));
    search->notify(batch, secs);
  }
  const SearchStats& st = search->stats();
  EXPECT_EQ(st.proposed, 16u);
  EXPECT_GT(st.mutated, 0u) << "the genetic iterations mutated nothing";
}

TEST(EvolutionarySearch, MatmulBatchesArePostprocessedDistinctAndCorrect) {
  check_workload(kMatmul);
}

TEST(EvolutionarySearch, Conv2dBatchesArePostprocessedDistinctAndCorrect) {
  check_workload(kConv);
}

TEST(EvolutionarySearch, DeterministicForASeed) {
  std::vector<std::vector<uint64_t>> runs;
  for (int r = 0; r < 2; ++r) {
    SearchContext ctx = cpu_context(kMatmul, 7);
    auto search = make_evolutionary_search(host(), ctx, small_options());
    std::vector<uint64_t> all;
    for (int round = 0; round < 2; ++round) {
      auto batch = search->next_batch(6);
      std::vector<double> secs;
      for (const auto& s : batch)
        secs.push_back(pseudo_seconds(*s));
      search->notify(batch, secs);
      for (uint64_t h : hashes(batch))
        all.push_back(h);
    }
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0].size(), 12u);
  EXPECT_EQ(runs[0], runs[1]);
  // Another seed explores elsewhere.
  SearchContext ctx = cpu_context(kMatmul, 8);
  auto other = make_evolutionary_search(host(), ctx, small_options());
  EXPECT_NE(hashes(other->next_batch(6)),
            std::vector<uint64_t>(runs[0].begin(), runs[0].begin() + 6));
}

// Records of a previous session, stored as the tuner stores them (the candidate's full trace,
// postprocessor instructions included, as JSON), seed the next session's population and are
// never proposed again.
TEST(EvolutionarySearch, MeasuredTracesAreNeverProposedAgain) {
  std::set<uint64_t> measured;
  std::vector<std::pair<std::string, double>> records;
  {
    SearchContext ctx = cpu_context(kMatmul, 11);
    auto search = make_evolutionary_search(host(), ctx, small_options());
    auto batch = search->next_batch(12);
    ASSERT_EQ(batch.size(), 12u);
    std::vector<double> secs;
    for (const auto& s : batch) {
      secs.push_back(pseudo_seconds(*s));
      measured.insert(structural_hash(s->func()));
      records.push_back({s->trace().to_json(), secs.back()});
    }
    search->notify(batch, secs);
  }
  std::sort(records.begin(), records.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  // Same seed as before: without the records the first batch would be the same one.
  SearchContext ctx = cpu_context(kMatmul, 11);
  for (const auto& [json, s] : records) {
    ctx.measured_traces.push_back(Trace::from_json(json));
    ctx.measured_seconds.push_back(s);
  }
  std::vector<NDArray> reference = run(ctx.workload);
  auto search = make_evolutionary_search(host(), ctx, small_options());
  std::set<uint64_t> seen = measured;
  for (int round = 0; round < 3; ++round) {
    auto batch = search->next_batch(12);
    EXPECT_EQ(batch.size(), 12u);
    check_batch(batch, reference, seen); // fails on any hash of `measured`
  }
  // Every record replayed: the postprocessor instructions in them were recognised and dropped
  // (replaying them stale on top of the rules' trace would have failed or been rejected). The
  // only refusals allowed are MutateComputeLocation's documented ones: a staged copy moved
  // past its innermost location.
  size_t moved_too_far = 0;
  for (const auto& [why, n] : search->stats().reasons)
    if (why.find("sample_compute_location") != std::string::npos &&
        why.find("is not a valid location") != std::string::npos)
      moved_too_far += n;
  EXPECT_EQ(search->stats().replay_failed, moved_too_far) << search->stats().diagnosis();
  EXPECT_EQ(search->stats().rejected, 0u) << search->stats().diagnosis();
}

// What the postprocessors appended to a candidate's trace is recognised (the design space's
// instructions are a prefix of it) and dropped: mutators then change decisions of the rules'
// part only, and the postprocessors run afresh on the result.
TEST(EvolutionarySearch, RecordsLoseTheirPostprocessorInstructions) {
  SearchContext ctx = cpu_context(kMatmul, 3);
  SearchStats stats;
  CandidateSampler sampler(ctx, stats);
  RandomEngine rng(1);
  int checked = 0;
  for (int i = 0; i < 20; ++i) {
    std::optional<Candidate> c = sampler.sample_fresh(rng);
    ASSERT_TRUE(c) << stats.diagnosis();
    Trace stored = Trace::from_json(c->sch->trace().to_json());
    if (stored.size() == c->trace.size()) continue; // the postprocessors recorded nothing
    ++checked;
    Trace stripped = sampler.strip_postproc(stored);
    EXPECT_EQ(stripped.to_json(), c->trace.to_json());
    std::optional<Candidate> again = sampler.replay(stripped, 99);
    ASSERT_TRUE(again) << stats.diagnosis();
    EXPECT_EQ(again->hash, c->hash);
  }
  EXPECT_GT(checked, 0) << "no candidate had postprocessor instructions to drop";
}

// Whether a candidate's schedule is std.VectorRFactor's (the local partial sums it adds).
bool is_vector_rfactor(const Schedule& sch) {
  for (const Buffer& b : sch.func().buffers)
    if (b->name == "dense_rf") return true;
  return false;
}

// A linear on 3 rows: MultiLevelTiling makes several design spaces of one structure (its cache
// and compute-location variants), std.VectorRFactor one of its own. Fresh samples draw the kind
// of space first, then a space of it: each kind gets about half, and every space is drawn.
TEST(CandidateSampling, EachKindOfDesignSpaceGetsAnEqualShareOfFreshSamples) {
  SearchContext ctx = cpu_context(kLinear, 3);
  std::map<std::vector<std::pair<std::string, std::string>>, size_t> kinds;
  for (const auto& sp : ctx.design_spaces)
    ++kinds[space_annotations(sp->trace())];
  ASSERT_EQ(kinds.size(), 2u);
  ASSERT_GT(ctx.design_spaces.size(), 4u);
  size_t rfactor_spaces = 0;
  for (const auto& sp : ctx.design_spaces)
    rfactor_spaces += is_vector_rfactor(*sp) ? 1 : 0;
  ASSERT_EQ(rfactor_spaces, 1u);
  SearchStats stats;
  CandidateSampler sampler(ctx, stats);
  std::vector<size_t> drawn(ctx.design_spaces.size(), 0);
  const size_t n = 4000;
  for (uint64_t seed = 1; seed <= n; ++seed)
    ++drawn.at(sampler.fresh_job(seed).design_space);
  size_t rfactor = 0;
  for (size_t i = 0; i < drawn.size(); ++i) {
    EXPECT_GT(drawn[i], 0u) << "space " << i << " never drawn";
    if (is_vector_rfactor(*ctx.design_spaces[i])) rfactor = drawn[i];
  }
  EXPECT_NEAR(static_cast<double>(rfactor) / n, 0.5, 0.05);
}

// The first batch of a task is half fresh samples (nothing measured yet to rank by), and
// later batches keep at least one: std.VectorRFactor's single space, a few categorical draws
// that hardly mutate, reaches the measured batches beside MultiLevelTiling's many mutants.
TEST(EvolutionarySearch, FirstBatchSamplesEveryKindOfDesignSpace) {
  SearchContext ctx = cpu_context(kLinear, 5);
  auto search = make_evolutionary_search(host(), ctx, small_options());
  std::vector<std::shared_ptr<Schedule>> batch = search->next_batch(16);
  ASSERT_EQ(batch.size(), 16u) << search->stats().diagnosis();
  size_t rfactor = 0;
  for (const auto& s : batch)
    rfactor += is_vector_rfactor(*s) ? 1 : 0;
  EXPECT_GE(rfactor, 3u);
  EXPECT_LE(rfactor, 13u);
}

// std.VerifyGPUCode configured with a zero thread limit refuses every kernel (a real component
// with an impossible limit): the search gives up after its bounded attempts, empty-handed, and
// says who refused.
TEST(EvolutionarySearch, RefusingPostprocEndsEmptyWithDiagnosis) {
  SearchContext ctx = cpu_context(kMatmul, 5);
  ctx.postprocs.push_back(
      host().create_postproc("std.VerifyGPUCode", R"({"max_threads_per_block": 0})"));
  EvolutionaryOptions o = small_options();
  o.max_sample_attempts = 100;
  auto search = make_evolutionary_search(host(), ctx, o);
  auto t0 = std::chrono::steady_clock::now();
  auto batch = search->next_batch(8);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(batch.empty());
  const SearchStats& st = search->stats();
  EXPECT_GT(st.sampled, 0u);
  EXPECT_LE(st.sampled, 2 * o.max_sample_attempts) << "sampling is bounded";
  EXPECT_EQ(st.rejected + st.replay_failed, st.sampled);
  EXPECT_EQ(st.refused_by.at("postproc std.VerifyGPUCode"), st.rejected);
  std::string d = st.diagnosis();
  EXPECT_NE(d.find("std.VerifyGPUCode"), std::string::npos) << d;
  EXPECT_NE(d.find(std::to_string(st.rejected)), std::string::npos) << d;
  EXPECT_LT(secs, 30.0);
  std::printf("diagnosis after %.2f s:\n%s\n", secs, d.c_str());

  // Nothing to sample from at all: said so, at once.
  SearchContext none = cpu_context(kMatmul, 5);
  none.design_spaces.clear();
  auto empty = make_evolutionary_search(host(), none, o);
  EXPECT_TRUE(empty->next_batch(8).empty());
  EXPECT_EQ(empty->stats().sampled, 0u);
  EXPECT_NE(empty->stats().diagnosis().find("no design space"), std::string::npos)
      << empty->stats().diagnosis();
}

// A space small enough to run dry: a short batch, then an empty one, never a repeat.
TEST(EvolutionarySearch, SmallSpaceRunsDryWithoutRepeats) {
  SearchContext ctx = cpu_context("matmul(M=1,N=1,K=1)", 2);
  std::vector<NDArray> reference = run(ctx.workload);
  EvolutionaryOptions o = small_options();
  o.max_sample_attempts = 200;
  auto search = make_evolutionary_search(host(), ctx, o);
  std::set<uint64_t> seen;
  size_t empty_batches = 0;
  for (int round = 0; round < 12 && empty_batches == 0; ++round) {
    auto batch = search->next_batch(16);
    check_batch(batch, reference, seen);
    if (batch.empty()) ++empty_batches;
  }
  // A 1x1x1 matmul has a handful of distinct schedules (its loops differ only in annotations).
  EXPECT_EQ(empty_batches, 1u);
  EXPECT_GT(seen.size(), 0u);
  EXPECT_LT(seen.size(), 16u);
  EXPECT_EQ(search->stats().proposed, seen.size());
}

TEST(ReplayTraceSearch, BatchesAreDistinctCorrectAndDeterministic) {
  std::vector<std::vector<uint64_t>> runs;
  for (int r = 0; r < 2; ++r) {
    SearchContext ctx = cpu_context(kConv, 4);
    std::vector<NDArray> reference = run(ctx.workload);
    auto search = make_replay_trace_search(host(), ctx);
    std::set<uint64_t> seen;
    std::vector<uint64_t> all;
    for (int round = 0; round < 2; ++round) {
      auto batch = search->next_batch(8);
      EXPECT_EQ(batch.size(), 8u) << search->stats().diagnosis();
      if (r == 0) check_batch(batch, reference, seen);
      for (uint64_t h : hashes(batch))
        all.push_back(h);
      search->notify(batch, std::vector<double>(batch.size(), 1e-3));
    }
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(ReplayTraceSearch, SkipsMeasuredAndReportsRefusals) {
  SearchContext first = cpu_context(kMatmul, 6);
  auto a = make_replay_trace_search(host(), first);
  auto batch = a->next_batch(10);
  ASSERT_EQ(batch.size(), 10u);
  SearchContext ctx = cpu_context(kMatmul, 6); // same seed: same samples but for the records
  for (const auto& s : batch) {
    ctx.measured_traces.push_back(s->trace());
    ctx.measured_seconds.push_back(1e-3);
  }
  auto b = make_replay_trace_search(host(), ctx);
  std::vector<uint64_t> first_hashes = hashes(batch);
  std::set<uint64_t> old(first_hashes.begin(), first_hashes.end());
  for (uint64_t h : hashes(b->next_batch(10)))
    EXPECT_FALSE(old.count(h));
  EXPECT_GE(b->stats().duplicates, 10u) << "the same seed samples the records first";

  SearchContext refusing = cpu_context(kMatmul, 6);
  refusing.postprocs.push_back(
      host().create_postproc("std.VerifyGPUCode", R"({"max_threads_per_block": 0})"));
  auto c = make_replay_trace_search(host(), refusing);
  EXPECT_TRUE(c->next_batch(4).empty());
  EXPECT_NE(c->stats().diagnosis().find("std.VerifyGPUCode"), std::string::npos);
}

// With the real XGBoost model (cost_models plugin, when built): the model scores every
// generation and learns from each notify() (pseudo run times, see pseudo_seconds), without a
// refusal, and the batches keep their guarantees.
TEST(EvolutionarySearch, UsesAndTrainsTheXGBoostCostModel) {
  const PluginRecord& r = host().load(METATUNE_BUILD_PLUGIN_DIR "/cost_models.so");
  if (!r.loaded() || !host().find(ComponentKind::CostModel, "cost.XGBoost"))
    GTEST_SKIP() << "cost.XGBoost not built: " << r.message;
  SearchContext ctx = cpu_context(kMatmul, 9);
  ctx.cost_model =
      host().create_cost_model("cost.XGBoost", R"({"min_train_samples": 8, "num_rounds": 10})");
  ctx.cost_model->initialize(cpu_set().attrs);
  std::vector<NDArray> reference = run(ctx.workload);
  auto search = make_evolutionary_search(host(), ctx, small_options());
  std::set<uint64_t> seen;
  for (int round = 0; round < 3; ++round) {
    auto batch = search->next_batch(8);
    EXPECT_EQ(batch.size(), 8u) << search->stats().diagnosis();
    check_batch(batch, reference, seen);
    std::vector<double> secs;
    for (const auto& s : batch)
      secs.push_back(pseudo_seconds(*s));
    secs.back() = std::numeric_limits<double>::infinity(); // a failed trial too
    search->notify(batch, secs);
  }
  EXPECT_EQ(search->stats().refused_by.count("cost model"), 0u) << search->stats().diagnosis();
}

// Not a test of behaviour: the time of next_batch(64) with MetaSchedule's defaults
// (population 512) on matmul 1024^3 (MT_SEARCH_BENCH=1 to run it; =xgboost to use cost.XGBoost,
// trained on two batches of pseudo run times before the timed third).
TEST(EvolutionarySearch, BenchMatmul1024) {
  const char* mode = std::getenv("MT_SEARCH_BENCH");
  if (!mode) GTEST_SKIP() << "set MT_SEARCH_BENCH=1 or =xgboost";
  SearchContext ctx = cpu_context("matmul(M=1024,N=1024,K=1024)", 1);
  int warm_batches = 0;
  if (std::string(mode) == "xgboost") {
    host().load(METATUNE_BUILD_PLUGIN_DIR "/cost_models.so");
    ctx.cost_model = host().create_cost_model("cost.XGBoost");
    ctx.cost_model->initialize(cpu_set().attrs);
    warm_batches = 2;
  }
  auto search = make_evolutionary_search(host(), ctx, EvolutionaryOptions{});
  for (int b = 0;; ++b) {
    SearchStats before = search->stats();
    auto t0 = std::chrono::steady_clock::now();
    auto batch = search->next_batch(64);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const SearchStats& st = search->stats();
    size_t sampled = st.sampled - before.sampled;
    std::printf("batch %d: next_batch(64) %.2f s, %zu proposed, %zu sampled (%.2f ms per sample), "
                "%zu mutated, %zu duplicates, %zu refused, %zu design spaces\n",
                b, secs, batch.size(), sampled, 1e3 * secs / static_cast<double>(sampled),
                st.mutated - before.mutated, st.duplicates - before.duplicates,
                st.rejected + st.replay_failed - before.rejected - before.replay_failed,
                ctx.design_spaces.size());
    EXPECT_EQ(batch.size(), 64u);
    if (b == warm_batches) break;
    std::vector<double> secs_of;
    for (const auto& s : batch)
      secs_of.push_back(pseudo_seconds(*s));
    search->notify(batch, secs_of);
  }
  std::printf("%s\n", search->stats().diagnosis().c_str());
}

} // namespace
} // namespace mt
