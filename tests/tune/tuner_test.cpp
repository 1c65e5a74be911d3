// The tuning loop with the real plugins of this build (standard rules, LLVM CPU target, cost
// models when built): one committed record per trial, failures included; resume up to the
// budget; warm start that never re-measures a record; the stop flag; FLOP counting; target
// resolution.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/ir/structural.h"
#include "core/measure/cold_inputs.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/trace.h"
#include "core/tuner/measure_callback.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tune_progress.h"
#include "core/tuner/tuner.h"
#include "core/workload/flop_count.h"
#include "core/workload/library.h"
#include "tune_test_util.h"

namespace mt {
namespace {

using tune_test::host;
using tune_test::quick_options;
using tune_test::TempDb;

const char* kSpec = "matmul(M=64,N=64,K=64)";

struct CountingObserver : TuneObserver {
  size_t trials = 0, failed = 0, batches = 0, finished = 0;
  size_t stop_after = 0;
  std::atomic<bool>* stop = nullptr;
  TuneProgress last;
  void on_trial(const TuneProgress& p, const MeasureResult& r) override {
    ++trials;
    failed += !r.ok();
    last = p;
    if (stop && stop_after && trials >= stop_after) stop->store(true);
  }
  void on_batch(const TuneProgress&) override { ++batches; }
  void on_finish(const TuneResult&) override { ++finished; }
};

TEST(FlopCount, MatmulIsTwoMNK) {
  EXPECT_EQ(count_flops(make_workload("matmul(M=64,N=32,K=16)")), 2.0 * 64 * 32 * 16);
  EXPECT_EQ(count_flops(make_workload("matmul(M=17,N=13,K=9)")), 2.0 * 17 * 13 * 9);
}

TEST(FlopCount, DenseCountsTheBiasBlockToo) {
  // dense: 2*M*N*K multiply-adds, then one add per output element for the bias.
  EXPECT_EQ(count_flops(make_workload("dense(M=8,N=16,K=4,bias=1,act=none)")),
            2.0 * 8 * 16 * 4 + 8 * 16);
  EXPECT_EQ(count_flops(make_workload("dense(M=8,N=16,K=4,bias=0,act=none)")), 2.0 * 8 * 16 * 4);
}

TEST(TargetSetup, LlvmMapsToTheLlvmCpuComponent) {
  TargetSetup s = setup_target(host(), "llvm");
  EXPECT_EQ(s.component, "llvm.cpu");
  EXPECT_EQ(s.target_string.rfind("llvm", 0), 0u) << s.target_string;
  EXPECT_FALSE(s.rules.empty());
  EXPECT_FALSE(s.postprocs.empty());
  EXPECT_EQ(s.mutators.size(), s.mutator_probs.size());
  EXPECT_EQ(std::get<std::string>(s.attrs.at("kind")), "llvm");
  EXPECT_GT(std::get<int64_t>(s.attrs.at("num_cores")), 0);
  // The full target string goes to the component's configuration; its own string says so.
  TargetSetup g = setup_target(host(), "llvm -mcpu=x86-64");
  EXPECT_NE(g.target_string.find("-mcpu=x86-64"), std::string::npos) << g.target_string;
  TargetSetup by_name = setup_target(host(), "llvm.cpu");
  EXPECT_EQ(by_name.target_string, s.target_string);
  EXPECT_TRUE(target_matches(s.target_string, "llvm"));
  EXPECT_FALSE(target_matches(s.target_string, "llv"));
  // A component prefix matches the component's own key, within the first word only.
  EXPECT_TRUE(target_matches("onednn.cpu", "onednn"));
  EXPECT_FALSE(target_matches("onednn.cpu", "onedn"));
  EXPECT_FALSE(target_matches("llvm -mcpu=x.y", "llvm -mcpu=x"));
  try {
    setup_target(host(), "nosuch");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("llvm.cpu"), std::string::npos) << e.what();
  }
}

TEST(TargetSetup, ShortNameDropsTheFeatureList) {
  EXPECT_EQ(short_target_name("llvm -mtriple=x86_64 -mcpu=znver3 -mattr=+avx2,+fma"),
            "llvm -mtriple=x86_64 -mcpu=znver3");
  EXPECT_EQ(short_target_name("llvm"), "llvm");
}

TEST(ProgressPrinter, PlainLinesOffATerminalEndWithTheLastState) {
  std::ostringstream out;
  ProgressPrinter p(out, /*terminal=*/false, /*period_seconds=*/1000);
  TuneProgress a;
  a.trials_total = 10;
  a.task_spec = "matmul(M=8)";
  p.on_start(a);
  a.trials_done = 3;
  a.best_gflops = 12.5;
  p.on_trial(a, MeasureResult{}); // within the period: not printed yet
  p.on_finish(TuneResult{});
  std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("[ 3/10]"), std::string::npos) << text;
  EXPECT_NE(text.find("12.50 GFLOPS"), std::string::npos) << text;
}

