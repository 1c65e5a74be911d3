// Tuning database: commit and reload, ranking, failed trials, JSON-lines round trip, several
// writers at once (threads and processes), a writer killed mid-commit, and files that are
// corrupted or not metatune databases at all.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/ir/structural.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/database/database.h"
#include "core/workload/library.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSpec = "matmul(M=32,N=24,K=16)";
constexpr const char* kMeasuredInputsKey = "measured_inputs";

// A fresh directory per test, removed afterwards.
class DatabaseTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("mt_db_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "tune.db") const { return (dir_ / name).string(); }

  fs::path dir_;
};

// The schedule of a record: the i loop split with outer factor `outer` (a divisor of 32).
Schedule schedule_for(const Function& f, int64_t outer) {
  Schedule sch(f, 3);
  BlockRV b = sch.get_block("matmul");
  auto loops = sch.get_loops(b);
  auto tiles = sch.sample_perfect_tile(loops[0], 2, 64, std::vector<int64_t>{outer, 32 / outer});
  sch.split(loops[0], {tiles[0], tiles[1]});
  return sch;
}

std::string trace_for(const Function& f, int64_t outer) {
  return schedule_for(f, outer).trace().to_json();
}

TuningRecord make_record(const Function& f, int64_t workload_id, const std::string& target,
                         std::vector<double> secs, int64_t outer = 4, uint64_t seed = 1) {
  TuningRecord r;
  r.workload_id = workload_id;
  r.target = target;
  r.trace_json = trace_for(f, outer);
  r.run_secs = std::move(secs);
  r.args = arg_info_of(f);
  r.seed = seed;
  r.plugins = {{"std_rules", "0.1.0"}, {"llvm_cpu", "0.1.0+llvm16"}};
  return r;
}

std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

void expect_same_record(const TuningRecord& a, const TuningRecord& b) {
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(Trace::from_json(a.trace_json).to_json(), Trace::from_json(b.trace_json).to_json());
  EXPECT_EQ(a.run_secs, b.run_secs);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.args, b.args);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.plugins, b.plugins);
  EXPECT_EQ(a.created_at_ms, b.created_at_ms);
}

TEST_F(DatabaseTest, CommitAndReload) {
  Function f = make_workload(kSpec);
  std::vector<TuningRecord> committed;
  int64_t wid = 0;
  {
    auto db = Database::open(path());
    wid = db->commit_workload(f, canonical_workload_spec(kSpec));
    for (int64_t outer : {1, 2, 4}) {
      TuningRecord r = make_record(f, wid, "llvm", {1e-3 * outer, 1.1e-3 * outer}, outer, outer);
      r.created_at_ms = 1700000000000 + outer;
      r.args[1].weight = outer == 2; // timed with that param packed (a model's weight)
      r.id = db->commit_record(r);
      committed.push_back(r);
    }
  }
  auto db = Database::open(path());
  EXPECT_TRUE(db->has_workload(structural_hash(f)));
  auto w = db->find_workload(make_workload(kSpec)); // a new, structurally equal function
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->id, wid);
  EXPECT_EQ(w->spec, canonical_workload_spec(kSpec));
  EXPECT_EQ(w->hash, structural_hash(f));
  EXPECT_EQ(hash_to_hex(w->hash).size(), 16u);
  EXPECT_TRUE(structural_equal(db->workload_function(wid), f));

  auto all = db->records(wid);
  ASSERT_EQ(all.size(), 3u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].id, committed[i].id);
    expect_same_record(all[i], committed[i]);
    EXPECT_NE(all[i].source.find(path()), std::string::npos);
  }
  // The stored trace replays to the schedule that produced it.
  Function replayed = replay(all[1], f);
  EXPECT_TRUE(structural_equal(replayed, schedule_for(f, 2).func()));
  EXPECT_FALSE(structural_equal(replayed, f));
  EXPECT_TRUE(db->check().empty());
}

