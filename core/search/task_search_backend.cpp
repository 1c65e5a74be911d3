// The search context of one tuning task (see task_search_backend.h).
#include "core/search/task_search_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/ir/structural.h"

namespace mt {

TaskSearchBackend::TaskSearchBackend(SearchContext& ctx, SearchStats& stats)
    : ctx_(ctx), stats_(stats), sampler_(ctx, stats) {
  double total = 0;
  for (const auto& [m, p] : ctx_.mutators)
    total += std::max(p, 0.0);
  // All-zero probabilities: the mutators are taken as equally likely.
  for (const auto& [m, p] : ctx_.mutators)
    mutator_probs_.push_back(total > 0 ? std::max(p, 0.0) / total
                                       : 1.0 / static_cast<double>(ctx_.mutators.size()));
}

void TaskSearchBackend::strip_measured() const {
  if (stripped_) return;
  stripped_ = true;
  measured_.reserve(ctx_.measured_traces.size());
  for (const Trace& t : ctx_.measured_traces)
    measured_.push_back(sampler_.strip_postproc(t));
}

size_t TaskSearchBackend::num_measured() const {
  return ctx_.measured_traces.size();
}

const Trace& TaskSearchBackend::measured_trace(size_t index) const {
  strip_measured();
  return measured_.at(index);
}

double TaskSearchBackend::measured_seconds(size_t index) const {
  return index < ctx_.measured_seconds.size() ? ctx_.measured_seconds[index]
                                              : std::numeric_limits<double>::infinity();
}

CandidatePtr TaskSearchBackend::share(std::optional<Candidate> c) {
  if (!c) return nullptr;
  return std::make_shared<const SearchCandidate>(std::move(*c));
}

std::vector<CandidatePtr> TaskSearchBackend::run(const std::vector<SampleJob>& jobs) {
  std::vector<SampleResult> results = sampler_.run(jobs);
  std::vector<CandidatePtr> out;
  out.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i)
    out.push_back(share(sampler_.take(jobs[i], std::move(results[i]))));
  return out;
}

std::vector<CandidatePtr> TaskSearchBackend::sample(const std::vector<uint64_t>& seeds) {
  if (ctx_.design_spaces.empty()) return std::vector<CandidatePtr>(seeds.size());
  std::vector<SampleJob> jobs;
  jobs.reserve(seeds.size());
  for (uint64_t seed : seeds)
    jobs.push_back(sampler_.fresh_job(seed));
  return run(jobs);
}

std::vector<CandidatePtr> TaskSearchBackend::replay(const std::vector<const Trace*>& traces,
                                                    const std::vector<uint64_t>& seeds) {
  // Stripped first: the jobs point at these.
  std::vector<Trace> stripped;
  stripped.reserve(traces.size());
  for (const Trace* t : traces)
    stripped.push_back(sampler_.strip_postproc(*t));
  std::vector<SampleJob> jobs;
  jobs.reserve(traces.size());
  for (size_t i = 0; i < traces.size(); ++i)
    jobs.push_back({SampleJob::Kind::Replay, 0, &stripped[i], 0, seeds.at(i)});
  return run(jobs);
}

std::vector<CandidatePtr>
TaskSearchBackend::mutate(const std::vector<const SearchCandidate*>& parents,
                          const std::vector<size_t>& mutators, const std::vector<uint64_t>& seeds) {
  std::vector<SampleJob> jobs;
  jobs.reserve(parents.size());
  for (size_t i = 0; i < parents.size(); ++i) {
    jobs.push_back({SampleJob::Kind::Mutate, 0, &parents[i]->trace, mutators.at(i), seeds.at(i)});
  }
  return run(jobs);
}

std::vector<double>
TaskSearchBackend::predict(const std::vector<const SearchCandidate*>& candidates) {
  if (!ctx_.cost_model) throw std::runtime_error("the task has no cost model");
  std::vector<std::shared_ptr<Schedule>> schs;
  schs.reserve(candidates.size());
  for (const SearchCandidate* c : candidates)
    schs.push_back(c->sch);
  try {
    std::vector<double> s = ctx_.cost_model->predict(schs);
    if (s.size() != candidates.size())
      throw std::runtime_error("returned " + std::to_string(s.size()) + " scores for " +
                               std::to_string(candidates.size()) + " candidates");
    for (double& x : s)
      if (!std::isfinite(x)) x = 0;
    return s;
  } catch (const std::exception& e) {
    stats_.count_refusal("cost model", std::string("predict: ") + e.what());
    throw;
  }
}

void TaskSearchBackend::update_cost_model(const std::vector<const SearchCandidate*>& candidates,
                                          const std::vector<double>& run_seconds) {
  if (!ctx_.cost_model) throw std::runtime_error("the task has no cost model");
  std::vector<std::shared_ptr<Schedule>> schs;
  for (const SearchCandidate* c : candidates)
    schs.push_back(c->sch);
  try {
    ctx_.cost_model->update(schs, run_seconds);
  } catch (const std::exception& e) {
    stats_.count_refusal("cost model", std::string("update: ") + e.what());
    throw;
  }
}

void TaskSearchBackend::count(const std::string& statistic, size_t n) {
  if (statistic == "duplicates")
    stats_.duplicates += n;
  else if (statistic == "mutated")
    stats_.mutated += n;
  else if (statistic == "sampled")
    stats_.sampled += n;
  else
    stats_.count_refusal("strategy", "unknown statistic '" + statistic + "'");
}

void TaskSearchBackend::count_refusal(const std::string& source, const std::string& message) {
  stats_.count_refusal(source, message);
}

CandidatePtr TaskSearchBackend::adopt(const std::shared_ptr<Schedule>& sch) const {
  return std::make_shared<const SearchCandidate>(SearchCandidate{
      sch, sampler_.strip_postproc(sch->trace()), structural_fingerprint(sch->func())});
}

} // namespace mt