TEST(Tuner, CommitsOneRecordPerTrial) {
  TempDb db;
  CountingObserver obs;
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, quick_options(db.path, 8), &obs);
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.trials, 8u);
  EXPECT_EQ(obs.trials, 8u);
  EXPECT_EQ(obs.finished, 1u);
  EXPECT_GE(obs.batches, 2u);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.records_total, 8u);
  const TaskResult& t = r.tasks[0];
  EXPECT_EQ(t.spec, canonical_workload_spec(kSpec));
  EXPECT_EQ(t.flops, 2.0 * 64 * 64 * 64);
  EXPECT_LT(t.failed, 8u);
  ASSERT_TRUE(std::isfinite(t.best_seconds));
  EXPECT_GT(t.best_gflops(), 0);

  auto d = Database::open(db.path);
  std::vector<TuningRecord> recs = d->records(t.workload_id, r.target);
  ASSERT_EQ(recs.size(), 8u);
  std::set<std::string> traces;
  size_t failed = 0;
  for (const TuningRecord& rec : recs) {
    traces.insert(rec.trace_json);
    failed += rec.failed();
    EXPECT_EQ(rec.args.size(), 3u);
    EXPECT_FALSE(rec.plugins.empty());
    EXPECT_EQ(rec.seed, 1u);
    // Every record replays to a kernel of its workload.
    EXPECT_NO_THROW(replay(rec, d->workload_function(t.workload_id)));
  }
  EXPECT_EQ(failed, t.failed);
  EXPECT_EQ(traces.size(), 8u) << "a candidate was measured twice";
  std::optional<TuningRecord> best = d->best(t.workload_id, r.target);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->id, t.best_record_id);
  EXPECT_DOUBLE_EQ(best->mean_secs(), t.best_seconds);
}

// A model task's weights (TuneTask::weights) are marked in its records' args: `replay` then
// times a record with them packed, as it was timed.
TEST(Tuner, RecordsSayWhichParamsAreWeights) {
  TempDb db;
  TuneTask task{kSpec, {}, 1, {false, true, false}};
  TuneResult r = tune(host(), {task}, quick_options(db.path, 4));
  ASSERT_EQ(r.tasks.size(), 1u);
  auto d = Database::open(db.path);
  std::vector<TuningRecord> recs = d->records(r.tasks[0].workload_id, r.target);
  ASSERT_EQ(recs.size(), 4u);
  for (const TuningRecord& rec : recs) {
    ASSERT_EQ(rec.args.size(), 3u);
    EXPECT_FALSE(rec.args[0].weight);
    EXPECT_TRUE(rec.args[1].weight);
    EXPECT_FALSE(rec.args[2].weight);
  }
}