TEST_F(DatabaseTest, WorkloadIsSharedAcrossModelsAndSpecIsFilledIn) {
  auto db = Database::open(path());
  Function f = make_workload(kSpec);
  int64_t a = db->commit_workload(f); // seen first inside some model, spec unknown
  EXPECT_EQ(db->workload(a)->spec, "");
  int64_t b = db->commit_workload(make_workload(kSpec), canonical_workload_spec(kSpec));
  EXPECT_EQ(a, b);
  EXPECT_EQ(db->workload(a)->spec, canonical_workload_spec(kSpec));
  int64_t c = db->commit_workload(make_workload("matmul(M=32,N=24,K=8)"));
  EXPECT_NE(a, c);
  EXPECT_EQ(db->workloads().size(), 2u);
  EXPECT_FALSE(db->has_workload(structural_hash(make_workload("matmul(M=8,N=8,K=8)"))));
  EXPECT_FALSE(db->find_workload(make_workload("matmul(M=8,N=8,K=8)")).has_value());
}

TEST_F(DatabaseTest, TopKIsFastestFirstPerTarget) {
  auto db = Database::open(path());
  Function f = make_workload(kSpec);
  int64_t wid = db->commit_workload(f);
  std::vector<double> times = {5e-3, 1e-3, 9e-3, 3e-3, 7e-3, 2e-3, 8e-3, 4e-3, 6e-3, 10e-3};
  for (size_t i = 0; i < times.size(); ++i)
    db->commit_record(make_record(f, wid, "llvm", {times[i]}, 1, i));
  db->commit_record(make_record(f, wid, "cuda", {1e-6}));
  auto top = db->top_k(wid, "llvm", 4);
  ASSERT_EQ(top.size(), 4u);
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < top.size(); ++i)
    EXPECT_DOUBLE_EQ(top[i].mean_secs(), sorted[i]);
  EXPECT_EQ(db->top_k(wid, "llvm", 100).size(), times.size());
  EXPECT_EQ(db->top_k(f, "llvm", 2).size(), 2u);
  EXPECT_DOUBLE_EQ(db->best(wid, "cuda")->mean_secs(), 1e-6);
  EXPECT_DOUBLE_EQ(db->best(f, "llvm")->mean_secs(), sorted[0]);
  EXPECT_FALSE(db->best(wid, "opencl").has_value());
  EXPECT_EQ(db->record_count(wid, "llvm"), times.size());
  EXPECT_EQ(db->record_count(wid), times.size() + 1);
  EXPECT_EQ(db->record_count(), times.size() + 1);
}

TEST_F(DatabaseTest, FailedTrialsAreStoredButNeverBest) {
  auto db = Database::open(path());
  Function f = make_workload(kSpec);
  int64_t wid = db->commit_workload(f);
  TuningRecord bad = make_record(f, wid, "llvm", {}, 8);
  bad.error = "build timed out after 10 s";
  db->commit_record(bad);
  EXPECT_FALSE(db->best(wid, "llvm").has_value());
  db->commit_record(make_record(f, wid, "llvm", {2e-3}, 2));
  TuningRecord wrong = make_record(f, wid, "llvm", {1e-9}, 4);
  wrong.error = "result differs from the reference";
  db->commit_record(wrong);

  EXPECT_EQ(db->record_count(wid, "llvm"), 3u);
  auto best = db->best(wid, "llvm");
  ASSERT_TRUE(best.has_value());
  EXPECT_DOUBLE_EQ(best->mean_secs(), 2e-3);
  EXPECT_EQ(db->top_k(wid, "llvm", 10).size(), 1u);
  auto all = db->records(wid, "llvm");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all[0].failed());
  EXPECT_TRUE(all[0].run_secs.empty());
  EXPECT_EQ(all[0].error, "build timed out after 10 s");
  EXPECT_TRUE(std::isinf(all[0].mean_secs()));
  EXPECT_TRUE(all[2].failed());
}

