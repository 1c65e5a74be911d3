// Candidate generation on several threads (see parallel_sampler.h).
#include "core/search/parallel_sampler.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "core/ir/structural.h"
#include "core/schedule/random.h"

namespace mt {

namespace {

// One job on one thread's components. Everything a plugin or a primitive throws becomes the
// job's refusal.
class JobRunner {
public:
  JobRunner(const Function& workload, const std::vector<std::shared_ptr<Schedule>>& spaces,
            const SamplerComponentRefs& components)
      : workload_(workload), spaces_(spaces), c_(components) {}

  SampleResult run(const SampleJob& job) const {
    SampleResult r;
    try {
      switch (job.kind) {
      case SampleJob::Kind::Fresh:
        replay(spaces_[job.design_space]->trace(), job.seed, /*use_decisions=*/false, r);
        break;
      case SampleJob::Kind::Replay:
        replay(*job.trace, job.seed, true, r);
        break;
      case SampleJob::Kind::Mutate:
        mutate(job, r);
        break;
      }
    } catch (const std::exception& e) {
      refuse(r, SampleResult::Outcome::ReplayFailed, "replay", e.what());
    } catch (...) {
      refuse(r, SampleResult::Outcome::ReplayFailed, "replay", "unknown exception");
    }
    return r;
  }

private:
  static void refuse(SampleResult& r, SampleResult::Outcome o, std::string who, std::string why) {
    r.outcome = o;
    r.candidate.reset();
    r.refused_by = std::move(who);
    r.reason = std::move(why);
  }

  void mutate(const SampleJob& job, SampleResult& r) const {
    RandomEngine rng(job.seed);
    const PluginMutator& m = *c_.mutators[job.mutator];
    std::optional<Trace> t;
    try {
      t = m.apply(*job.trace, rng);
    } catch (const std::exception& e) {
      refuse(r, SampleResult::Outcome::MutatorFailed, "mutator " + m.info().name, e.what());
      return;
    }
    if (!t) {
      r.outcome = SampleResult::Outcome::NothingToMutate;
      return;
    }
    replay(*t, rng.next(), true, r);
  }

  void replay(const Trace& trace, uint64_t seed, bool use_decisions, SampleResult& r) const {
    auto sch = std::make_shared<Schedule>(workload_, seed);
    try {
      trace.apply_to(*sch, use_decisions);
    } catch (const ScheduleError& e) {
      refuse(r, SampleResult::Outcome::ReplayFailed, "primitive " + e.primitive(), e.what());
      return;
    } catch (const std::exception& e) {
      refuse(r, SampleResult::Outcome::ReplayFailed, "replay", e.what());
      return;
    }
    // Postprocessors rewrite `sch` in place; this copy of the trace is taken before.
    Candidate c{nullptr, sch->trace(), 0};
    if (std::optional<PostprocRefusal> no = run_postprocs(c_.postprocs, sch)) {
      refuse(r, SampleResult::Outcome::Rejected, std::move(no->refused_by), std::move(no->reason));
      return;
    }
    c.hash = structural_fingerprint(sch->func());
    c.sch = std::move(sch);
    r.outcome = SampleResult::Outcome::Ok;
    r.candidate = std::move(c);
  }