// Where the run's time went: the setup, the search, the measuring (whose candidates' turns on
// the device come one at a time, so they fit inside it), the model updates and the final
// checks -- all within the run.
TEST(Tuner, TheTimeSplitAccountsForTheRun) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 8);
  o.verify.top = 2;
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, o);
  ASSERT_EQ(r.tasks.size(), 1u);
  const TaskResult::Time& t = r.tasks[0].time;
  EXPECT_GT(t.search, 0);
  EXPECT_GT(t.measuring, 0);
  EXPECT_GT(t.builds, 0);
  EXPECT_GT(t.runs, 0);
  EXPECT_GE(t.updates, 0);
  EXPECT_GT(t.setup, 0);
  EXPECT_GT(t.checks, 0); // the fastest records are measured again
  EXPECT_LE(t.runs, t.measuring);
  EXPECT_LE(t.setup + t.search + t.measuring + t.updates + t.checks, r.tuning_seconds);
}

// The unscheduled workload is a candidate of every task (measured once, in the first batch,
// checked against the reference like any other), so the best the tuner hands back is never
// slower than the untuned program.
TEST(Tuner, UnscheduledWorkloadIsACandidateSoTheBestIsNeverSlower) {
  TempDb db;
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, quick_options(db.path, 6));
  const TaskResult& t = r.tasks.at(0);
  auto d = Database::open(db.path);
  std::vector<TuningRecord> recs = d->records(t.workload_id, r.target);
  ASSERT_EQ(recs.size(), 6u);
  auto unscheduled = [](const TuningRecord& rec) {
    return Trace::from_json(rec.trace_json).size() == 0;
  };
  EXPECT_TRUE(unscheduled(*std::min_element(
      recs.begin(), recs.end(), [](const auto& a, const auto& b) { return a.id < b.id; })))
      << "the first trial is the unscheduled workload";
  size_t n = 0;
  for (const TuningRecord& rec : recs)
    if (unscheduled(rec)) {
      ++n;
      ASSERT_FALSE(rec.failed()) << rec.error;
      EXPECT_LE(t.best_seconds, rec.mean_secs());
      // It replays to the workload itself.
      Function f = replay(rec, d->workload_function(t.workload_id));
      EXPECT_TRUE(structural_equal(f, make_workload(t.spec)));
    }
  EXPECT_EQ(n, 1u);
  // Resumed: the stored one counts, it is not measured again.
  TuneResult more = tune(host(), {{kSpec, {}, 1}}, quick_options(db.path, 9));
  EXPECT_EQ(more.trials, 3u);
  n = 0;
  for (const TuningRecord& rec : Database::open(db.path)->records(t.workload_id, r.target))
    n += unscheduled(rec);
  EXPECT_EQ(n, 1u);
  // A budget of one trial per task measures only it.
  TempDb db1;
  TuneOptions o1 = quick_options(db1.path, 2);
  o1.per_task_cap = 1;
  TuneResult one = tune(host(), {{kSpec, {}, 1}, {"matmul(M=32,N=32,K=32)", {}, 1}}, o1);
  auto d1 = Database::open(db1.path);
  for (const TaskResult& task : one.tasks) {
    std::vector<TuningRecord> only = d1->records(task.workload_id, one.target);
    ASSERT_EQ(only.size(), 1u) << task.spec;
    EXPECT_TRUE(unscheduled(only[0]));
  }
}