// Times measured again later are appended: the old ones stay, the mean (and so the ranking)
// follows all of them; failed or missing records and bad times are refused without a change.
TEST_F(DatabaseTest, AppendedRunTimesKeepTheOldOnesAndReRank) {
  auto db = Database::open(path());
  Function f = make_workload(kSpec);
  int64_t wid = db->commit_workload(f);
  int64_t lucky = db->commit_record(make_record(f, wid, "llvm", {1e-3}, 2));
  int64_t steady = db->commit_record(make_record(f, wid, "llvm", {1.5e-3}, 4));
  TuningRecord failed = make_record(f, wid, "llvm", {}, 8);
  failed.error = "SIGSEGV";
  int64_t bad = db->commit_record(failed);
  ASSERT_EQ(db->best(wid, "llvm")->id, lucky);

  TuningRecord r = db->append_run_secs(lucky, {2e-3, 3e-3});
  EXPECT_EQ(r.run_secs, (std::vector<double>{1e-3, 2e-3, 3e-3}));
  EXPECT_DOUBLE_EQ(r.mean_secs(), 2e-3);
  EXPECT_EQ(db->record(lucky).run_secs, r.run_secs);
  EXPECT_EQ(db->best(wid, "llvm")->id, steady);

  EXPECT_THROW(db->append_run_secs(bad, {1e-3}), DatabaseError);
  EXPECT_TRUE(db->record(bad).run_secs.empty());
  EXPECT_THROW(db->append_run_secs(12345, {1e-3}), DatabaseError);
  EXPECT_THROW(db->append_run_secs(steady, {std::nan("")}), DatabaseError);
  EXPECT_THROW(db->append_run_secs(steady, {-1.0}), DatabaseError);
  EXPECT_EQ(db->record(steady).run_secs, (std::vector<double>{1.5e-3}));
}

// Settings (the cold-inputs policy) and model choices (a task's faster implementation inside
// a model): stored, replaced, read back after reopening; read-only opens see them.
TEST_F(DatabaseTest, SettingsAndModelChoicesAreKeptAndReplaced) {
  {
    auto db = Database::open(path());
    EXPECT_FALSE(db->setting(kMeasuredInputsKey));
    db->set_setting(kMeasuredInputsKey, "off");
    db->set_setting(kMeasuredInputsKey, "memory-bound");
    EXPECT_THROW(db->set_setting("version", "2"), DatabaseError);
    Function f = make_workload(kSpec);
    int64_t wid = db->commit_workload(f);
    EXPECT_FALSE(db->model_choice(wid, "llvm"));
    db->set_model_choice({wid, "llvm", "tuned", 1e-3, 2e-3});
    db->set_model_choice({wid, "llvm", "onednn.cpu", 3e-3, 2e-3});
    EXPECT_THROW(db->set_model_choice({wid, "llvm", "tuned", std::nan(""), 1e-3}), DatabaseError);
  }
  DatabaseOptions ro;
  ro.read_only = true;
  auto db = Database::open(path(), ro);
  EXPECT_EQ(db->setting(kMeasuredInputsKey), "memory-bound");
  std::optional<ModelChoice> c = db->model_choice(1, "llvm");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->implementation, "onednn.cpu");
  EXPECT_DOUBLE_EQ(c->tuned_seconds, 3e-3);
  EXPECT_DOUBLE_EQ(c->library_seconds, 2e-3);
  EXPECT_FALSE(db->model_choice(1, "llvm -mcpu=other"));
}

TEST_F(DatabaseTest, RejectsRecordsThatCannotBeUsed) {
  auto db = Database::open(path());
  Function f = make_workload(kSpec);
  int64_t wid = db->commit_workload(f);
  TuningRecord r = make_record(f, wid, "llvm", {1e-3});
  r.trace_json = "[[[\"split\"";
  EXPECT_THROW(db->commit_record(r), DatabaseError);
  r = make_record(f, wid + 1, "llvm", {1e-3});
  try {
    db->commit_record(r);
    FAIL() << "a record of a missing workload was accepted";
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("no such workload"), std::string::npos) << e.what();
  }
  r = make_record(f, wid, "llvm", {std::nan("")});
  EXPECT_THROW(db->commit_record(r), DatabaseError);
  EXPECT_EQ(db->record_count(), 0u);
}

