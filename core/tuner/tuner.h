// The tuning loop: one or more workloads (tasks) tuned for one target under one trial
// budget. Per task it files the workload in the database, builds the components of the
// search space (the target's defaults as plugins and options edit them: space_config.h),
// generates design spaces, warm-starts the search and the cost model from the
// records already in the database, and computes the reference result once. Then, until the
// budget is spent: the task scheduler picks a task, its search strategy proposes a batch, the
// measurer builds and times it, and every result -- failed ones too -- is committed to the
// database the moment it is known, so that a killed run loses at most the trial in flight.
//
// Budget (resume semantics): `trials` is the number of records a task set should have in the
// database for this target, counting the records already there when the run starts. The same
// command run again after an interruption continues to the same total; to tune further, ask
// for a larger budget. Per-task caps count the same way. Full description: docs/tuning.md.
//
// Library candidates: a library target (default "onednn.cpu", when registered) that builds a
// task's workload has its implementation measured once per workload through the same measurer
// and filed under its own target key; it is not a trial of the run (it does not count toward
// the budget, which counts the tuning target's records). Each task then reports which
// implementation is faster, and with `compare` both are timed again side by side at the end.
//
// What happens after each measurement -- the commit, the cost model's training, the progress
// events -- is done by measure callbacks (measure_callback.h); TuneOptions::callbacks adds an
// application's own after those.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/measure/measure.h"
#include "core/measure/reference_cache.h"
#include "core/measure/verify_best.h"
#include "core/search/search_strategy.h"
#include "core/tuner/space_config.h"