// A large task's reference is run by the tuning target with the outer loops parallel, and
// that schedule is the task's baseline candidate: the reference run's time is its record's,
// it is not run a second time, and a resumed run does not offer it again.
TEST(Tuner, LargeTaskBaselineIsItsParallelReferenceRun) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 3);
  o.reference_by_target_flops = 0;      // every task's reference by llvm
  o.reference_run_as_trial_seconds = 0; // and taken as the trial however short
  o.reference_cache_dir.clear();
  // A measured trial was built in its worker (build_seconds > 0); the reference's is not.
  // The baseline samples nothing: its trace is lookups and parallel only.
  auto baseline = [](const std::string& trace_json) {
    return trace_json.find("parallel") != std::string::npos &&
           trace_json.find("sample_") == std::string::npos;
  };
  struct Builds : MeasureCallback {
    std::vector<std::pair<std::string, double>> seen; // trace, build seconds
    void on_trial(TaskContext&, MeasuredTrial& t) override {
      seen.emplace_back(t.schedule->trace().to_json(), t.result.build_seconds);
    }
  };
  auto builds = std::make_shared<Builds>();
  o.callbacks = {builds};
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, o);
  ASSERT_EQ(builds->seen.size(), 3u);
  for (const auto& [trace, build] : builds->seen)
    if (baseline(trace))
      EXPECT_EQ(build, 0.0) << "the baseline was built again";
    else
      EXPECT_GT(build, 0.0);
  auto d = Database::open(db.path);
  size_t n = 0;
  for (const TuningRecord& rec : d->records(r.tasks.at(0).workload_id, r.target)) {
    if (!baseline(rec.trace_json)) continue;
    ++n;
    ASSERT_EQ(rec.run_secs.size(), 1u);
    EXPECT_GT(rec.run_secs[0], 0);
    EXPECT_LT(rec.run_secs[0], 60);
  }
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(r.trials, 3u);
  // Resumed: not offered again.
  o.trials = 5;
  TuneResult more = tune(host(), {{kSpec, {}, 1}}, o);
  EXPECT_EQ(more.trials, 2u);
  n = 0;
  for (const TuningRecord& rec : d->records(r.tasks.at(0).workload_id, r.target))
    n += baseline(rec.trace_json);
  EXPECT_EQ(n, 1u);
}

// How many records are measured again follows the task's successful records: one per ten, at
// least one, at most --verify-top (a 6-record task of a model is not checked five times over).
TEST(Tuner, TheRecordsMeasuredAgainFollowTheTasksRecords) {
  VerifyOptions o; // top 5, one per 10
  EXPECT_EQ(records_to_verify(0, o), 0u);
  EXPECT_EQ(records_to_verify(1, o), 1u);
  EXPECT_EQ(records_to_verify(6, o), 1u);
  EXPECT_EQ(records_to_verify(10, o), 1u);
  EXPECT_EQ(records_to_verify(11, o), 2u);
  EXPECT_EQ(records_to_verify(54, o), 5u);
  EXPECT_EQ(records_to_verify(1000, o), 5u);
  o.records_per_verified = 1;
  EXPECT_EQ(records_to_verify(3, o), 3u);
  EXPECT_EQ(records_to_verify(6, o), 5u);
  o.records_per_verified = 0; // read as 1
  EXPECT_EQ(records_to_verify(6, o), 5u);
  o.top = 0;
  EXPECT_EQ(records_to_verify(100, o), 0u);
}

// At the end the fastest records are measured again in fresh workers: the reported best is
// one of them at its median, and their new times are in the database next to the old ones.
TEST(Tuner, FastestRecordsAreMeasuredAgainBeforeOneIsCalledBest) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 8);
  o.verify.top = 3;
  o.verify.rounds = 2;
  o.verify.records_per_verified = 1; // all three, whatever the task's record count
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, o);
  const TaskResult& t = r.tasks.at(0);
  ASSERT_TRUE(std::isfinite(t.best_seconds));
  auto d = Database::open(db.path);
  std::vector<TuningRecord> recs = d->records(t.workload_id, r.target);
  size_t ok = 0;
  for (const TuningRecord& rec : recs)
    ok += !rec.failed();
  // The three fastest at least; more when re-measured ones fell behind others.
  EXPECT_GE(t.verified, std::min<size_t>(3, ok));
  ASSERT_GT(t.verified, 0u);
  EXPECT_TRUE(std::isfinite(t.recorded_best_seconds));
  // quick_options measure one repeat per worker: a re-measured record has 1 + 2 times.
  size_t remeasured = 0;
  bool best_is_remeasured = false;
  for (const TuningRecord& rec : recs) {
    if (rec.run_secs.size() == 3) {
      ++remeasured;
      best_is_remeasured = best_is_remeasured || rec.id == t.best_record_id;
    } else if (!rec.failed()) {
      EXPECT_EQ(rec.run_secs.size(), 1u);
    }
  }
  EXPECT_EQ(remeasured, t.verified);
  EXPECT_TRUE(best_is_remeasured);
  // The reported best is the database's best after the new times: one figure everywhere.
  std::optional<TuningRecord> best = d->best(t.workload_id, r.target);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->id, t.best_record_id);
  EXPECT_DOUBLE_EQ(best->mean_secs(), t.best_seconds);
}