TEST_F(DatabaseTest, ReplayNamesTheRecordWhenItsTraceDoesNotApply) {
  Function f = make_workload(kSpec);
  TuningRecord r = make_record(f, 1, "llvm", {1e-3});
  r.id = 42;
  // The same trace on a workload whose i extent (10) is not 4 * 8.
  try {
    replay(r, make_workload("matmul(M=10,N=24,K=16)"));
    FAIL() << "replay on a mismatching workload succeeded";
  } catch (const ReplayError& e) {
    EXPECT_NE(std::string(e.what()).find("record 42"), std::string::npos) << e.what();
  }
  r.trace_json = "{";
  EXPECT_THROW(replay(r, f), ReplayError);
}

TEST_F(DatabaseTest, JsonLinesRoundTrip) {
  Function f = make_workload(kSpec);
  Function g = make_workload("softmax(M=4,N=16)");
  std::stringstream jsonl;
  std::vector<TuningRecord> originals;
  {
    auto db = Database::open(path("a.db"));
    int64_t wf = db->commit_workload(f, canonical_workload_spec(kSpec));
    int64_t wg = db->commit_workload(g);
    for (int64_t outer : {1, 2, 4, 8}) {
      TuningRecord r = make_record(f, wf, "llvm", {outer * 1e-4, 0.1 / 3}, outer, outer);
      r.args[0].weight = outer == 4;
      if (outer == 8) {
        r.run_secs.clear();
        r.error = "crashed: \"SIGSEGV\"\n";
      }
      db->commit_record(r);
    }
    TuningRecord rg;
    rg.workload_id = wg;
    rg.target = "llvm";
    rg.trace_json = Schedule(g).trace().to_json(); // the empty schedule
    rg.run_secs = {1e-5};
    rg.seed = UINT64_MAX;
    db->commit_record(rg);
    for (const auto& w : db->workloads())
      for (auto& r : db->records(w.id))
        originals.push_back(r);
    ExportStats es = db->export_jsonl(jsonl);
    EXPECT_EQ(es.workloads, 2u);
    EXPECT_EQ(es.records, 5u);
    EXPECT_TRUE(es.errors.empty());
  }
  std::string text = jsonl.str();
  auto db = Database::open(path("b.db"));
  std::istringstream in1(text);
  ImportStats is = db->import_jsonl(in1, "export.jsonl");
  EXPECT_EQ(is.workloads_added, 2u);
  EXPECT_EQ(is.records_added, 5u);
  EXPECT_TRUE(is.errors.empty()) << is.errors.front();
  std::vector<TuningRecord> imported;
  for (const auto& w : db->workloads())
    for (auto& r : db->records(w.id))
      imported.push_back(r);
  ASSERT_EQ(imported.size(), originals.size());
  for (size_t i = 0; i < imported.size(); ++i)
    expect_same_record(imported[i], originals[i]);
  EXPECT_EQ(db->find_workload(f)->spec, canonical_workload_spec(kSpec));
  EXPECT_DOUBLE_EQ(db->best(f, "llvm")->mean_secs(), originals[0].mean_secs());

  // Importing again adds nothing; a damaged file keeps its good lines.
  std::istringstream in2(text);
  ImportStats again = db->import_jsonl(in2, "export.jsonl");
  EXPECT_EQ(again.workloads_existing, 2u);
  EXPECT_EQ(again.records_duplicate, 5u);
  EXPECT_EQ(again.records_added, 0u);

  std::istringstream lines(text);
  std::vector<std::string> v;
  for (std::string l; std::getline(lines, l);)
    v.push_back(l);
  // header, the setting (records of before it: hot), workload f, 4 records, workload g, 1 record
  ASSERT_EQ(v.size(), 9u);
  EXPECT_EQ(v[1], R"({"key":"measured_inputs","type":"setting","value":"off"})");
  v[3] = "{not json";
  // Valid JSON, but an instruction without its four parts.
  v[4].replace(v[4].find("\"trace\":[[["), 11, "\"trace\":[[[\"bogus\"],[");
  std::string damaged;
  for (auto& l : v)
    damaged += l + "\n";
  auto db2 = Database::open(path("c.db"));
  std::istringstream in3(damaged);
  ImportStats d = db2->import_jsonl(in3, "damaged.jsonl");
  EXPECT_EQ(d.records_added, 3u);
  ASSERT_EQ(d.errors.size(), 2u);
  EXPECT_NE(d.errors[0].find("damaged.jsonl:4:"), std::string::npos) << d.errors[0];
  EXPECT_NE(d.errors[1].find("damaged.jsonl:5:"), std::string::npos) << d.errors[1];

  // Through files as well.
  db->export_jsonl(path("out.jsonl"));
  auto db3 = Database::open(path("d.db"));
  EXPECT_EQ(db3->import_jsonl(path("out.jsonl")).records_added, 5u);
}

