// Library implementations (the oneDNN target) as tuning candidates, with the real plugins of
// this build: measured once per workload through the measurer and filed under the library's
// own target key with the unscheduled trace; not offered (no record, no error) for a workload
// the library does not implement; never re-measured by a later run; the faster implementation
// is chosen; the side-by-side comparison at the end; the library record replays and builds.
// Skipped when the onednn_cpu plugin is not built (no oneDNN on this machine).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/database/database.h"
#include "core/measure/library_candidate.h"
#include "core/measure/measure.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/schedule.h"
#include "core/tuner/tuner.h"
#include "core/workload/library.h"
#include "tune_test_util.h"

namespace mt {
namespace {

using tune_test::host;
using tune_test::quick_options;
using tune_test::TempDb;

const char* kLib = "onednn.cpu";
const char* kMatmul = "matmul(M=64,N=64,K=64)";
// rmsnorm is no oneDNN primitive (docs/onednn.md): the target refuses it.
const char* kRmsnorm = "rmsnorm(M=4,N=32)";

#define REQUIRE_ONEDNN()                                                                           \
  if (!host().find(ComponentKind::Target, kLib))                                                   \
  GTEST_SKIP() << "the onednn_cpu plugin is not built here (no oneDNN)"

TuneOptions library_options(const std::string& db, size_t trials) {
  TuneOptions o = quick_options(db, trials);
  o.library_targets = {kLib};
  return o;
}

TEST(LibraryCandidate, RecordedOnceUnderItsOwnTargetKey) {
  REQUIRE_ONEDNN();
  TempDb db;
  TuneResult r = tune(host(), {{kMatmul, {}, 1}}, library_options(db.path, 4));
  ASSERT_EQ(r.tasks.size(), 1u);
  const TaskResult& t = r.tasks[0];
  // Not a trial: the budget counts the tuning target's records only.
  EXPECT_EQ(r.trials, 4u);
  EXPECT_EQ(r.records_total, 4u);
  EXPECT_EQ(t.library_measured, 1u);
  EXPECT_EQ(t.library_target, kLib);
  EXPECT_EQ(t.library_component, kLib);
  ASSERT_TRUE(std::isfinite(t.library_seconds));
  EXPECT_GT(t.library_gflops(), 0);

  auto d = Database::open(db.path);
  std::vector<TuningRecord> lib = d->records(t.workload_id, kLib);
  ASSERT_EQ(lib.size(), 1u);
  const TuningRecord& rec = lib[0];
  EXPECT_EQ(rec.id, t.library_record_id);
  EXPECT_FALSE(rec.failed()) << rec.error;
  EXPECT_DOUBLE_EQ(rec.mean_secs(), t.library_seconds);
  Function workload = d->workload_function(t.workload_id);
  EXPECT_EQ(rec.trace_json, Schedule(workload).trace().to_json());
  ASSERT_EQ(rec.plugins.size(), 1u);
  EXPECT_EQ(rec.plugins[0].name, "onednn_cpu");
  EXPECT_EQ(rec.args.size(), 3u);
  EXPECT_EQ(d->records(t.workload_id, r.target).size(), 4u);

  // The faster of the two is chosen, on the records (no comparison asked for).
  EXPECT_FALSE(t.compared());
  EXPECT_EQ(t.chosen, t.library_seconds < t.best_seconds ? kLib : r.target_component);
  EXPECT_NEAR(t.ratio_to_library(), t.library_seconds / t.best_seconds, 1e-9);

  // A later run (larger budget) uses the stored record and measures no library candidate.
  TuneResult again = tune(host(), {{kMatmul, {}, 1}}, library_options(db.path, 6));
  EXPECT_EQ(again.trials, 2u);
  EXPECT_EQ(again.tasks[0].library_measured, 0u);
  EXPECT_EQ(again.tasks[0].library_record_id, t.library_record_id);
  EXPECT_EQ(again.tasks[0].library_seconds, t.library_seconds);
  // So does a run with nothing left to tune.
  TuneResult none = tune(host(), {{kMatmul, {}, 1}}, library_options(db.path, 6));
  EXPECT_EQ(none.trials, 0u);
  EXPECT_EQ(none.tasks[0].library_measured, 0u);
  EXPECT_EQ(none.tasks[0].library_record_id, t.library_record_id);
  EXPECT_EQ(Database::open(db.path)->records(t.workload_id, kLib).size(), 1u);
}

TEST(LibraryCandidate, NotOfferedForAWorkloadTheLibraryDoesNotImplement) {
  REQUIRE_ONEDNN();
  TempDb db;
  TuneResult r = tune(host(), {{kRmsnorm, {}, 1}}, library_options(db.path, 2));
  ASSERT_EQ(r.tasks.size(), 1u);
  const TaskResult& t = r.tasks[0];
  EXPECT_EQ(r.trials, 2u);
  EXPECT_EQ(t.library_measured, 0u);
  EXPECT_TRUE(t.library_target.empty());
  EXPECT_FALSE(std::isfinite(t.library_seconds));
  EXPECT_EQ(t.ratio_to_library(), 0);
  EXPECT_EQ(t.chosen, r.target_component);
  auto d = Database::open(db.path);
  EXPECT_EQ(d->records(t.workload_id, kLib).size(), 0u);
  EXPECT_EQ(d->records(t.workload_id).size(), 2u);
}

TEST(LibraryCandidate, NoLibraryTargetsNoLibraryRecords) {
  REQUIRE_ONEDNN();
  TempDb db;
  TuneResult r = tune(host(), {{kMatmul, {}, 1}}, quick_options(db.path, 2));
  EXPECT_TRUE(r.tasks[0].library_target.empty());
  EXPECT_EQ(Database::open(db.path)->records(r.tasks[0].workload_id, kLib).size(), 0u);
}

// The side-by-side times join both records, and the choice is made on the records' means:
// the same figures `metatune best` and a model's `best` kernels read afterwards.
TEST(LibraryCandidate, SideBySideTimesJoinTheRecordsTheChoiceReads) {
  REQUIRE_ONEDNN();
  TempDb db;
  TuneOptions o = library_options(db.path, 4);
  o.compare = true;
  o.compare_repeats = 3;
  TuneResult r = tune(host(), {{kMatmul, {}, 1}}, o);
  const TaskResult& t = r.tasks[0];
  ASSERT_TRUE(t.compared()) << t.compare_error;
  EXPECT_GT(t.compare_tuned_seconds, 0);
  EXPECT_GT(t.compare_library_seconds, 0);
  auto d = Database::open(db.path);
  TuningRecord lib = d->record(t.library_record_id);
  EXPECT_EQ(lib.run_secs.size(), 1u + 3u) << "its own measurement and the three side by side";
  std::optional<TuningRecord> best = d->best(t.workload_id, r.target);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->id, t.best_record_id);
  EXPECT_DOUBLE_EQ(t.best_seconds, best->mean_secs());
  EXPECT_DOUBLE_EQ(t.library_seconds, lib.mean_secs());
  EXPECT_EQ(t.chosen, lib.mean_secs() < best->mean_secs() ? kLib : r.target_component);
  EXPECT_NEAR(t.ratio_to_library(), lib.mean_secs() / best->mean_secs(), 1e-9);
  EXPECT_NEAR(t.tuned_gflops(), t.flops / best->mean_secs() * 1e-9, 1e-9);
}

// The side-by-side times join the best record's, which can leave a record never measured again
// the fastest in the database; that one is then measured again too, so the best a model's
// tuned kernels take (the database's) is never a single lucky time.
TEST(LibraryCandidate, TheBestAfterTheComparisonIsARecordMeasuredAgain) {
  REQUIRE_ONEDNN();
  for (uint64_t seed : {1u, 2u, 3u}) {
    TempDb db;
    TuneOptions o = library_options(db.path, 10);
    o.seed = seed;
    o.compare = true;
    o.compare_repeats = 3;
    o.verify.top = 1;
    o.verify.rounds = 1;
    TuneResult r = tune(host(), {{kMatmul, {}, 1}}, o);
    const TaskResult& t = r.tasks[0];
    ASSERT_TRUE(t.compared()) << t.compare_error;
    auto d = Database::open(db.path);
    std::optional<TuningRecord> best = d->best(t.workload_id, r.target);
    ASSERT_TRUE(best);
    EXPECT_EQ(best->id, t.best_record_id) << "seed " << seed;
    // quick options time one repeat: a record measured once has one time.
    EXPECT_GT(best->run_secs.size(), 1u) << "seed " << seed << ": record " << best->id;
  }
}

TEST(LibraryCandidate, LibraryRecordReplaysAndBuildsWithTheLibraryTarget) {
  REQUIRE_ONEDNN();
  TempDb db;
  TuneResult r = tune(host(), {{kMatmul, {}, 1}}, library_options(db.path, 1));
  auto d = Database::open(db.path);
  TuningRecord rec = d->record(r.tasks[0].library_record_id);
  Function workload = d->workload_function(rec.workload_id);
  Function replayed = replay(rec, workload);
  std::unique_ptr<PluginTarget> lib = host().create_target(rec.target);
  Measurer m(*lib, quick_options(db.path, 1).measure);
  MeasureResult res = m.measure(Reference::compute(workload), {replayed}).at(0);
  EXPECT_TRUE(res.ok()) << to_string(res.status) << ": " << res.error;
}

// The target's MT_ERROR_UNSUPPORTED crosses the worker boundary as a status of its own (in a
// worker process and in this one alike); the error text plays no part.
TEST(LibraryCandidate, UnsupportedBuildIsRecognised) {
  REQUIRE_ONEDNN();
  std::unique_ptr<PluginTarget> lib = host().create_target(kLib);
  Function f = make_workload(canonical_workload_spec(kRmsnorm));
  Reference ref = Reference::compute(f);
  for (bool isolate : {true, false}) {
    MeasureOptions o = quick_options("", 1).measure;
    o.isolate = isolate;
    Measurer m(*lib, o);
    MeasureResult res = m.measure(ref, {f}).at(0);
    EXPECT_EQ(res.status, MeasureStatus::Unsupported) << res.error;
    EXPECT_TRUE(is_unsupported(res)) << res.error;
    EXPECT_FALSE(res.error.empty());
  }
  MeasureResult other;
  other.status = MeasureStatus::BuildError;
  other.error = "onednn.cpu: build failed (unsupported)"; // words alone do not count
  EXPECT_FALSE(is_unsupported(other));
}

} // namespace
} // namespace mt
