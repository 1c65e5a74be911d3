// The search context of one tuning task (plugin ABI 1.3, core/plugin/search_backend.h): what a
// search-strategy plugin samples, replays, mutates and scores with. It owns nothing of the
// task -- design spaces, postprocessors, mutators and cost model stay in the SearchContext --
// and counts every refusal in the task's SearchStats, naming who refused.
#pragma once

#include <optional>
#include <vector>

#include "core/plugin/search_backend.h"
#include "core/search/candidate_sampler.h"
#include "core/search/search_strategy.h"

namespace mt {

class TaskSearchBackend : public SearchBackend {
public:
  TaskSearchBackend(SearchContext& ctx, SearchStats& stats);

  size_t num_design_spaces() const override { return ctx_.design_spaces.size(); }
  size_t num_mutators() const override { return ctx_.mutators.size(); }
  double mutator_probability(size_t mutator) const override { return mutator_probs_.at(mutator); }
  bool has_cost_model() const override { return ctx_.cost_model != nullptr; }
  uint64_t seed() const override { return ctx_.seed; }
  size_t num_measured() const override;
  const Trace& measured_trace(size_t index) const override;
  double measured_seconds(size_t index) const override;
  std::vector<CandidatePtr> sample(const std::vector<uint64_t>& seeds) override;
  std::vector<CandidatePtr> replay(const std::vector<const Trace*>& traces,
                                   const std::vector<uint64_t>& seeds) override;
  std::vector<CandidatePtr> mutate(const std::vector<const SearchCandidate*>& parents,
                                   const std::vector<size_t>& mutators,
                                   const std::vector<uint64_t>& seeds) override;
  std::vector<double> predict(const std::vector<const SearchCandidate*>& candidates) override;
  void update_cost_model(const std::vector<const SearchCandidate*>& candidates,
                         const std::vector<double>& run_seconds) override;
  void count(const std::string& statistic, size_t n) override;
  void count_refusal(const std::string& source, const std::string& message) override;

  // A candidate for a schedule the strategy did not propose (its trace may hold
  // postprocessor instructions; they are dropped).
  CandidatePtr adopt(const std::shared_ptr<Schedule>& sch) const;
  // False (and the reason counted) when there is no design space to sample from.
  bool has_design_spaces() { return sampler_.has_design_spaces(); }
  // The sampling threads end until the next batch of jobs (a tuner keeps one search per task:
  // only the one sampling holds threads).
  void release_threads() { sampler_.release_threads(); }

private:
  static CandidatePtr share(std::optional<Candidate> c);
  // The jobs' results in their order, counted; a refused job gives null.
  std::vector<CandidatePtr> run(const std::vector<SampleJob>& jobs);
  void strip_measured() const;

  SearchContext& ctx_;
  SearchStats& stats_;
  CandidateSampler sampler_;
  std::vector<double> mutator_probs_;
  mutable std::vector<Trace> measured_; // ctx.measured_traces without postprocessor parts
  mutable bool stripped_ = false;
};

} // namespace mt