// How the records were measured (the cold-inputs policy) and the choices made inside a model
// travel with the records: an import of records measured otherwise is refused whole, an empty
// database takes the file's setting, of two choices for a task the newer is kept.
TEST_F(DatabaseTest, JsonLinesCarrySettingsAndModelChoices) {
  Function f = make_workload(kSpec);
  auto a = Database::open(path("a.db"));
  EXPECT_FALSE(a->record_setting(kMeasuredInputsKey)); // empty: takes the first run's
  EXPECT_THROW(a->record_setting("colour"), DatabaseError);
  a->set_setting(kMeasuredInputsKey, "memory-bound");
  const int64_t wid = a->commit_workload(f, canonical_workload_spec(kSpec));
  a->commit_record(make_record(f, wid, "llvm", {1e-3}, 4));
  a->commit_record(make_record(f, wid, "llvm", {2e-3}, 2));
  a->set_model_choice({wid, "llvm", "onednn.cpu", 3e-3, 2e-3, 1000});
  std::stringstream first;
  ExportStats es = a->export_jsonl(first);
  EXPECT_EQ(es.settings, 1u);
  EXPECT_EQ(es.model_choices, 1u);
  const std::string first_text = first.str();

  auto b = Database::open(path("b.db"));
  std::istringstream in1(first_text);
  ImportStats is = b->import_jsonl(in1, "a.jsonl");
  EXPECT_TRUE(is.errors.empty()) << is.errors.front();
  EXPECT_EQ(is.records_added, 2u);
  EXPECT_EQ(is.settings_added, 1u);
  EXPECT_EQ(is.model_choices_added, 1u);
  EXPECT_EQ(b->setting(kMeasuredInputsKey), "memory-bound");
  const int64_t bid = b->find_workload(f)->id;
  std::optional<ModelChoice> c = b->model_choice(bid, "llvm");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->implementation, "onednn.cpu");
  EXPECT_DOUBLE_EQ(c->tuned_seconds, 3e-3);
  EXPECT_DOUBLE_EQ(c->library_seconds, 2e-3);
  EXPECT_EQ(c->created_at_ms, 1000);

  // Again: nothing new. Then a newer choice replaces the one there, an older one does not.
  std::istringstream in2(first_text);
  ImportStats again = b->import_jsonl(in2, "a.jsonl");
  EXPECT_EQ(again.records_duplicate, 2u);
  EXPECT_EQ(again.model_choices_kept, 1u);
  EXPECT_EQ(again.settings_added, 0u);
  a->set_model_choice({wid, "llvm", "tuned", 1e-3, 2e-3, 2000});
  std::stringstream second;
  a->export_jsonl(second);
  ImportStats newer = b->import_jsonl(second, "a2.jsonl");
  EXPECT_EQ(newer.model_choices_added, 1u);
  EXPECT_EQ(b->model_choice(bid, "llvm")->implementation, "tuned");
  b->set_model_choice({bid, "llvm", "onednn.cpu", 3e-3, 2e-3, 3000});
  std::istringstream in3(second.str());
  EXPECT_EQ(b->import_jsonl(in3, "a2.jsonl").model_choices_kept, 1u);
  EXPECT_EQ(b->model_choice(bid, "llvm")->implementation, "onednn.cpu");

  // A database of hot records (none stored: of before the setting) refuses the cold ones,
  // whole; and a file of before the setting (hot records) is refused by a cold database.
  auto hot = Database::open(path("hot.db"));
  const int64_t hid = hot->commit_workload(f);
  hot->commit_record(make_record(f, hid, "llvm", {5e-3}, 8));
  EXPECT_EQ(hot->record_setting(kMeasuredInputsKey), "off");
  std::istringstream in4(first_text);
  try {
    hot->import_jsonl(in4, "a.jsonl");
    ADD_FAILURE() << "imported cold records into a hot database";
  } catch (const DatabaseError& e) {
    const std::string what = e.what();
    for (const char* part :
         {"a.jsonl", "measured_inputs", "'memory-bound'", "'off'", "hot.db", "nothing imported"})
      EXPECT_NE(what.find(part), std::string::npos) << part << " not in: " << what;
  }
  EXPECT_EQ(hot->record_count(), 1u);
  EXPECT_FALSE(hot->model_choice(hid, "llvm"));
  EXPECT_FALSE(hot->setting(kMeasuredInputsKey));
  std::string old_format;
  std::istringstream lines(first_text);
  for (std::string l; std::getline(lines, l);)
    if (l.find(R"("type":"setting")") == std::string::npos) old_format += l + "\n";
  std::istringstream in5(old_format);
  EXPECT_THROW(b->import_jsonl(in5, "old.jsonl"), DatabaseError);
  std::istringstream in6(old_format);
  EXPECT_EQ(hot->import_jsonl(in6, "old.jsonl").records_added, 2u);

  // Bad lines are reported and skipped: a choice of an undefined workload, one without times,
  // a setting of the schema's own.
  std::string bad = first_text;
  bad +=
      R"({"type":"model_choice","workload":99,"target":"llvm","implementation":"tuned","tuned_secs":1,"library_secs":1,"created_at_ms":5})"
      "\n";
  bad +=
      R"({"type":"model_choice","workload":1,"target":"llvm","implementation":"tuned","tuned_secs":null,"library_secs":1,"created_at_ms":5})"
      "\n";
  bad += R"({"type":"setting","key":"version","value":"7"})"
         "\n";
  auto d = Database::open(path("d.db"));
  std::istringstream in7(bad);
  ImportStats di = d->import_jsonl(in7, "bad.jsonl");
  EXPECT_EQ(di.records_added, 2u);
  EXPECT_EQ(di.model_choices_added, 1u);
  ASSERT_EQ(di.errors.size(), 3u);
  EXPECT_NE(di.errors[0].find("workload 99"), std::string::npos) << di.errors[0];
  EXPECT_NE(di.errors[2].find("'version'"), std::string::npos) << di.errors[2];
}

