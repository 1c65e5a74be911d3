// Candidate generation on several threads. A batch of jobs -- a design space replayed with fresh
// decisions, a trace replayed with its decisions, or a trace mutated and the result replayed --
// each followed by the postprocessors and a structural fingerprint, runs on a pool of worker
// threads; results come back in job order. A job carries its own seed, and each thread its own
// postprocessors and mutators, so a result depends only on its job: the same jobs give the
// same results with one thread or sixteen, whichever thread ran what.
//
// Threads, not processes (docs/tuning.md, "Sampling on all cores"): a sample is a few hundred
// microseconds of work on immutable IR shared with the caller, and its result is a schedule
// the caller keeps; a worker process would have to send every candidate back as a trace and
// the caller replay it again, which is the work being spread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/plugin/plugin_components.h"
#include "core/plugin/search_backend.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/search/sampler_components.h"

namespace mt {

// A post-processed schedule, its trace before post-processing and its structural fingerprint.
using Candidate = SearchCandidate;

struct SampleJob {
  enum class Kind : uint8_t {
    Fresh,  // design space `design_space`, every decision re-sampled
    Replay, // `trace` with its decisions (a sampling instruction without one re-samples)
    Mutate, // `trace` changed by mutator `mutator`, then replayed with its decisions
  };
  Kind kind = Kind::Fresh;
  size_t design_space = 0;
  const Trace* trace = nullptr; // outlives the run
  size_t mutator = 0;
  // The schedule's random stream; Mutate: the mutator's, the replay seeded from it after.
  uint64_t seed = 0;
};

struct SampleResult {
  enum class Outcome : uint8_t {
    Ok,
    ReplayFailed,    // a schedule primitive refused during replay
    Rejected,        // a postprocessor refused
    MutatorFailed,   // the mutator threw
    NothingToMutate, // the mutator found nothing to change
  };
  Outcome outcome = Outcome::Ok;
  std::optional<Candidate> candidate; // Ok only
  // Refusals: who ("postproc std.X", "primitive split", "replay", "mutator std.Y") and why.
  std::string refused_by, reason;
};

// A seed for job `index` of a batch drawn with `batch_seed` (splitmix64 of both).
uint64_t job_seed(uint64_t batch_seed, uint64_t index);

// The calling thread's components: borrowed, used by the calling thread only.
struct SamplerComponentRefs {
  std::vector<const PluginPostproc*> postprocs;
  std::vector<const PluginMutator*> mutators;
};

// A postprocessor's refusal: who ("postproc std.X") and why.
struct PostprocRefusal {
  std::string refused_by, reason;
};
// Runs `postprocs` on `sch` in place, in order; the first refusal, if one refuses (a throw
// counts as one).
std::optional<PostprocRefusal> run_postprocs(const std::vector<const PluginPostproc*>& postprocs,
                                             const std::shared_ptr<Schedule>& sch);

class ParallelSampler {
public:
  // `threads` = 0: one per hardware thread. The calling thread samples too, with `own`; each
  // further thread with a set from `make` (created when the pool first starts). Without
  // `make`, or with one thread, everything runs on the calling thread.
  ParallelSampler(Function workload, std::vector<std::shared_ptr<Schedule>> design_spaces,
                  SamplerComponentRefs own, SamplerComponentFactory make, size_t threads);
  ~ParallelSampler();
  ParallelSampler(const ParallelSampler&) = delete;
  ParallelSampler& operator=(const ParallelSampler&) = delete;

  // The results of `jobs`, in their order. Never throws for a refused job (its result says
  // why); throws std::invalid_argument for a job that names no design space, trace or mutator.
  std::vector<SampleResult> run(const std::vector<SampleJob>& jobs);
  SampleResult run_one(const SampleJob& job);
  // Threads the jobs are spread over (the calling thread included).
  size_t threads() const { return threads_; }
  // Ends the worker threads and drops their components; the next run() starts them again.
  // A tuner with many tasks keeps one sampler per task: only the one sampling holds threads.
  void release_threads();

private:
  class Pool;
  void check(const SampleJob& job) const;

  Function workload_;
  std::vector<std::shared_ptr<Schedule>> design_spaces_;
  SamplerComponentRefs own_;
  SamplerComponentFactory make_;
  size_t threads_ = 1;
  std::unique_ptr<Pool> pool_;
};

} // namespace mt
