// Candidate sampling for the search strategies (see candidate_sampler.h).
#include "core/search/candidate_sampler.h"

#include <exception>
#include <string>
#include <utility>

#include "core/ir/structural.h"

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

std::optional<Candidate> CandidateSampler::sample_fresh(RandomEngine& rng) {
  if (ctx_.design_spaces.empty()) return std::nullopt;
  size_t space =
      static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(ctx_.design_spaces.size())));
  uint64_t seed = rng.next();
  return run(ctx_.design_spaces[space]->trace(), seed, /*use_decisions=*/false);
}

bool CandidateSampler::has_design_spaces() {
  if (!ctx_.design_spaces.empty()) return true;
  stats_.count_refusal("design spaces", "no design space to sample: the schedule rules produced "
                                        "none for this workload, or none was given");
  return false;
}

std::optional<Candidate> CandidateSampler::replay(const Trace& trace, uint64_t seed) {
  return run(trace, seed, /*use_decisions=*/true);
}

std::optional<Candidate> CandidateSampler::run(const Trace& trace, uint64_t seed,
                                               bool use_decisions) {
  ++stats_.sampled;
  auto sch = std::make_shared<Schedule>(ctx_.workload, seed);
  try {
    trace.apply_to(*sch, use_decisions);
  } catch (const ScheduleError& e) {
    ++stats_.replay_failed;
    stats_.count_refusal("primitive " + e.primitive(), e.what());
    return std::nullopt;
  } catch (const std::exception& e) {
    ++stats_.replay_failed;
    stats_.count_refusal("replay", e.what());
    return std::nullopt;
  }
  // Postprocessors rewrite `sch` in place; this copy of the trace is taken before.
  Candidate c{nullptr, sch->trace(), 0};
  if (!postprocess(sch)) return std::nullopt;
  c.hash = structural_hash(sch->func());
  c.sch = std::move(sch);
  return c;
}

bool CandidateSampler::postprocess(const std::shared_ptr<Schedule>& sch) {
  for (const auto& p : ctx_.postprocs) {
    std::string reason;
    bool ok = false;
    try {
      ok = p->apply(sch, &reason);
    } catch (const std::exception& e) {
      reason = e.what();
    }
    if (!ok) {
      ++stats_.rejected;
      const std::string& name = p->info().name;
      // Most reasons already name their postprocessor.
      stats_.count_refusal("postproc " + name,
                           reason.rfind(name, 0) == 0 ? reason : name + ": " + reason);
      return false;
    }
  }
  return true;
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