// Records whose single times are impossibly fast (lucky measurements, exaggerated) take the
// top one after another as each is measured again and falls back. Six of them outlast the
// ordinary passes; the best named must still be a record measured again, never a lone time.
TEST(Tuner, TheBestNamedIsMeasuredAgainEvenWhenNewcomersKeepTakingTheTop) {
  TempDb db;
  // More trials than the six records it needs: on a loaded machine a trial may fail.
  TuneOptions o = quick_options(db.path, 10);
  TuneResult first = tune(host(), {{kSpec, {}, 1}}, o);
  const int64_t wid = first.tasks.at(0).workload_id;
  std::vector<TuningRecord> lucky;
  size_t stored = 0;
  {
    auto d = Database::open(db.path);
    for (const TuningRecord& rec : d->records(wid, first.target))
      if (!rec.failed() && lucky.size() < 6) {
        TuningRecord copy = rec;
        copy.id = 0;
        copy.created_at_ms = 0;
        copy.run_secs = {1e-12 * static_cast<double>(lucky.size() + 1)};
        copy.id = d->commit_record(copy);
        lucky.push_back(copy);
      }
    stored = d->records(wid, first.target).size();
  }
  ASSERT_EQ(lucky.size(), 6u);
  o.trials = stored + 1; // one trial more, then the re-measurement
  o.verify.top = 1;
  o.verify.rounds = 1;
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, o);
  const TaskResult& t = r.tasks.at(0);
  ASSERT_NE(t.best_record_id, 0);
  EXPECT_GE(t.verified, lucky.size());
  auto d = Database::open(db.path);
  std::optional<TuningRecord> best = d->best(wid, r.target);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->id, t.best_record_id);
  EXPECT_GT(best->run_secs.size(), 1u); // its lone time and the new one
  for (const TuningRecord& l : lucky)
    for (const TuningRecord& rec : d->records(wid, r.target))
      if (rec.id == l.id) {
        EXPECT_EQ(rec.run_secs.size(), 2u) << "record " << l.id;
      }
}

TEST(Tuner, FailedTrialsAreCommittedWithTheirError) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 4);
  // No candidate builds this fast (a run of a 64^3 matmul may: it can answer within the
  // measurer's first poll): every trial fails, and each is still a record.
  o.measure.build_timeout_s = 1e-6;
  CountingObserver obs;
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, o, &obs);
  EXPECT_EQ(r.trials, 4u);
  EXPECT_EQ(obs.failed, 4u);
  EXPECT_EQ(r.tasks[0].failed, 4u);
  EXPECT_FALSE(std::isfinite(r.tasks[0].best_seconds));
  EXPECT_EQ(r.best_gflops(), 0);
  auto d = Database::open(db.path);
  std::vector<TuningRecord> recs = d->records(r.tasks[0].workload_id);
  ASSERT_EQ(recs.size(), 4u);
  for (const TuningRecord& rec : recs) {
    EXPECT_TRUE(rec.failed());
    EXPECT_FALSE(rec.error.empty());
  }
}

TEST(Tuner, ResumesToTheBudgetAndWarmStarts) {
  TempDb db;
  TuneResult first = tune(host(), {{kSpec, {}, 1}}, quick_options(db.path, 6));
  EXPECT_EQ(first.trials, 6u);
  // The same budget again: nothing left to do.
  TuneResult again = tune(host(), {{kSpec, {}, 1}}, quick_options(db.path, 6));
  EXPECT_EQ(again.trials, 0u);
  EXPECT_EQ(again.tasks[0].prior_records, 6u);
  EXPECT_EQ(again.tasks[0].best_seconds, first.tasks[0].best_seconds);
  // A larger budget: only the difference, and never a candidate measured before.
  TuneResult more = tune(host(), {{kSpec, {}, 1}}, quick_options(db.path, 11));
  EXPECT_EQ(more.trials, 5u);
  EXPECT_EQ(more.records_total, 11u);
  EXPECT_LE(more.tasks[0].best_seconds, first.tasks[0].best_seconds);
  auto d = Database::open(db.path);
  std::set<std::string> traces;
  for (const TuningRecord& rec : d->records(more.tasks[0].workload_id))
    traces.insert(rec.trace_json);
  EXPECT_EQ(traces.size(), 11u) << "a warm-started run re-measured a record";
}