TEST_F(DatabaseTest, TwoThreadsWriteAtOnce) {
  constexpr int kPerWriter = 100;
  Function f = make_workload(kSpec);
  std::string trace = trace_for(f, 4);
  std::atomic<int> failures{0};
  auto writer = [&](int who) {
    try {
      auto db = Database::open(path());
      int64_t wid = db->commit_workload(make_workload(kSpec));
      for (int i = 0; i < kPerWriter; ++i) {
        TuningRecord r;
        r.workload_id = wid;
        r.target = "llvm";
        r.trace_json = trace;
        r.run_secs = {1e-3 * (i + 1)};
        r.seed = static_cast<uint64_t>(who * 1000 + i);
        db->commit_record(r);
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "writer " << who << ": " << e.what();
      ++failures;
    }
  };
  std::thread a(writer, 1), b(writer, 2);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  auto db = Database::open(path());
  ASSERT_EQ(db->workloads().size(), 1u);
  auto all = db->records(db->workloads()[0].id);
  EXPECT_EQ(all.size(), 2u * kPerWriter);
  std::set<uint64_t> seeds;
  for (auto& r : all)
    seeds.insert(r.seed);
  EXPECT_EQ(seeds.size(), 2u * kPerWriter);
}

TEST_F(DatabaseTest, TwoProcessesWriteAtOnce) {
  constexpr int kWriters = 2, kPerWriter = 100;
  std::vector<pid_t> kids;
  for (int who = 0; who < kWriters; ++who) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        Function f = make_workload(kSpec);
        std::string trace = trace_for(f, 2);
        auto db = Database::open(path());
        int64_t wid = db->commit_workload(f, canonical_workload_spec(kSpec));
        for (int i = 0; i < kPerWriter; ++i) {
          TuningRecord r;
          r.workload_id = wid;
          r.target = "llvm";
          r.trace_json = trace;
          r.run_secs = {1e-4 * (i + 1)};
          r.seed = static_cast<uint64_t>(who * 1000 + i);
          db->commit_record(r);
        }
      } catch (const std::exception& e) {
        fprintf(stderr, "writer %d: %s\n", who, e.what());
        code = 1;
      }
      _exit(code);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer process failed";
  }
  auto db = Database::open(path());
  ASSERT_EQ(db->workloads().size(), 1u);
  EXPECT_EQ(db->record_count(), static_cast<size_t>(kWriters * kPerWriter));
  std::set<uint64_t> seeds;
  for (auto& r : db->records(db->workloads()[0].id))
    seeds.insert(r.seed);
  EXPECT_EQ(seeds.size(), static_cast<size_t>(kWriters * kPerWriter));
  EXPECT_TRUE(db->check().empty());
}