namespace mt {

class PluginHost;
class MeasureCallback;

// The run could not tune at all: no target, no design space, or every candidate refused (the
// message carries the search's diagnosis).
class TuneError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct TuneTask {
  std::string spec;  // workload spec ("matmul(M=64,N=64,K=64)"); stored canonicalised
  Function workload; // built from `spec` when its body is null
  double weight = 1; // how often the task runs in its model (task scheduler)
  // Per param of the workload: a model's weight (MeasureOptions::weights: a kernel that takes
  // it packed is timed with it packed, as the model runs it). Empty: none.
  std::vector<bool> weights = {};
};

inline constexpr const char* kAutoLibrary = "auto";

struct TuneOptions {
  std::string target = "llvm"; // see setup_target (target_setup.h)
  size_t trials = 1000;        // records wanted in the database, all tasks together
  size_t per_task_cap = 0;     // records wanted per task at most; 0 = no cap
  // Wall-clock seconds from the start of the run (references and library measurements
  // included) after which no further candidate is measured; the run then ends as if its
  // budget were spent: the fastest records are verified and compared. At least one batch is
  // measured, so a capped run reports a kernel however long its references took. +inf = none.
  double time_budget_seconds = std::numeric_limits<double>::infinity();
  // Candidates per scheduler turn; 0 = auto_batch_size(trials, tasks).
  size_t batch_size = 0;
  // Search strategy component (search_strategy.h): "search.Evolutionary" (the default,
  // configured by `evolutionary`), "search.ReplayTrace", a plugin's, or the short names
  // "evolutionary" / "replay"; "NAME{json}" configures it, as does `strategy_config`.
  std::string strategy = "search.Evolutionary";
  std::string strategy_config;
  std::string scheduler = "gradient"; // or "round-robin"
  // Gradient scheduler: the share of this run's trials its first pass (a batch per task) may
  // use; the rest is spent where the weighted latency is predicted to drop most
  // (TaskSchedulerOptions::first_pass_share).
  double first_pass_share = 0.5;
  // Cost model component; "none" = candidates in random order. When the component is absent
  // the run falls back to "cost.Random" (with a warning), then to none.
  std::string cost_model = "cost.XGBoost";
  // One model for all the tasks of a run (MetaSchedule's choice): every measurement trains it,
  // its labels normalised per workload, so that a model's later tasks -- a decoder's dozen
  // linears, each given a dozen trials -- are ranked by what the earlier ones measured. With
  // true, each task trains a model of its own on its own records only.
  bool cost_model_per_task = false;
  // Loaded at the start when the file exists, saved after every batch. With a model per task
  // and several tasks each task's model is its own file: "<path>.<task index>".
  std::string cost_model_path;
  std::string db_path; // required
  uint64_t seed = 1;
  MeasureOptions measure;
  // How candidates, library implementations and the side-by-side comparison are timed:
  // "off", on one set of arguments, hot in the caches; "on", each call on the next of many
  // copies of the inputs, which come from memory as a model's weights do
  // (MeasureOptions::cold_inputs); "memory-bound", on for the tasks of fewer than
  // kColdInputsFlopsPerByte flops per byte of input (a decode step's matrix-vector products,
  // whose time is the memory's), off for the others (a prompt's matrix products, whose weights
  // a model's run finds in the cache as often as not: their hot times match it); "auto", the
  // database's policy when it has records or a policy, else "memory-bound" for a model's tasks
  // (`model_tasks`) on a CPU target and "off" for the others. Overrides measure.cold_inputs. A
  // database keeps one policy ('measured_inputs' setting): a run given another fails before
  // it measures (the times would not compare).
  std::string cold_inputs = "auto";
  bool model_tasks = false; // the tasks are a model's kernels (for "auto" above)
  EvolutionaryOptions evolutionary;
  // Threads the search generates candidates on (0: one per core); the candidates are the same
  // for any number (core/search/parallel_sampler.h).
  size_t sampling_threads = 0;
  // Library targets whose implementations compete with the tuned kernels
  // (library_candidate.h). Names not registered by a loaded plugin are skipped; empty = none.
  // kAutoLibrary stands for the tuning target's vendor library: onednn.cpu on a CPU, cublas on
  // a cuda device, none on other GPUs.
  std::vector<std::string> library_targets{kAutoLibrary};
  // Edits of the target's schedule rules, mutators and postprocessors (after the components
  // plugins declare for it), applied in order: add, drop, replace (space_config.h).
  std::vector<SpaceEdit> space;
  // At the end of a run that was not interrupted, re-measure each task's best tuned kernel and
  // its best library implementation alternately in one worker process
  // (implementation_compare.h): `compare_repeats` repeats each of
  // measure.min_repeat_seconds, medians.
  bool compare = false;
  int compare_repeats = 5;
  // At the end of a run that was not interrupted, each task's fastest records are measured
  // again in fresh workers, the times appended to the records, and the best is the one with
  // the lowest mean after that (verify_best.h): a single measurement of the best of hundreds
  // is a lucky one. `verify.top` = 0 turns it off.
  VerifyOptions verify;
  // Where each task's reference result is kept between runs (reference_cache.h), so that a
  // resumed run, or the same workload tuned in another model, does not recompute it. Empty
  // = no cache.
  std::string reference_cache_dir = default_reference_cache_dir();
  // Tasks of at least this many flops per call get their reference from the tuning target's
  // build of the unscheduled workload, not from the interpreter: matmul 1024^3 takes ~40 s
  // interpreted on 2 cores and ~1 s built by llvm, and a model's LM head five times that.
  // The targets' unscheduled builds are tested against the interpreter over the workload
  // library (tests/llvm/workload_test.cpp) and every model layer (tests/graph); the
  // interpreter stays the oracle of the tests. 0 = always the target; +inf = never.
  double reference_by_target_flops = 2e8;
  // A reference computed that way which ran at least this long is also the unscheduled
  // workload's trial (its time, build included, is the record's): not run a second time.
  // +inf = always measure it like any candidate.
  double reference_run_as_trial_seconds = 1.0;
  // An embedding application's measure callbacks (measure_callback.h), called after the
  // built-in ones (commit to the database, cost model update, progress events) for every
  // trial and every batch of the run: a trial they see is already in the database, with its
  // record id. They run on the tuning thread, one call at a time; an exception thrown by one
  // ends the run as a database error would (what was committed stays).
  std::vector<std::shared_ptr<MeasureCallback>> callbacks;
};

struct TaskResult {
  std::string spec;
  int64_t workload_id = 0;
  double weight = 1;
  double flops = 0;         // per call (count_flops)
  bool cold_inputs = false; // its times measured on cold inputs (TuneOptions::cold_inputs)
  size_t prior_records = 0; // in the database for this target when the run started
  size_t trials = 0;        // measured in this run
  size_t failed = 0;        // of those, failed
  double best_seconds = std::numeric_limits<double>::infinity(); // database included
  int64_t best_record_id = 0;
  // How best_seconds was found: with verified > 0, that many of the fastest records were
  // measured again (best_seconds is the winner's mean over all its times, and
  // recorded_best_seconds the fastest record's mean before that); else the fastest record's
  // mean as measured in its trial.
  size_t verified = 0;
  double recorded_best_seconds = std::numeric_limits<double>::infinity();
  // Where this run's time on the task went, wall seconds: its setup (design spaces, reference,
  // library implementations), the search proposing candidates, the measuring of them, the
  // callbacks after each batch (cost model training, ...), and the checks at the end (the
  // fastest records measured again, the side-by-side comparison). Within the measuring,
  // `builds` and `runs` are sums over the candidates: builds overlap each other in parallel
  // workers; runs (upload, warm-up, check, timed repeats) take the device in turn.
  struct Time {
    double setup = 0, search = 0, measuring = 0, builds = 0, runs = 0, updates = 0, checks = 0;
    Time& operator+=(const Time& o) {
      setup += o.setup, search += o.search, measuring += o.measuring, builds += o.builds;
      runs += o.runs, updates += o.updates, checks += o.checks;
      return *this;
    }
  } time;
  bool exhausted = false;     // its search could propose nothing more
  std::string diagnosis;      // why the search refused candidates (when exhausted)
  double best_gflops() const; // 0 when nothing succeeded

