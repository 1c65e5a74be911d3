// Sampling on several threads (core/search/parallel_sampler.h) with the real std_rules and
// search_strategies plugins:
// the same seed gives the same candidates -- same structural hashes, same traces, same
// refusal counts -- with one thread and with several, and they are still post-processed and
// compute what the unscheduled function computes (reference interpreter). A batch of jobs
// run on the pool gives what each job gives alone on the calling thread.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "../std_rules/std_rules_test_util.h"
#include "core/ir/stmt.h"
#include "core/ir/structural.h"
#include "core/search/candidate_sampler.h"
#include "core/search/parallel_sampler.h"
#include "core/search/search_strategy.h"
#include "core/workload/library.h"
#include "search_test_util.h"

namespace mt {
namespace {

using namespace std_rules_test;

constexpr const char* kMatmul = "matmul(M=64,N=64,K=64)";
constexpr const char* kConv = "conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1)";

// The standard CPU set, plus `extra_postproc` (name, config) when given.
struct Components {
  ComponentSet set = cpu_set();
  std::string extra_postproc, extra_config;

  SamplerComponents make() const {
    Instances in = instantiate(set);
    SamplerComponents c{std::move(in.postprocs), std::move(in.mutators)};
    if (!extra_postproc.empty())
      c.postprocs.push_back(host().create_postproc(extra_postproc, extra_config));
    return c;
  }
};

// A search context for `spec` sampling on `threads` threads, every thread with its own
// instances of the same components.
SearchContext context(const std::string& spec, uint64_t seed, size_t threads,
                      const Components& comps = {}) {
  SearchContext ctx;
  ctx.workload = make_workload(spec);
  Instances in = instantiate(comps.set);
  ctx.design_spaces = generate_design_spaces(ctx.workload, in.rules, seed);
  SamplerComponents own = comps.make();
  ctx.postprocs = std::move(own.postprocs);
  for (auto& m : own.mutators)
    ctx.mutators.emplace_back(std::move(m), 1.0);
  ctx.seed = seed;
  ctx.sampling_threads = threads;
  ctx.sampler_components = [comps] { return comps.make(); };
  return ctx;
}

using search_test::has_postproc_annotation;
using search_test::small_options;

// What a run proposes: every candidate's hash and full trace, and the search's counts.
struct SearchRun {
  std::vector<uint64_t> hashes;
  std::vector<std::string> traces;
  size_t sampled = 0, rejected = 0, replay_failed = 0, duplicates = 0, mutated = 0;
  std::vector<std::shared_ptr<Schedule>> candidates;
};

SearchRun run_search(bool evolutionary, const std::string& spec, uint64_t seed, size_t threads,
                     size_t rounds, size_t batch, const Components& comps = {}) {
  SearchContext ctx = context(spec, seed, threads, comps);
  auto search = evolutionary ? make_evolutionary_search(host(), ctx, small_options())
                             : make_replay_trace_search(host(), ctx);
  SearchRun r;
  for (size_t round = 0; round < rounds; ++round) {
    std::vector<std::shared_ptr<Schedule>> b = search->next_batch(batch);
    std::vector<double> secs;
    for (const auto& s : b) {
      uint64_t h = structural_hash(s->func());
      r.hashes.push_back(h);
      r.traces.push_back(s->trace().to_json());
      r.candidates.push_back(s);
      // Pseudo run times, deterministic per candidate: notify() needs an order to keep.
      secs.push_back(1e-3 * (1.0 + static_cast<double>(h % 1000) / 1000.0));
    }
    search->notify(b, secs);
  }
  const SearchStats& st = search->stats();
  r.sampled = st.sampled;
  r.rejected = st.rejected;
  r.replay_failed = st.replay_failed;
  r.duplicates = st.duplicates;
  r.mutated = st.mutated;
  return r;
}

void expect_same(const SearchRun& a, const SearchRun& b) {
  EXPECT_EQ(a.hashes, b.hashes);
  EXPECT_EQ(a.traces, b.traces);
  EXPECT_EQ(a.sampled, b.sampled);
  EXPECT_EQ(a.rejected, b.rejected);
  EXPECT_EQ(a.replay_failed, b.replay_failed);
  EXPECT_EQ(a.duplicates, b.duplicates);
  EXPECT_EQ(a.mutated, b.mutated);
}

void check_candidates(const SearchRun& r, const Function& workload) {
  std::vector<NDArray> reference = run(workload);
  std::set<uint64_t> distinct(r.hashes.begin(), r.hashes.end());
  EXPECT_EQ(distinct.size(), r.hashes.size()) << "proposed twice";
  for (const auto& sch : r.candidates) {
    EXPECT_FALSE(has_postproc_annotation(sch->func())) << "not post-processed";
    EXPECT_EQ(compare(reference, sch->func()), "");
  }
}

TEST(ParallelSampling, EvolutionarySearchIsTheSameOnOneAndSeveralThreads) {
  for (const char* spec : {kMatmul, kConv}) {
    SCOPED_TRACE(spec);
    SearchRun one = run_search(true, spec, 7, 1, 2, 8);
    SearchRun three = run_search(true, spec, 7, 3, 2, 8);
    ASSERT_EQ(one.hashes.size(), 16u);
    expect_same(one, three);
    EXPECT_GT(three.mutated, 0u) << "the generations mutated nothing";
    check_candidates(three, make_workload(spec));
  }
  // Not the same for another seed: the seed decides, not the threads.
  EXPECT_NE(run_search(true, kMatmul, 8, 3, 1, 8).hashes,
            run_search(true, kMatmul, 7, 3, 1, 8).hashes);
}

TEST(ParallelSampling, ReplayTraceSearchIsTheSameOnOneAndSeveralThreads) {
  SearchRun one = run_search(false, kConv, 4, 1, 2, 12);
  SearchRun four = run_search(false, kConv, 4, 4, 2, 12);
  ASSERT_EQ(one.hashes.size(), 24u);
  expect_same(one, four);
  check_candidates(four, make_workload(kConv));
}

// A postprocessor that refuses everything (std.VerifyGPUCode with no thread allowed), on every
// thread: the same counts of refusals, attributed to it, and nothing proposed.
TEST(ParallelSampling, RefusalsAreCountedTheSameOnSeveralThreads) {
  Components refusing;
  refusing.extra_postproc = "std.VerifyGPUCode";
  refusing.extra_config = R"({"max_threads_per_block": 0})";
  SearchRun one = run_search(false, kMatmul, 5, 1, 1, 4, refusing);
  SearchRun three = run_search(false, kMatmul, 5, 3, 1, 4, refusing);
  EXPECT_TRUE(three.hashes.empty());
  EXPECT_GT(three.rejected, 0u);
  EXPECT_EQ(three.rejected + three.replay_failed, three.sampled);
  expect_same(one, three);
}

// The pool against the calling thread alone: fresh, replay and mutation jobs in one batch give,
// in job order, what each job gives run by itself.
TEST(ParallelSampling, ABatchGivesWhatEachJobGivesAlone) {
  SearchContext ctx = context(kMatmul, 3, 4);
  SearchStats stats;
  CandidateSampler sampler(ctx, stats);
  std::vector<Trace> parents;
  for (uint64_t i = 0; i < 6; ++i) {
    SampleJob job = sampler.fresh_job(job_seed(11, i));
    std::optional<Candidate> c = sampler.take(job, std::move(sampler.run({job})[0]));
    ASSERT_TRUE(c) << stats.diagnosis();
    parents.push_back(c->trace);
  }
  std::vector<SampleJob> jobs;
  for (uint64_t i = 0; i < 12; ++i)
    jobs.push_back(sampler.fresh_job(job_seed(5, i)));
  for (size_t i = 0; i < parents.size(); ++i) {
    jobs.push_back({SampleJob::Kind::Replay, 0, &parents[i], 0, 100 + i});
    for (size_t m = 0; m < ctx.mutators.size(); ++m)
      jobs.push_back({SampleJob::Kind::Mutate, 0, &parents[i], m, job_seed(9, i * 10 + m)});
  }
  std::vector<SampleResult> batch = sampler.run(jobs);
  ASSERT_EQ(batch.size(), jobs.size());
  size_t ok = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE("job " + std::to_string(i));
    std::vector<SampleResult> single = sampler.run({jobs[i]});
    EXPECT_EQ(batch[i].outcome, single[0].outcome);
    EXPECT_EQ(batch[i].reason, single[0].reason);
    ASSERT_EQ(batch[i].candidate.has_value(), single[0].candidate.has_value());
    if (!batch[i].candidate) continue;
    ++ok;
    EXPECT_EQ(batch[i].candidate->hash, single[0].candidate->hash);
    EXPECT_EQ(batch[i].candidate->hash, structural_fingerprint(batch[i].candidate->sch->func()));
    EXPECT_EQ(batch[i].candidate->trace.to_json(), single[0].candidate->trace.to_json());
    EXPECT_FALSE(has_postproc_annotation(batch[i].candidate->sch->func()));
  }
  EXPECT_GT(ok, jobs.size() / 2) << stats.diagnosis();
  // A replayed parent is the parent: same decisions, same schedule.
  EXPECT_EQ(batch[12].candidate->trace.to_json(), parents[0].to_json());
  // A job naming what is not there is the caller's error, not a refusal.
  EXPECT_THROW(sampler.run({SampleJob{SampleJob::Kind::Fresh, 99, nullptr, 0, 1}}),
               std::invalid_argument);
}

} // namespace
} // namespace mt