TEST(Tuner, PerTaskCapCountsStoredRecords) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 100);
  o.per_task_cap = 3;
  TuneResult r = tune(host(), {{kSpec, {}, 1}, {"matmul(M=32,N=32,K=32)", {}, 2}}, o);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].trials, 3u);
  EXPECT_EQ(r.tasks[1].trials, 3u);
  EXPECT_EQ(r.trials, 6u);
  // Weighted latency of the set: the second task counts twice.
  EXPECT_DOUBLE_EQ(r.best_seconds(), r.tasks[0].best_seconds + 2 * r.tasks[1].best_seconds);
  o.per_task_cap = 4;
  TuneResult r2 = tune(host(), {{kSpec, {}, 1}, {"matmul(M=32,N=32,K=32)", {}, 2}}, o);
  EXPECT_EQ(r2.tasks[0].trials, 1u);
  EXPECT_EQ(r2.tasks[1].trials, 1u);
}

// One cost model for the run: trained on the measurements of both tasks (each labelled by its
// workload), where a model per task has only its own task's.
TEST(Tuner, OneCostModelLearnsFromEveryTask) {
  if (!host().find(ComponentKind::CostModel, "cost.XGBoost"))
    GTEST_SKIP() << "cost.XGBoost not built";
  auto read_model = [](const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in) << path;
    return in ? nlohmann::json::parse(in) : nlohmann::json::object();
  };
  const std::vector<TuneTask> two{{kSpec, {}, 1}, {"matmul(M=32,N=32,K=32)", {}, 1}};
  for (bool per_task : {false, true}) {
    SCOPED_TRACE(per_task ? "a model per task" : "one model");
    TempDb db;
    const std::string model = db.path + ".model";
    TuneOptions o = quick_options(db.path, 24);
    o.cost_model = "cost.XGBoost";
    o.cost_model_path = model;
    o.cost_model_per_task = per_task;
    TuneResult r = tune(host(), two, o);
    ASSERT_EQ(r.trials, 24u);
    std::vector<std::string> files =
        per_task ? std::vector<std::string>{model + ".0", model + ".1"} : std::vector{model};
    EXPECT_EQ(std::filesystem::exists(model), !per_task);
    for (size_t i = 0; i < files.size(); ++i) {
      nlohmann::json j = read_model(files[i]);
      EXPECT_EQ(j["groups"].size(), per_task ? 1u : 2u) << files[i];
      EXPECT_EQ(j["samples"].size(), per_task ? r.tasks[i].trials : 24u) << files[i];
      // The one model was last trained after the last batch (16, 20, 24: retrain_growth 0.2).
      if (!per_task) {
        EXPECT_EQ(j["trained_on"].get<size_t>(), 24u);
      }
      std::filesystem::remove(files[i]);
    }
  }
}

TEST(Tuner, StopFlagEndsCleanlyKeepingRecords) {
  TempDb db;
  std::atomic<bool> stop{false};
  CountingObserver obs;
  obs.stop = &stop;
  obs.stop_after = 2;
  TuneOptions o = quick_options(db.path, 200);
  o.batch_size = 64;
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, o, &obs, &stop);
  EXPECT_TRUE(r.interrupted);
  EXPECT_GE(r.trials, 2u);
  EXPECT_LT(r.trials, 200u);
  EXPECT_EQ(r.records_total, r.trials);
  EXPECT_EQ(obs.finished, 1u);
  auto d = Database::open(db.path);
  EXPECT_EQ(d->record_count(r.tasks[0].workload_id), r.trials);
}