TEST_F(DatabaseTest, SigkillDuringCommitsLosesNothingCommitted) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    try {
      Function f = make_workload(kSpec);
      std::string trace = trace_for(f, 8);
      auto db = Database::open(path());
      int64_t wid = db->commit_workload(f);
      for (int64_t i = 0;; ++i) {
        TuningRecord r;
        r.workload_id = wid;
        r.target = "llvm";
        r.trace_json = trace;
        r.run_secs = {1e-3, 2e-3};
        r.seed = static_cast<uint64_t>(i);
        int64_t id = db->commit_record(r);
        // Only ids whose commit returned are reported: those must survive the kill.
        if (write(fds[1], &id, sizeof id) != sizeof id) _exit(2);
      }
    } catch (...) {
      _exit(1);
    }
  }
  close(fds[1]);
  std::vector<int64_t> reported;
  int64_t id = 0;
  while (reported.size() < 200 && read(fds[0], &id, sizeof id) == sizeof id)
    reported.push_back(id);
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer exited early";
  while (read(fds[0], &id, sizeof id) == sizeof id)
    reported.push_back(id);
  close(fds[0]);
  ASSERT_GE(reported.size(), 200u);

  auto db = Database::open(path());
  EXPECT_TRUE(db->check().empty());
  EXPECT_GE(db->record_count(), reported.size());
  for (int64_t rid : reported)
    EXPECT_NO_THROW(db->record(rid)) << "record " << rid << " lost";
  // And the database takes new records.
  int64_t wid = db->workloads().at(0).id;
  Function f = make_workload(kSpec);
  db->commit_record(make_record(f, wid, "llvm", {1e-3}));
  EXPECT_GE(db->record_count(), reported.size() + 1);
}

