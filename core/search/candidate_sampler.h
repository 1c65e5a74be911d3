// Candidate sampling shared by the search strategies: a design-space trace replayed onto a fresh
// schedule (its decisions kept or re-sampled), then post-processed, with every refusal counted
// in SearchStats by its source. A candidate keeps the trace as it was before the
// postprocessors ran: mutators change decisions of that trace, and the postprocessors run
// again on the result (what they added is derived from the decisions, so it must not be
// replayed stale).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "core/schedule/random.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/plugin/search_backend.h"
#include "core/search/search_strategy.h"

namespace mt {

// A post-processed schedule, its trace before post-processing and its structural hash.
using Candidate = SearchCandidate;

class CandidateSampler {
public:
  CandidateSampler(SearchContext& ctx, SearchStats& stats) : ctx_(ctx), stats_(stats) {}

  // A random design space with every decision re-sampled (schedule seeded from `rng`).
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

private:
  std::optional<Candidate> run(const Trace& trace, uint64_t seed, bool use_decisions);

  SearchContext& ctx_;
  SearchStats& stats_;
};

} // namespace mt