// A space smaller than the budget: the first run measures all of it, and a second run asking
// for more finds nothing new to propose -- every sample valid and already in the database.
// That ends like a completed run (with a warning naming the task), not with "every sample was
// refused", which is for a search whose samples all failed.
TEST(Tuner, AResumedRunOverAnExhaustedSpaceIsNoError) {
  TempDb db;
  const std::vector<TuneTask> tiny{{"elementwise(M=8,N=16)", {}, 1}};
  TuneResult first = tune(host(), tiny, quick_options(db.path, 200));
  ASSERT_TRUE(first.tasks[0].exhausted);
  ASSERT_GT(first.trials, 0u);
  ASSERT_LT(first.trials, 200u);
  TuneResult again;
  ASSERT_NO_THROW(again = tune(host(), tiny, quick_options(db.path, 400)));
  EXPECT_EQ(again.trials, 0u);
  EXPECT_TRUE(again.tasks[0].exhausted);
  EXPECT_EQ(again.tasks[0].prior_records, first.trials);
  EXPECT_EQ(again.tasks[0].best_seconds, first.tasks[0].best_seconds);
}

TEST(Tuner, EverySampleRefusedEndsWithTheSearchDiagnosis) {
  // A real postprocessor that refuses every candidate of a CPU workload: VerifyGPUCode with a
  // limit of 0 threads per block (a CPU kernel runs as one "thread").
  TempDb db;
  TuneOptions o = quick_options(db.path, 8);
  o.space = {parse_space_edit(ComponentKind::Postproc,
                              "std.VerifyGPUCode{\"max_threads_per_block\": 0}",
                              {SpaceSource::Option, "test"})};
  auto t0 = std::chrono::steady_clock::now();
  try {
    tune(host(), {{kSpec, {}, 1}}, o);
    FAIL() << "no TuneError";
  } catch (const TuneError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("every sample was refused"), std::string::npos) << msg;
    EXPECT_NE(msg.find("postproc std.VerifyGPUCode"), std::string::npos) << msg;
    EXPECT_NE(msg.find("threads per block (limit 0)"), std::string::npos) << msg;
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60);
  EXPECT_EQ(Database::open(db.path)->record_count(), 0u);
  // An unknown postprocessor is a bad option, named in the message.
  o.space = {parse_space_edit(ComponentKind::Postproc, "std.NoSuchPostproc",
                              {SpaceSource::Option, "test"})};
  try {
    tune(host(), {{kSpec, {}, 1}}, o);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("std.NoSuchPostproc"), std::string::npos) << e.what();
  }
}

// With a small budget the cost model must get to pick most of the trials: one batch of 64 in a
// 64-trial run would all be random samples.
TEST(AutoBatchSize, AboutFourBatchesPerTaskBetween16And64) {
  EXPECT_EQ(auto_batch_size(64, 1), 16u);
  EXPECT_EQ(auto_batch_size(128, 1), 32u);
  EXPECT_EQ(auto_batch_size(100, 1), 32u); // a quarter (25) rounded up to a multiple of 8
  EXPECT_EQ(auto_batch_size(300, 1), 64u);
  EXPECT_EQ(auto_batch_size(10000, 1), 64u);
  EXPECT_EQ(auto_batch_size(500, 12), 16u); // a model: 41 trials per task
  EXPECT_EQ(auto_batch_size(4, 1), 16u);
  EXPECT_EQ(auto_batch_size(0, 0), 16u);
}

TEST(Tuner, BatchSizeZeroMeasuresTheAutomaticBatches) {
  TempDb db;
  CountingObserver obs;
  TuneOptions o = quick_options(db.path, 32);
  o.batch_size = 0;
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, o, &obs);
  EXPECT_EQ(r.trials, 32u);
  EXPECT_EQ(obs.batches, 2u) << "32 trials in batches of auto_batch_size(32, 1) = 16";
}