TEST_F(DatabaseTest, RefusesFilesThatAreNotMetatuneDatabasesWithoutTouchingThem) {
  std::string text = path("notes.txt");
  write_bytes(text, "just some notes, certainly not a database\n");
  try {
    Database::open(text);
    FAIL() << "opened a text file";
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a metatune database"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(text), "just some notes, certainly not a database\n");

  // Another application's SQLite file: a metatune database whose marker table is renamed.
  std::string other = path("other.db");
  { Database::open(other)->commit_workload(make_workload(kSpec)); }
  std::string bytes = read_bytes(other);
  size_t n = 0;
  for (size_t at = bytes.find("metatune_schema"); at != std::string::npos;
       at = bytes.find("metatune_schema", at)) {
    bytes.replace(at, 15, "othertab_schema");
    ++n;
  }
  ASSERT_GT(n, 0u);
  write_bytes(other, bytes);
  try {
    Database::open(other);
    FAIL() << "opened a foreign SQLite database";
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("not a metatune database"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("othertab_schema"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_bytes(other), bytes);
  EXPECT_THROW(Database::open(path("missing.db"), DatabaseOptions{.read_only = true}),
               DatabaseError);
  EXPECT_FALSE(fs::exists(path("missing.db")));
}

TEST_F(DatabaseTest, CorruptedRecordIsNamedAndOthersStayUsable) {
  Function f = make_workload(kSpec);
  int64_t wid = 0, bad_id = 0;
  {
    auto db = Database::open(path());
    wid = db->commit_workload(f);
    db->commit_record(make_record(f, wid, "llvm", {3e-3}, 1));
    TuningRecord victim = make_record(f, wid, "llvm-victim", {1e-3}, 2);
    bad_id = db->commit_record(victim);
    db->commit_record(make_record(f, wid, "llvm", {2e-3}, 4));
    db->commit_record(make_record(f, wid, "llvm", {5e-3}, 8));
  }
  // Flip one byte of the victim's trace, as a bad disk would: in the row the trace text
  // follows the target text directly.
  std::string bytes = read_bytes(path());
  size_t at = bytes.find("llvm-victim[[[");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 12] = '{';
  ASSERT_EQ(bytes.find("llvm-victim[[[", at + 1), std::string::npos) << "ambiguous patch";
  write_bytes(path(), bytes);

  auto db = Database::open(path());
  EXPECT_TRUE(db->top_k(wid, "llvm-victim", 10).empty());
  auto problems = db->take_problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find(path()), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("record " + std::to_string(bad_id)), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("trace does not parse"), std::string::npos) << problems[0];
  try {
    db->record(bad_id);
    FAIL() << "a corrupted record was returned";
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("record " + std::to_string(bad_id)), std::string::npos);
  }
  EXPECT_EQ(db->top_k(wid, "llvm", 10).size(), 3u);
  EXPECT_TRUE(structural_equal(replay(*db->best(wid, "llvm"), f), schedule_for(f, 4).func()));
  auto issues = db->check();
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].find("record " + std::to_string(bad_id)), std::string::npos) << issues[0];
  // Export leaves the bad row out and says so.
  std::stringstream out;
  ExportStats es = db->export_jsonl(out);
  EXPECT_EQ(es.records, 3u);
  EXPECT_EQ(es.errors.size(), 1u);
}

TEST_F(DatabaseTest, CorruptedFileGivesAClearError) {
  Function f = make_workload(kSpec);
  {
    auto db = Database::open(path());
    int64_t wid = db->commit_workload(f);
    for (int i = 0; i < 50; ++i)
      db->commit_record(make_record(f, wid, "llvm", {1e-3 * (i + 1)}));
  }
  std::string bytes = read_bytes(path());
  ASSERT_GT(bytes.size(), 4096u);
  std::mt19937 rng(5);
  // Keep SQLite's 100-byte header, scramble the rest of every page.
  for (size_t i = 100; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(rng());
  write_bytes(path(), bytes);
  try {
    auto db = Database::open(path());
    // If opening got through, reading must fail with a clear message.
    db->record_count();
    auto issues = db->check();
    ASSERT_FALSE(issues.empty());
    EXPECT_NE(issues[0].find(path()), std::string::npos) << issues[0];
  } catch (const DatabaseError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path()), std::string::npos) << msg;
    EXPECT_TRUE(msg.find("corrupted") != std::string::npos ||
                msg.find("not a metatune database") != std::string::npos)
        << msg;
  }
}

TEST_F(DatabaseTest, ReadOnlyNeverWrites) {
  Function f = make_workload(kSpec);
  int64_t wid = 0;
  {
    auto db = Database::open(path());
    wid = db->commit_workload(f);
    db->commit_record(make_record(f, wid, "llvm", {1e-3}));
  }
  std::string before = read_bytes(path());
  auto db = Database::open(path(), DatabaseOptions{.read_only = true});
  EXPECT_EQ(db->record_count(), 1u);
  EXPECT_THROW(db->commit_record(make_record(f, wid, "llvm", {1e-3})), DatabaseError);
  EXPECT_EQ(read_bytes(path()), before);
}

} // namespace
} // namespace mt
