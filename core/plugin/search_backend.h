// The host side of a search strategy's search context (plugin ABI 1.3): what the host API's
// search_* and candidate_* functions call. The tuner implements it per task
// (core/search/search_context.h); the plugin host only forwards to it, so that the plugin
// host does not depend on the tuner library above it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "metatune/plugin_api.h"

namespace mt {

// A sampled candidate: the post-processed schedule, the trace it came from before the
// postprocessors ran (what mutators change; the postprocessors run again on a mutant), and
// the structural hash of the scheduled function (what duplicates are recognised by).
struct SearchCandidate {
  std::shared_ptr<Schedule> sch;
  Trace trace;
  uint64_t hash = 0;
};
using CandidatePtr = std::shared_ptr<const SearchCandidate>;

class SearchBackend {
public:
  virtual ~SearchBackend() = default;
  virtual size_t num_design_spaces() const = 0;
  virtual size_t num_mutators() const = 0;
  virtual double mutator_probability(size_t mutator) const = 0; // normalised
  virtual bool has_cost_model() const = 0;
  virtual uint64_t seed() const = 0;
  // Records measured before the search started, best first (+inf seconds: failed).
  virtual size_t num_measured() const = 0;
  virtual const Trace& measured_trace(size_t index) const = 0;
  virtual double measured_seconds(size_t index) const = 0;
  // Batches: one result per job, in job order, null where the job was refused (counted).
  virtual std::vector<CandidatePtr> sample(const std::vector<uint64_t>& seeds) = 0;
  virtual std::vector<CandidatePtr> replay(const std::vector<const Trace*>& traces,
                                           const std::vector<uint64_t>& seeds) = 0;
  virtual std::vector<CandidatePtr> mutate(const std::vector<const SearchCandidate*>& parents,
                                           const std::vector<size_t>& mutators,
                                           const std::vector<uint64_t>& seeds) = 0;
  // Throws when there is no cost model or it fails.
  virtual std::vector<double> predict(const std::vector<const SearchCandidate*>& candidates) = 0;
  virtual void update_cost_model(const std::vector<const SearchCandidate*>& candidates,
                                 const std::vector<double>& run_seconds) = 0;
  virtual void count(const std::string& statistic, size_t n) = 0;
  virtual void count_refusal(const std::string& source, const std::string& message) = 0;
};

} // namespace mt

// The C handles behind the ABI's opaque search types.
struct mt_search_context_s {
  explicit mt_search_context_s(mt::SearchBackend& b) : backend(&b) {}
  mt::SearchBackend* backend;
  // Borrowed trace handles of the measured records, made on first use.
  std::vector<std::unique_ptr<struct mt_trace_s, void (*)(struct mt_trace_s*)>> measured;
};

struct mt_candidate_s {
  explicit mt_candidate_s(mt::CandidatePtr c) : candidate(std::move(c)) {}
  ~mt_candidate_s();
  mt::CandidatePtr candidate;
  struct mt_trace_s* trace = nullptr; // borrowed handle of candidate->trace, made on first use
};

struct mt_candidate_list_s {
  std::vector<mt::CandidatePtr> items;
};