  // The fastest successful library implementation of the workload (database included), or
  // none: library_target empty when no library target implements it (or none is in use).
  std::string library_target;    // its database key ("onednn.cpu")
  std::string library_component; // its target component
  double library_seconds = std::numeric_limits<double>::infinity();
  int64_t library_record_id = 0;
  size_t library_measured = 0; // library implementations measured (and recorded) in this run
  // The side-by-side re-measurement (TuneOptions::compare): medians; +inf when not compared.
  // Its times are appended to both records, so best_seconds and library_seconds include them.
  double compare_tuned_seconds = std::numeric_limits<double>::infinity();
  double compare_library_seconds = std::numeric_limits<double>::infinity();
  std::string compare_error; // why the comparison failed, when it was attempted
  // Component of the faster implementation: the tuning target's or library_component; empty
  // when neither has a successful measurement. Decided on the database records' means
  // (best_seconds vs library_seconds), as `metatune best` decides.
  std::string chosen;
  bool compared() const;
  bool library_chosen() const { return !chosen.empty() && chosen == library_component; }
  double library_gflops() const; // on the figures `chosen` was decided on; 0 if none
  double tuned_gflops() const;   // likewise (= best_gflops())
  // tuned GFLOPS / library GFLOPS on those figures; 0 when either is missing.
  double ratio_to_library() const;
  // The time of the chosen implementation, on the figures it was chosen on: what a model
  // using it takes.
  double chosen_seconds() const;
};

struct TuneResult {
  std::string target; // database key of the target
  std::string target_component;
  std::vector<TaskResult> tasks;
  size_t trials = 0;        // measured in this run, all tasks
  size_t records_total = 0; // in the database for these tasks and target at the end
  double tuning_seconds = 0;
  bool interrupted = false;         // stopped by the stop flag
  bool time_budget_reached = false; // stopped by TuneOptions::time_budget_seconds
  // Weighted sum of the tasks' best times (the model's latency; +inf if a task has none).
  double best_seconds() const;
  double best_gflops() const; // weighted flops / best_seconds()
  // Like best_seconds(), with each task at its chosen implementation (tuned or library).
  double chosen_seconds() const;
  double chosen_gflops() const;
};

// Progress of a run, passed to the observer.
struct TuneProgress {
  size_t trials_done = 0;  // records counted toward the budget (database + this run)
  size_t trials_total = 0; // the budget
  size_t trials_run = 0;   // measured in this run
  size_t failed_run = 0;
  double best_gflops = 0; // of the task set (TuneResult::best_gflops so far)
  double elapsed_seconds = 0;
  int task = -1; // task of the last event
  std::string task_spec;
};

class TuneObserver {
public:
  virtual ~TuneObserver() = default;
  virtual void on_start(const TuneProgress&) {}
  // After each trial has been committed (ok or failed).
  virtual void on_trial(const TuneProgress&, const MeasureResult&) {}
  virtual void on_batch(const TuneProgress&) {}
  virtual void on_finish(const TuneResult&) {}
};

// The batch size when TuneOptions::batch_size is 0: each task gets about four batches of its
// share of `trials`, so that the cost model, trained on every measured batch, picks most of
// them (with one batch of 64 in a 64-trial budget it never would); multiples of 8 between 16
// and 64 (MetaSchedule's batch).
size_t auto_batch_size(size_t trials, size_t tasks);

// Tunes `tasks` (see the file comment). `stop`, when given, is checked between trials: once
// set, the run ends after the trial in flight, keeping everything measured, and the result has
// `interrupted` set. Throws TuneError when nothing could be tuned, std::invalid_argument for
// bad options, DatabaseError for database trouble.
TuneResult tune(PluginHost& host, const std::vector<TuneTask>& tasks, const TuneOptions& options,
                TuneObserver* observer = nullptr, const std::atomic<bool>* stop = nullptr);

} // namespace mt
