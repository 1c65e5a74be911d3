// One task of a tuning run and its state: the workload, what the database held for it when the
// run started, its search (components, design spaces, strategy, cost model), its reference
// result, and the library implementations it is compared with. The tuner (tuner.cpp) drives
// its setup phases in order; measure callbacks (measure_callback.h) update it after each
// measurement.
#pragma once

#include <atomic>
#include <cstddef>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/database/database.h"
#include "core/measure/library_candidate.h"
#include "core/measure/measure.h"
#include "core/search/search_strategy.h"
#include "core/tuner/space_config.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tuner.h"

namespace mt {

class PluginHost;

// The measured schedules of the records a run found in the database, for one training of
// the run's cost model.
struct WarmStart {
  std::vector<std::shared_ptr<Schedule>> schedules;
  std::vector<double> seconds;
  size_t tasks = 0; // that contributed
};

// What every task of a run is built from: the run's resolved components and options.
struct TaskSetup {
  PluginHost& host;
  const TuneOptions& options;
  const TargetSetup& target;
  const SearchSpace& space;
  std::string model_name; // empty = no cost model
  std::string strategy_name;
  std::string strategy_config;
  size_t task_count = 1; // with a model per task and several tasks, each has its own file
  // GPU runs: the CPU target ("llvm.cpu", when registered) that computes the reference of a
  // large task instead of the interpreter (ensure_reference); null otherwise.
  const TargetSetup* cpu_reference = nullptr;
  // The run's one cost model (TuneOptions::cost_model_per_task false), already loaded from
  // cost_model_path when `run_model_loaded`; null: each task creates its own.
  std::shared_ptr<PluginCostModel> run_model;
  bool run_model_loaded = false;
  // Where the tasks put the records their run model is to be trained on (one training for
  // the whole run instead of one per task); null with a model per task.
  WarmStart* warm_start = nullptr;
};

class TaskContext {
public:
  explicit TaskContext(size_t index) : index(index) {}

  // Builds the workload, files it in the database and reads the records already stored for
  // the tuning target and for each library target (best times, warm-start material).
  void file_in_database(Database& db, const TuneTask& task, const std::string& target_key,
                        const std::vector<LibraryTarget>& libs);
  // The schedule rules, postprocessors, mutators, cost model and design spaces; the search
  // warm-started from the prior records (which are released), and the strategy. Throws
  // TuneError when the rules produce no design space.
  void build_search(const TaskSetup& setup);
  // Loads or computes the reference result (once); says which, for the log ("" when it was
  // there already). A task of at least options.reference_by_target_flops has it computed by
  // the tuning target's build of the unscheduled workload (for a GPU target: by the CPU
  // target of TaskSetup::cpu_reference, where there is one), the smaller ones by the
  // interpreter.
  std::string ensure_reference(const TuneOptions& options);
  // The library implementations not yet in the database: measured like any candidate (own
  // worker, output checked), committed under the library's key. `measurers` (one per library
  // target, created on first use) are shared by the tasks.
  void measure_libraries(Database& db, const std::vector<LibraryTarget>& libs,
                         std::vector<std::unique_ptr<Measurer>>& measurers,
                         const TuneOptions& options, const std::atomic<bool>* stop);
  // Which implementation the task uses: the faster of the best tuned record and the best
  // library record, by their means in the database -- the figures `metatune best` and a
  // model's `best` kernels decide on. With options.compare both are timed again side by side
  // first and those times appended to the two records.
  void choose(Database& db, const std::vector<LibraryTarget>& libs, const TargetSetup& target,
              const TuneOptions& options, const std::atomic<bool>* stop);
  // The unscheduled workload as a candidate of its own, once per task and only when the
  // database holds no record of it for the tuning target: the tuner then never hands back
  // something slower than the untuned program (LLVM vectorises some plain loop nests better
  // than the sampled schedules do, depthwise convolution for one). Null when a postprocessor
  // refuses it (a GPU target needs bound threads).
  std::shared_ptr<Schedule> take_unscheduled_candidate();
  // best_* and library_* of the result from the database's records now.
  void refresh_from_database(const Database& db, const std::vector<LibraryTarget>& libs,
                             const std::string& target_key);
  // Saves the cost model (after a batch); a model that cannot be saved is warned about once.
  void save_model();

  const size_t index; // in the run's task list
  TaskResult result;
  Function workload;
  std::vector<ArgInfo> args; // of the workload, for its records
  std::vector<bool> weights; // TuneTask::weights
  SearchContext ctx;
  std::unique_ptr<SearchStrategy> strategy;
  Reference reference;
  bool has_reference = false;
  const TargetSetup* target = nullptr;        // the tuning target (build_search)
  const TargetSetup* cpu_reference = nullptr; // TaskSetup::cpu_reference (build_search)
  std::string model_path;
  std::vector<bool> library_stored; // per library target: the database has a record already
  std::set<int64_t> verified_ids;   // records measured again in this run (verify_best)
  bool unscheduled_offered = false; // measured before (its record is in the database) or taken
  bool unscheduled_in_run = false;  // this run measures it
  bool reference_by_target = false; // the reference came from the target's build (a large task)
  // Its time per call when the reference was computed by the tuning target's build (outer
  // loops parallel) and took long enough for one run to be a measurement
  // (TuneOptions::reference_run_as_trial_seconds); +inf otherwise.
  double unscheduled_seconds = std::numeric_limits<double>::infinity();

private:
  // library_* of the result from the libraries' records; per library, whether it has any.
  std::vector<bool> read_library_records(const Database& db,
                                         const std::vector<LibraryTarget>& libs);
  bool load_model() const;
  // Into the task's model, or added to `into` for the run's model (the run has `tasks`).
  void train_from_records(const std::vector<TuningRecord>& records, WarmStart* into,
                          size_t tasks);

  std::vector<TuningRecord> prior_records_; // until build_search has used them
};

// Loads `model` from `path` when that file exists; false when there is none or it cannot be
// read (warned about, `who` naming the task or "" for the run's model): the caller then trains
// it from the database.
bool load_cost_model(PluginCostModel& model, const std::string& path, const std::string& who);

// The time a measurement is ranked by: the mean of its run times, +inf when it failed (as
// TuningRecord::mean_secs).
double measured_seconds(const MeasureResult& r);

// splitmix64 steps: distinct tasks and resumed runs sample different candidates.
uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b);

} // namespace mt
