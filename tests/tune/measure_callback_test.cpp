// An application's measure callback passed through TuneOptions::callbacks, in a real run with
// the real plugins: it sees every trial the run measures, after the trial is in the database.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/database/database.h"
#include "core/tuner/measure_callback.h"
#include "core/tuner/task_context.h"
#include "core/tuner/tuner.h"
#include "tune_test_util.h"

namespace mt {
namespace {

using tune_test::host;
using tune_test::quick_options;
using tune_test::TempDb;

// Keeps what it is handed, and what the database holds for each trial at that moment.
struct RecordingCallback : MeasureCallback {
  std::unique_ptr<Database> db;
  std::vector<MeasuredTrial> trials;
  std::vector<bool> committed_when_seen;
  size_t batches = 0, batch_trials = 0;
  std::set<size_t> tasks;

  void on_trial(TaskContext& task, MeasuredTrial& trial) override {
    bool committed = false;
    try {
      committed =
          trial.record_id > 0 && db->record(trial.record_id).workload_id == task.result.workload_id;
    } catch (const std::exception&) {
    }
    committed_when_seen.push_back(committed);
    trials.push_back(trial);
    tasks.insert(task.index);
  }
  void apply(TaskContext&, const std::vector<MeasuredTrial>& batch) override {
    ++batches;
    batch_trials += batch.size();
  }
};

TEST(MeasureCallback, ApplicationCallbackSeesEveryMeasuredTrial) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 6);
  auto cb = std::make_shared<RecordingCallback>();
  cb->db = Database::open(db.path);
  o.callbacks.push_back(cb);
  TuneResult r =
      tune(host(), {{"matmul(M=32,N=32,K=32)", {}, 1}, {"matmul(M=16,N=32,K=16)", {}, 1}}, o);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.trials, 6u);
  ASSERT_EQ(cb->trials.size(), r.trials);
  EXPECT_EQ(cb->batch_trials, r.trials); // each trial once more, in its batch
  EXPECT_GE(cb->batches, 2u);
  EXPECT_EQ(cb->tasks, (std::set<size_t>{0, 1}));
  for (bool c : cb->committed_when_seen)
    EXPECT_TRUE(c) << "a callback saw a trial before it was in the database";

  // The trials seen are exactly the run's records, with the times measured.
  auto d = Database::open(db.path);
  std::map<int64_t, TuningRecord> stored;
  for (const TaskResult& t : r.tasks)
    for (TuningRecord& rec : d->records(t.workload_id, r.target))
      stored.emplace(rec.id, std::move(rec));
  ASSERT_EQ(stored.size(), cb->trials.size());
  size_t failed = 0;
  for (const MeasuredTrial& trial : cb->trials) {
    auto it = stored.find(trial.record_id);
    ASSERT_NE(it, stored.end()) << "record " << trial.record_id;
    const TuningRecord& rec = it->second;
    EXPECT_EQ(rec.trace_json, trial.schedule->trace().to_json());
    EXPECT_EQ(rec.failed(), !trial.result.ok());
    failed += !trial.result.ok();
    if (!trial.result.ok()) continue;
    ASSERT_EQ(rec.run_secs.size(), trial.result.run_secs.size());
    for (size_t i = 0; i < rec.run_secs.size(); ++i)
      EXPECT_DOUBLE_EQ(rec.run_secs[i], trial.result.run_secs[i]);
    EXPECT_DOUBLE_EQ(measured_seconds(trial.result), rec.mean_secs());
  }
  EXPECT_EQ(failed, r.tasks[0].failed + r.tasks[1].failed);
}

} // namespace
} // namespace mt
