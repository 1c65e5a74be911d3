// Committing each trial (see add_to_database.h).
#include "core/tuner/add_to_database.h"

#include "core/tuner/task_context.h"

namespace mt {

AddToDatabase::AddToDatabase(Database& db, std::string target_key, uint64_t seed,
                             std::vector<PluginInfo> plugins)
    : db_(db), target_key_(std::move(target_key)), seed_(seed), plugins_(std::move(plugins)) {}

void AddToDatabase::on_trial(TaskContext& task, MeasuredTrial& trial) {
  const MeasureResult& r = trial.result;
  TuningRecord rec;
  rec.workload_id = task.result.workload_id;
  rec.target = target_key_;
  rec.trace_json = trial.schedule->trace().to_json();
  if (r.ok())
    rec.run_secs = r.run_secs;
  else
    rec.error = std::string(to_string(r.status)) + (r.error.empty() ? "" : ": " + r.error);
  rec.args = task.args;
  rec.seed = seed_;
  rec.plugins = plugins_;
  trial.record_id = db_.commit_record(rec);
  double secs = rec.mean_secs();
  ++task.result.trials;
  if (!r.ok()) ++task.result.failed;
  if (secs < task.result.best_seconds) {
    task.result.best_seconds = secs;
    task.result.best_record_id = trial.record_id;
  }
}

} // namespace mt
