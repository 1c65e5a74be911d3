// Candidate sampling for the search strategies (see candidate_sampler.h).
#include "core/search/candidate_sampler.h"

#include <map>
#include <string>
#include <utility>

#include "core/search/design_space.h"

namespace mt {

namespace {

// Same instruction up to the numbering of random variables and the decision.
bool same_shape(const Instruction& a, const Instruction& b) {
  if (a.kind != b.kind || a.attrs != b.attrs || a.inputs.size() != b.inputs.size() ||
      a.outputs.size() != b.outputs.size())
    return false;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (a.inputs[i].index() != b.inputs[i].index()) return false;
    if (const auto* x = std::get_if<int64_t>(&a.inputs[i]))
      if (*x != std::get<int64_t>(b.inputs[i])) return false;
  }
  return true;
}

} // namespace

CandidateSampler::CandidateSampler(SearchContext& ctx, SearchStats& stats)
    : ctx_(ctx), stats_(stats) {}

CandidateSampler::~CandidateSampler() = default;

ParallelSampler& CandidateSampler::parallel() {
  if (!parallel_) {
    SamplerComponentRefs own;
    for (const auto& p : ctx_.postprocs)
      own.postprocs.push_back(p.get());
    for (const auto& [m, prob] : ctx_.mutators)
      own.mutators.push_back(m.get());
    parallel_ = std::make_unique<ParallelSampler>(ctx_.workload, ctx_.design_spaces, std::move(own),
                                                  ctx_.sampler_components, ctx_.sampling_threads);
  }
  return *parallel_;
}

const std::vector<std::vector<size_t>>& CandidateSampler::kinds() const {
  // The context may gain its spaces after the sampler is made: grouped on first use.
  if (kinds_of_ != ctx_.design_spaces.size() || kinds_.empty()) {
    kinds_.clear();
    std::map<std::vector<std::pair<std::string, std::string>>, size_t> index;
    for (size_t i = 0; i < ctx_.design_spaces.size(); ++i) {
      auto [it, fresh] =
          index.try_emplace(space_annotations(ctx_.design_spaces[i]->trace()), kinds_.size());
      if (fresh) kinds_.emplace_back();
      kinds_[it->second].push_back(i);
    }
    kinds_of_ = ctx_.design_spaces.size();
  }
  return kinds_;
}

size_t CandidateSampler::draw_space(RandomEngine& rng) const {
  const auto& k = kinds();
  if (k.empty()) return 0; // nothing to sample; the callers check for that
  const auto& of_kind = k[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(k.size())))];
  return of_kind[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(of_kind.size())))];
}

std::optional<Candidate> CandidateSampler::sample_fresh(RandomEngine& rng) {
  if (ctx_.design_spaces.empty()) return std::nullopt;
  SampleJob job;
  job.design_space = draw_space(rng);
  job.seed = rng.next();
  return take(job, parallel().run_one(job));
}

SampleJob CandidateSampler::fresh_job(uint64_t seed) const {
  RandomEngine rng(seed);
  SampleJob job;
  job.design_space = draw_space(rng);
  job.seed = rng.next();
  return job;
}

bool CandidateSampler::has_design_spaces() {
  if (!ctx_.design_spaces.empty()) return true;
  stats_.count_refusal("design spaces", "no design space to sample: the schedule rules produced "
                                        "none for this workload, or none was given");
  return false;
}

std::optional<Candidate> CandidateSampler::replay(const Trace& trace, uint64_t seed) {
  SampleJob job{SampleJob::Kind::Replay, 0, &trace, 0, seed};
  return take(job, parallel().run_one(job));
}

std::vector<SampleResult> CandidateSampler::run(const std::vector<SampleJob>& jobs) {
  return parallel().run(jobs);
}

void CandidateSampler::release_threads() {
  if (parallel_) parallel_->release_threads();
}

std::optional<Candidate> CandidateSampler::take(const SampleJob& job, SampleResult&& r) {
  using Outcome = SampleResult::Outcome;
  switch (r.outcome) {
  case Outcome::NothingToMutate:
    return std::nullopt;
  case Outcome::MutatorFailed:
    stats_.count_refusal(r.refused_by, r.reason);
    return std::nullopt;
  case Outcome::ReplayFailed:
    ++stats_.sampled;
    ++stats_.replay_failed;
    stats_.count_refusal(r.refused_by, r.reason);
    return std::nullopt;
  case Outcome::Rejected:
    ++stats_.sampled;
    ++stats_.rejected;
    stats_.count_refusal(r.refused_by, r.reason);
    return std::nullopt;
  case Outcome::Ok:
    break;
  }
  ++stats_.sampled;
  if (job.kind == SampleJob::Kind::Mutate) ++stats_.mutated;
  return std::move(r.candidate);
}

bool CandidateSampler::postprocess(const std::shared_ptr<Schedule>& sch) {
  std::vector<const PluginPostproc*> postprocs;
  for (const auto& p : ctx_.postprocs)
    postprocs.push_back(p.get());
  std::optional<PostprocRefusal> no = run_postprocs(postprocs, sch);
  if (!no) return true;
  ++stats_.rejected;
  stats_.count_refusal(no->refused_by, no->reason);
  return false;
}

Trace CandidateSampler::strip_postproc(const Trace& trace) const {
  const auto& insts = trace.instructions();
  for (const auto& space : ctx_.design_spaces) {
    const auto& pre = space->trace().instructions();
    if (pre.size() > insts.size()) continue;
    bool match = true;
    for (size_t i = 0; i < pre.size() && match; ++i)
      match = same_shape(pre[i], insts[i]);
    if (!match) continue;
    if (pre.size() == insts.size()) return trace;
    Trace out;
    for (size_t i = 0; i < pre.size(); ++i)
      out.append(insts[i]);
    return out;
  }
  return trace;
}

} // namespace mt