  const Function& workload_;
  const std::vector<std::shared_ptr<Schedule>>& spaces_;
  const SamplerComponentRefs& c_;
};

SamplerComponentRefs refs_of(const SamplerComponents& c) {
  SamplerComponentRefs r;
  for (const auto& p : c.postprocs)
    r.postprocs.push_back(p.get());
  for (const auto& m : c.mutators)
    r.mutators.push_back(m.get());
  return r;
}

} // namespace

std::optional<PostprocRefusal> run_postprocs(const std::vector<const PluginPostproc*>& postprocs,
                                             const std::shared_ptr<Schedule>& sch) {
  for (const PluginPostproc* p : postprocs) {
    std::string reason;
    bool ok = false;
    try {
      ok = p->apply(sch, &reason);
    } catch (const std::exception& e) {
      reason = e.what();
    }
    if (!ok) {
      const std::string& name = p->info().name;
      // Most reasons already name their postprocessor.
      return PostprocRefusal{"postproc " + name,
                             reason.rfind(name, 0) == 0 ? reason : name + ": " + reason};
    }
  }
  return std::nullopt;
}

uint64_t job_seed(uint64_t batch_seed, uint64_t index) {
  uint64_t z = batch_seed + 0x9e3779b97f4a7c15ULL * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Worker threads, each with its own components, taking jobs of the current batch in turn
// (an atomic counter); the calling thread takes jobs as well and returns when all are done.
class ParallelSampler::Pool {
public:
  Pool(const ParallelSampler& owner, size_t workers) : owner_(owner) {
    for (size_t w = 0; w < workers; ++w) {
      components_.push_back(owner.make_());
      const SamplerComponents& c = components_.back();
      if (c.postprocs.size() != owner.own_.postprocs.size() ||
          c.mutators.size() != owner.own_.mutators.size())
        throw std::logic_error("ParallelSampler: the component factory made " +
                               std::to_string(c.postprocs.size()) + " postprocessors and " +
                               std::to_string(c.mutators.size()) + " mutators, the search uses " +
                               std::to_string(owner.own_.postprocs.size()) + " and " +
                               std::to_string(owner.own_.mutators.size()) + " (this is a bug)");
      refs_.push_back(refs_of(c));
    }
    for (size_t w = 0; w < workers; ++w)
      threads_.emplace_back([this, w] { work(w); });
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_)
      t.join();
  }

  void run(const std::vector<SampleJob>& jobs, std::vector<SampleResult>& results) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_ = &jobs;
      results_ = &results;
      next_.store(0);
      busy_ = threads_.size();
      ++batch_;
    }
    wake_.notify_all();
    drain(owner_.own_);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    jobs_ = nullptr;
    results_ = nullptr;
  }

private:
  void work(size_t w) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || batch_ != seen; });
        if (stop_) return;
        seen = batch_;
      }
      drain(refs_[w]);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_all();
    }
  }

  void drain(const SamplerComponentRefs& c) {
    JobRunner runner(owner_.workload_, owner_.design_spaces_, c);
    const std::vector<SampleJob>& jobs = *jobs_;
    for (size_t i = next_.fetch_add(1); i < jobs.size(); i = next_.fetch_add(1))
      (*results_)[i] = runner.run(jobs[i]);
  }

  const ParallelSampler& owner_;
  std::vector<SamplerComponents> components_;
  std::vector<SamplerComponentRefs> refs_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  bool stop_ = false;
  uint64_t batch_ = 0;
  size_t busy_ = 0;
  const std::vector<SampleJob>* jobs_ = nullptr;
  std::vector<SampleResult>* results_ = nullptr;
  std::atomic<size_t> next_{0};
};

ParallelSampler::ParallelSampler(Function workload,
                                 std::vector<std::shared_ptr<Schedule>> design_spaces,
                                 SamplerComponentRefs own, SamplerComponentFactory make,
                                 size_t threads)
    : workload_(std::move(workload)), design_spaces_(std::move(design_spaces)),
      own_(std::move(own)), make_(std::move(make)) {
  if (threads == 0) threads = std::max<size_t>(1, std::thread::hardware_concurrency());
  threads_ = make_ ? threads : 1;
}

ParallelSampler::~ParallelSampler() = default;

void ParallelSampler::check(const SampleJob& job) const {
  switch (job.kind) {
  case SampleJob::Kind::Fresh:
    if (job.design_space >= design_spaces_.size())
      throw std::invalid_argument("ParallelSampler: design space " +
                                  std::to_string(job.design_space) + " of " +
                                  std::to_string(design_spaces_.size()));
    break;
  case SampleJob::Kind::Mutate:
    if (job.mutator >= own_.mutators.size())
      throw std::invalid_argument("ParallelSampler: mutator " + std::to_string(job.mutator) +
                                  " of " + std::to_string(own_.mutators.size()));
    [[fallthrough]];
  case SampleJob::Kind::Replay:
    if (!job.trace) throw std::invalid_argument("ParallelSampler: a job without its trace");
    break;
  }
}

void ParallelSampler::release_threads() {
  pool_.reset();
}

SampleResult ParallelSampler::run_one(const SampleJob& job) {
  check(job);
  return JobRunner(workload_, design_spaces_, own_).run(job);
}

std::vector<SampleResult> ParallelSampler::run(const std::vector<SampleJob>& jobs) {
  for (const SampleJob& j : jobs)
    check(j);
  std::vector<SampleResult> results(jobs.size());
  if (threads_ <= 1 || jobs.size() <= 1) {
    JobRunner runner(workload_, design_spaces_, own_);
    for (size_t i = 0; i < jobs.size(); ++i)
      results[i] = runner.run(jobs[i]);
    return results;
  }
  if (!pool_) pool_ = std::make_unique<Pool>(*this, threads_ - 1);
  pool_->run(jobs, results);
  return results;
}

} // namespace mt
