// Candidate sampling shared by the search strategies: a design-space trace replayed onto a fresh
// schedule (its decisions kept or re-sampled), then post-processed, with every refusal counted
// in SearchStats by its source. A candidate keeps the trace as it was before the
// postprocessors ran: mutators change decisions of that trace, and the postprocessors run
// again on the result (what they added is derived from the decisions, so it must not be
// replayed stale). Batches run on the context's sampling threads (parallel_sampler.h); their
// results are counted in job order, so the stats, like the candidates, do not depend on the
// number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/plugin/search_backend.h"
#include "core/schedule/random.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/search/parallel_sampler.h"
#include "core/search/search_strategy.h"

namespace mt {

class CandidateSampler {
public:
  CandidateSampler(SearchContext& ctx, SearchStats& stats);
  ~CandidateSampler();

  // A random design space with every decision re-sampled (schedule seeded from `rng`). The
  // space is drawn in two steps: a kind of schedule, then a space of that kind (below).
  std::optional<Candidate> sample_fresh(RandomEngine& rng);
  // False (the reason counted in the stats) when there is nothing to sample from.
  bool has_design_spaces();
  // `trace` replayed with its decisions (a sampling instruction without one re-samples).
  std::optional<Candidate> replay(const Trace& trace, uint64_t seed);
  // The part of `trace` a design space recorded, dropping instructions a postprocessor
  // appended after it (records may store the full trace). `trace` itself if no design space
  // is a prefix of it.
  Trace strip_postproc(const Trace& trace) const;
  // Runs the postprocessors on `sch` in place; false (the refusal counted) when one refuses.
  bool postprocess(const std::shared_ptr<Schedule>& sch);

  // A fresh-sample job whose design space and schedule seed are drawn from `seed`.
  SampleJob fresh_job(uint64_t seed) const;
  // Runs `jobs` on the sampling threads; nothing is counted until take().
  std::vector<SampleResult> run(const std::vector<SampleJob>& jobs);
  // Counts one result in the stats (a mutation that replayed counts as mutated) and returns
  // its candidate, if accepted.
  std::optional<Candidate> take(const SampleJob& job, SampleResult&& result);
  // The sampling threads end until the next run (ParallelSampler::release_threads).
  void release_threads();

private:
  ParallelSampler& parallel();
  // Design spaces grouped by kind (space_annotations: the same list, the same kind). A fresh
  // sample draws a kind uniformly, then a space of it: one rule's single space (a matrix-vector
  // product read along k, std.VectorRFactor's) would otherwise get 1/37 of the samples beside
  // MultiLevelTiling's 36 cache and compute-location variants of one structure, and the search
  // measured none of it in 64 trials.
  const std::vector<std::vector<size_t>>& kinds() const;
  size_t draw_space(RandomEngine& rng) const;

  SearchContext& ctx_;
  SearchStats& stats_;
  // Created on first use: the context may still be completed after the strategy is made.
  std::unique_ptr<ParallelSampler> parallel_;
  mutable std::vector<std::vector<size_t>> kinds_; // for kinds_of_ spaces
  mutable size_t kinds_of_ = 0;
};

} // namespace mt