// A model's memory-bound task (a matrix-vector product, 0.5 flops per input byte) is timed on
// cold inputs, its matrix product (16) hot; the database keeps the run's policy.
TEST(Tuner, AModelsMemoryBoundTasksAreTimedOnColdInputs) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 8);
  o.model_tasks = true; // cold_inputs "auto"
  o.measure.cold_inputs_bytes = 4 << 20;
  const std::string gemv = "dense(M=1,N=256,K=256,bias=0,act=none)";
  TuneResult r = tune(host(), {{gemv, {}, 1}, {kSpec, {}, 1}}, o);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_TRUE(r.tasks[0].cold_inputs);
  EXPECT_FALSE(r.tasks[1].cold_inputs);
  for (const TaskResult& t : r.tasks)
    EXPECT_TRUE(std::isfinite(t.best_seconds)) << t.spec;
  EXPECT_EQ(Database::open(db.path)->setting(kMeasuredInputs), "memory-bound");
}

// Hot and cold times of one kernel do not compare: a run whose policy is not the database's
// fails before it measures anything, naming the way out; the database's own policy goes on.
// A database from before the setting (records, no setting) holds hot times.
TEST(Tuner, ADatabaseKeepsOnePolicyOfColdInputs) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 4);
  tune(host(), {{kSpec, {}, 1}}, o); // workloads alone: "off"
  EXPECT_EQ(Database::open(db.path)->setting(kMeasuredInputs), "off");
  const size_t before = Database::open(db.path)->record_count();
  o.trials = 8;
  o.model_tasks = true; // auto: "memory-bound" for a new database
  o.cold_inputs = "memory-bound";
  try {
    tune(host(), {{kSpec, {}, 1}}, o);
    ADD_FAILURE() << "tuned into a database of another policy";
  } catch (const TuneError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("'off'"), std::string::npos) << what;
    EXPECT_NE(what.find("'memory-bound'"), std::string::npos) << what;
    EXPECT_NE(what.find("--cold-inputs off"), std::string::npos) << what;
  }
  EXPECT_EQ(Database::open(db.path)->record_count(), before);
  // auto continues the database the way it was timed: a model's tasks into a database of
  // workloads, hot.
  o.cold_inputs = "auto";
  TuneResult r = tune(host(), {{kSpec, {}, 1}}, o);
  EXPECT_EQ(r.records_total, 8u);
  EXPECT_FALSE(r.tasks.at(0).cold_inputs);
  EXPECT_EQ(Database::open(db.path)->setting(kMeasuredInputs), "off");

  // Without the setting (a database or JSON-lines file of before it existed), the records are
  // hot times.
  TempDb imported("_imported");
  std::stringstream lines;
  Database::open(db.path)->export_jsonl(lines);
  std::stringstream without_setting;
  for (std::string l; std::getline(lines, l);)
    if (l.find(R"("type":"setting")") == std::string::npos) without_setting << l << "\n";
  Database::open(imported.path)->import_jsonl(without_setting);
  // An empty database takes the hot records' setting with them.
  EXPECT_EQ(Database::open(imported.path)->setting(kMeasuredInputs), "off");
  o.db_path = imported.path;
  o.cold_inputs = "on";
  EXPECT_THROW(tune(host(), {{kSpec, {}, 1}}, o), TuneError);
  o.cold_inputs = "off";
  EXPECT_NO_THROW(tune(host(), {{kSpec, {}, 1}}, o));
}

TEST(Tuner, RejectsBadOptions) {
  TempDb db;
  TuneOptions o = quick_options(db.path, 4);
  o.strategy = "annealing";
  EXPECT_THROW(tune(host(), {{kSpec, {}, 1}}, o), std::invalid_argument);
  o = quick_options("", 4);
  EXPECT_THROW(tune(host(), {{kSpec, {}, 1}}, o), std::invalid_argument);
  o = quick_options(db.path, 4);
  EXPECT_THROW(tune(host(), {{"matmul(Q=1)", {}, 1}}, o), std::invalid_argument);
  o.cold_inputs = "lukewarm";
  EXPECT_THROW(tune(host(), {{kSpec, {}, 1}}, o), std::invalid_argument);
}

} // namespace
} // namespace mt
