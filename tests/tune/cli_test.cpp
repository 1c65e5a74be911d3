// `metatune tune` / `best` / `replay` as a user runs them: the built CLI started as a child
// process (finding the plugins of the build tree by itself), its JSON output, SIGKILL in the
// middle of a run and the same command again (resume, no record lost), two processes on one
// database at once, Ctrl-C (SIGINT) ending a run cleanly with exit status 130, the oneDNN
// implementation as a library candidate (tune's comparison line, best side by side, replay of
// the library record), and a run whose every sample is refused ending with status 1 and the
// refusing postprocessor's name.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/workload/library.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() /
          ("mt_cli_test_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

// Starts the CLI with `args`, stdout and stderr to files; returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> argv;
    std::string exe = METATUNE_CLI;
    argv.push_back(exe.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string last_line(const std::string& text) {
  std::string s = text;
  while (!s.empty() && s.back() == '\n')
    s.pop_back();
  size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

struct CliRun {
  int status = -1;
  std::string out, err;
};

CliRun run_cli(const TempDir& d, const std::vector<std::string>& args, const std::string& tag) {
  pid_t pid = spawn(args, d.file(tag + ".out"), d.file(tag + ".err"));
  CliRun r;
  r.status = wait_exit(pid);
  r.out = slurp(d.file(tag + ".out"));
  r.err = slurp(d.file(tag + ".err"));
  return r;
}

// Without library candidates and the final comparison unless `library` (then: oneDNN, and a
// short comparison).
std::vector<std::string> tune_args(const std::string& db, const std::string& workload,
                                   size_t trials, const std::string& seed = "1",
                                   bool library = false) {
  std::vector<std::string> args{"tune",
                                "--workload",
                                workload,
                                "--target",
                                "llvm",
                                "--trials",
                                std::to_string(trials),
                                "--db",
                                db,
                                "--seed",
                                seed,
                                "--batch-size",
                                "4",
                                "--repeats",
                                "1",
                                "--min-repeat-ms",
                                "1",
                                "--population",
                                "32",
                                "--cost-model",
                                "cost.Random",
                                "--json"};
  if (library) {
    for (const char* a : {"--library", "onednn.cpu", "--compare-repeats", "2"})
      args.push_back(a);
  } else {
    args.push_back("--no-library");
    args.push_back("--no-compare");
  }
  return args;
}

size_t count_records(const std::string& db) {
  if (!fs::exists(db)) return 0;
  try {
    DatabaseOptions o;
    o.read_only = true;
    return Database::open(db, o)->record_count();
  } catch (const DatabaseError&) {
    return 0; // not created yet
  }
}

std::set<int64_t> record_ids(const std::string& db) {
  DatabaseOptions o;
  o.read_only = true;
  auto d = Database::open(db, o);
  std::set<int64_t> ids;
  for (const WorkloadEntry& w : d->workloads())
    for (const TuningRecord& r : d->records(w.id))
      ids.insert(r.id);
  return ids;
}

// Polls until the database holds at least `n` records (or the child ended / time ran out).
bool wait_for_records(const std::string& db, size_t n, pid_t child, double timeout_s = 60) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    if (count_records(db) >= n) return true;
    int status;
    if (waitpid(child, &status, WNOHANG) == child) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

const char* kSpec = "matmul(M=64,N=64,K=64)";

TEST(TuneCli, JsonLastLineThenBestAndReplay) {
  TempDir d;
  std::string db = d.file("t.db");
  CliRun r = run_cli(d, tune_args(db, kSpec, 6), "tune");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  nlohmann::json j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["workload"], canonical_workload_spec(kSpec));
  EXPECT_EQ(j["target"].get<std::string>().rfind("llvm", 0), 0u);
  EXPECT_EQ(j["trials"], 6);
  EXPECT_GT(j["best_seconds"].get<double>(), 0);
  double gflops = j["best_gflops"].get<double>();
  EXPECT_NEAR(gflops, 2.0 * 64 * 64 * 64 / j["best_seconds"].get<double>() * 1e-9, 1e-6 * gflops);
  EXPECT_GE(j["tuning_seconds"].get<double>(), 0);
  EXPECT_EQ(j["interrupted"], false);
  ASSERT_EQ(j["tasks"].size(), 1u);
  const nlohmann::json& time = j["tasks"][0]["time_seconds"];
  for (const char* part :
       {"setup", "search", "measuring", "builds_summed", "runs_summed", "updates", "checks"})
    EXPECT_GE(time.at(part).get<double>(), 0) << part;
  EXPECT_LE(time["runs_summed"].get<double>(), time["measuring"].get<double>());
  EXPECT_NE(r.out.find("    time: setup "), std::string::npos) << r.out;
  int64_t best_id = j["tasks"][0]["best_record_id"];
  EXPECT_EQ(count_records(db), 6u);

  CliRun b = run_cli(d, {"best", "--db", db, "--workload", kSpec, "--json"}, "best");
  ASSERT_EQ(b.status, 0) << b.err;
  nlohmann::json bj = nlohmann::json::parse(last_line(b.out));
  ASSERT_EQ(bj.size(), 1u);
  EXPECT_EQ(bj[0]["records"], 6);
  EXPECT_EQ(bj[0]["best"][0]["record"], best_id);
  EXPECT_DOUBLE_EQ(bj[0]["best"][0]["seconds"].get<double>(), j["best_seconds"].get<double>());

  CliRun p = run_cli(d,
                     {"replay", "--db", db, "--record", std::to_string(best_id), "--repeats", "1",
                      "--min-repeat-ms", "1", "--json"},
                     "replay");
  ASSERT_EQ(p.status, 0) << p.err << p.out;
  nlohmann::json pj = nlohmann::json::parse(last_line(p.out));
  EXPECT_EQ(pj["ok"], true);
  EXPECT_GT(pj["seconds"].get<double>(), 0);

  // A record timed with a param packed as a model's weight (`model tune`) says so in `best`.
  int64_t packed_id = 0;
  {
    auto w = Database::open(db);
    TuningRecord copy = w->record(best_id);
    copy.id = 0;
    copy.created_at_ms = 0;
    copy.args.at(1).weight = true;
    packed_id = w->commit_record(copy);
  }
  CliRun bp = run_cli(d, {"best", "--db", db, "--workload", kSpec, "-k", "10", "--json"}, "best_w");
  ASSERT_EQ(bp.status, 0) << bp.err;
  nlohmann::json bpj = nlohmann::json::parse(last_line(bp.out));
  ASSERT_EQ(bpj.size(), 1u);
  size_t marked = 0;
  for (const nlohmann::json& rec : bpj[0]["best"])
    marked += rec["weights_packed"].get<bool>() ? 1 : 0;
  EXPECT_EQ(marked, 1u) << bp.out;
  CliRun bt = run_cli(d, {"best", "--db", db, "--workload", kSpec, "-k", "10"}, "best_wt");
  ASSERT_EQ(bt.status, 0) << bt.err;
  EXPECT_NE(bt.out.find("record " + std::to_string(packed_id)), std::string::npos) << bt.out;
  EXPECT_NE(bt.out.find("(weights packed)"), std::string::npos) << bt.out;

  CliRun ir = run_cli(d,
                      {"replay", "--db", db, "--record", std::to_string(best_id), "--print-ir",
                       "--repeats", "1", "--min-repeat-ms", "1"},
                      "replay_ir");
  ASSERT_EQ(ir.status, 0) << ir.err;
  EXPECT_NE(ir.out.find("matmul"), std::string::npos);
  EXPECT_NE(ir.out.find("correct"), std::string::npos);
}

// `--target "llvm -fpmath=bf16"`: the kernels may round their products' operands (AMX tile
// products, std.MultiLevelTilingAmx, forced here so that the space has them on any CPU), so the
// records are filed under the target with that option, apart from the f32 ones, and checked at
// bf16's precision: every trial passes, and replaying a record rebuilds it with bf16 products.
TEST(TuneCli, Bf16ProductsAreFiledApartAndCheckedAtBf16Precision) {
  TempDir d;
  std::string db = d.file("bf16.db");
  const std::string spec = "dense(M=32,N=64,K=128,bias=1,act=gelu)";
  std::vector<std::string> args = tune_args(db, spec, 8);
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--target") args[i + 1] = "llvm -fpmath=bf16";
  for (const char* a :
       {"--rules", "std.AutoInline,std.MultiLevelTilingAmx{\"enabled\": \"always\"},"
                   "std.ParallelVectorizeUnroll"})
    args.push_back(a);
  CliRun r = run_cli(d, args, "tune_bf16");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  nlohmann::json j = nlohmann::json::parse(last_line(r.out));
  EXPECT_TRUE(j["target"].get<std::string>().ends_with(" -fpmath=bf16")) << j["target"];
  ASSERT_EQ(j["tasks"].size(), 1u);
  EXPECT_EQ(j["tasks"][0]["failed"], 0) << r.err;
  const int64_t best_id = j["tasks"][0]["best_record_id"];
  CliRun p = run_cli(d,
                     {"replay", "--db", db, "--record", std::to_string(best_id), "--repeats", "1",
                      "--min-repeat-ms", "1", "--json"},
                     "replay_bf16");
  ASSERT_EQ(p.status, 0) << p.err << p.out;
  nlohmann::json pj = nlohmann::json::parse(last_line(p.out));
  EXPECT_EQ(pj["ok"], true) << p.out;
  EXPECT_TRUE(pj["target"].get<std::string>().ends_with(" -fpmath=bf16"));
  EXPECT_EQ(pj["packed_args"], 0);

  // --weights: the weight given packed where the kernel takes it so -- on an AMX CPU the tile
  // products' panels of it, made once (prepacked_weights.h) -- and still checked.
  CliRun w = run_cli(d,
                     {"replay", "--db", db, "--record", std::to_string(best_id), "--repeats", "1",
                      "--min-repeat-ms", "1", "--weights", "weight", "--json"},
                     "replay_weights");
  ASSERT_EQ(w.status, 0) << w.err << w.out;
  nlohmann::json wj = nlohmann::json::parse(last_line(w.out));
  EXPECT_EQ(wj["ok"], true) << w.out;
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string flags((std::istreambuf_iterator<char>(cpuinfo)), {});
  if (flags.find(" amx_bf16") != std::string::npos &&
      flags.find(" amx_tile") != std::string::npos) {
    EXPECT_EQ(wj["packed_args"], 1) << w.out;
  }
  CliRun bad = run_cli(
      d, {"replay", "--db", db, "--record", std::to_string(best_id), "--weights", "weights"},
      "replay_bad_weights");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("--weights: 'weights' is not a param of dense (0 'data', 1 'weight'"),
            std::string::npos)
      << bad.err;
}

TEST(TuneCli, SigkillThenSameCommandResumesWithoutLoss) {
  TempDir d;
  std::string db = d.file("t.db");
  const size_t budget = 16;
  pid_t pid = spawn(tune_args(db, kSpec, budget), d.file("a.out"), d.file("a.err"));
  ASSERT_TRUE(wait_for_records(db, 4, pid)) << slurp(d.file("a.err"));
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
  std::set<int64_t> before = record_ids(db);
  ASSERT_GE(before.size(), 4u);
  ASSERT_LT(before.size(), budget);

  CliRun r = run_cli(d, tune_args(db, kSpec, budget), "b");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["trials"].get<size_t>(), budget - before.size());
  EXPECT_EQ(j["records_total"], budget);
  std::set<int64_t> after = record_ids(db);
  EXPECT_EQ(after.size(), budget);
  for (int64_t id : before)
    EXPECT_TRUE(after.count(id)) << "record " << id << " was lost";
}

TEST(TuneCli, TwoProcessesOnOneDatabase) {
  TempDir d;
  std::string db = d.file("t.db");
  // Same workload, different seeds: both file it (one workload entry) and write at once.
  pid_t a = spawn(tune_args(db, kSpec, 8, "1"), d.file("a.out"), d.file("a.err"));
  pid_t b = spawn(tune_args(db, kSpec, 8, "2"), d.file("b.out"), d.file("b.err"));
  int sa = wait_exit(a), sb = wait_exit(b);
  ASSERT_EQ(sa, 0) << slurp(d.file("a.err"));
  ASSERT_EQ(sb, 0) << slurp(d.file("b.err"));
  nlohmann::json ja = nlohmann::json::parse(last_line(slurp(d.file("a.out"))));
  nlohmann::json jb = nlohmann::json::parse(last_line(slurp(d.file("b.out"))));
  size_t ta = ja["trials"], tb = jb["trials"];
  // Each counts the records present when it started toward its budget.
  EXPECT_GE(ta + tb, 8u);
  EXPECT_LE(ta + tb, 16u);
  EXPECT_EQ(count_records(db), ta + tb) << "a record was lost";
  DatabaseOptions o;
  o.read_only = true;
  EXPECT_EQ(Database::open(db, o)->workloads().size(), 1u);
  EXPECT_TRUE(Database::open(db, o)->check().empty());
}

// The stopped run's exit status and the JSON line it ended its output with (a.out / a.err).
nlohmann::json report_after_stop(const TempDir& d, pid_t pid) {
  EXPECT_EQ(wait_exit(pid), 130) << slurp(d.file("a.err"));
  nlohmann::json j = nlohmann::json::parse(last_line(slurp(d.file("a.out"))));
  EXPECT_EQ(j["interrupted"], true);
  return j;
}

TEST(TuneCli, SigintStopsCleanlyWithStatus130) {
  TempDir d;
  std::string db = d.file("t.db");
  pid_t pid = spawn(tune_args(db, kSpec, 500), d.file("a.out"), d.file("a.err"));
  ASSERT_TRUE(wait_for_records(db, 3, pid)) << slurp(d.file("a.err"));
  kill(pid, SIGINT);
  nlohmann::json j = report_after_stop(d, pid);
  EXPECT_GE(j["trials"].get<size_t>(), 3u);
  EXPECT_LT(j["trials"].get<size_t>(), 500u);
  EXPECT_EQ(count_records(db), j["trials"].get<size_t>());
}

// coreutils' `timeout -s INT` signals the command and then its process group, which holds the
// command too: the two arrive together and are one request to stop, not "stop now".
TEST(TuneCli, SigintDeliveredTwiceAtOnceStillEndsWithTheReport) {
  TempDir d;
  std::string db = d.file("t.db");
  pid_t pid = spawn(tune_args(db, kSpec, 500), d.file("a.out"), d.file("a.err"));
  ASSERT_TRUE(wait_for_records(db, 3, pid)) << slurp(d.file("a.err"));
  // Apart enough for the handler to run twice (two pending signals would merge into one).
  kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  kill(pid, SIGINT);
  nlohmann::json j = report_after_stop(d, pid);
  EXPECT_EQ(count_records(db), j["trials"].get<size_t>());
}

// A second Ctrl-C a moment later still means "now": no report, what was committed stays.
TEST(TuneCli, SecondSigintLaterLeavesAtOnce) {
  TempDir d;
  std::string db = d.file("t.db");
  // Each measurement lasts a second or more, so that the chunk in flight when the first signal
  // comes is still being measured at the second.
  std::vector<std::string> args = tune_args(db, kSpec, 500);
  auto at = std::find(args.begin(), args.end(), "--min-repeat-ms");
  ASSERT_NE(at, args.end());
  *(at + 1) = "1500";
  pid_t pid = spawn(args, d.file("a.out"), d.file("a.err"));
  ASSERT_TRUE(wait_for_records(db, 3, pid)) << slurp(d.file("a.err"));
  kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid) GTEST_SKIP() << "the run ended before the second";
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  EXPECT_EQ(slurp(d.file("a.out")).find("{\"best_gflops\""), std::string::npos);
  EXPECT_GE(count_records(db), 3u);
  DatabaseOptions o;
  o.read_only = true;
  EXPECT_TRUE(Database::open(db, o)->check().empty());
}

TEST(TuneCli, TimeBudgetEndsTheRunLikeASpentBudget) {
  TempDir d;
  std::string db = d.file("t.db");
  std::vector<std::string> args = tune_args(db, kSpec, 100000);
  args.insert(args.end(), {"--time-budget", "2"});
  CliRun r = run_cli(d, args, "tune");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["interrupted"], false);
  EXPECT_EQ(j["time_budget_reached"], true);
  size_t trials = j["trials"];
  EXPECT_GE(trials, 1u);
  EXPECT_LT(trials, 100000u);
  EXPECT_EQ(count_records(db), trials);
  EXPECT_GT(j["best_gflops"].get<double>(), 0);
  EXPECT_NE(r.out.find("(time budget reached)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("time budget of 2 s reached"), std::string::npos) << r.err;
}

TEST(TuneCli, LibraryCandidateComparedChosenShownAndReplayed) {
  if (!fs::exists(fs::path(METATUNE_BUILD_PLUGIN_DIR) / "onednn_cpu.so"))
    GTEST_SKIP() << "the onednn_cpu plugin is not built here (no oneDNN)";
  TempDir d;
  std::string db = d.file("t.db");
  CliRun r = run_cli(d, tune_args(db, kSpec, 4, "1", true), "tune");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  nlohmann::json j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["trials"], 4);
  ASSERT_EQ(j["tasks"].size(), 1u);
  const nlohmann::json& t = j["tasks"][0];
  EXPECT_EQ(t["library_target"], "onednn.cpu");
  EXPECT_EQ(t["library_measured"], 1);
  ASSERT_TRUE(t.contains("compare")) << t.dump();
  EXPECT_GT(t["compare"]["metatune_gflops"].get<double>(), 0);
  EXPECT_GT(t["compare"]["library_gflops"].get<double>(), 0);
  // The figures the choice is made on are the records' (the side-by-side times joined them).
  double mt = t["tuned_gflops"], lib = t["library_gflops"];
  EXPECT_GT(mt, 0);
  EXPECT_GT(lib, 0);
  EXPECT_NEAR(t["ratio_to_library"].get<double>(), mt / lib, 1e-9 * mt / lib);
  EXPECT_EQ(t["onednn_gflops"].get<double>(), lib);
  std::string chosen = lib > mt ? "onednn.cpu" : "llvm.cpu";
  EXPECT_EQ(t["implementation"], chosen);
  // The comparison line of the summary.
  EXPECT_NE(r.out.find("metatune "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" of oneDNN (" + chosen + " chosen; records' means"), std::string::npos)
      << r.out;
  int64_t lib_id = t["library_record_id"];
  int64_t best_id = t["best_record_id"];

  // best: the tuned record and the library record side by side, the faster one chosen (on the
  // records).
  CliRun b = run_cli(d, {"best", "--db", db, "--target", "llvm", "--json"}, "best");
  ASSERT_EQ(b.status, 0) << b.err;
  nlohmann::json bj = nlohmann::json::parse(last_line(b.out));
  ASSERT_EQ(bj.size(), 1u) << bj.dump();
  EXPECT_EQ(bj[0]["best"][0]["record"], best_id);
  ASSERT_TRUE(bj[0].contains("library")) << bj.dump();
  EXPECT_EQ(bj[0]["library"]["record"], lib_id);
  EXPECT_EQ(bj[0]["library"]["target"], "onednn.cpu");
  bool lib_faster =
      bj[0]["library"]["seconds"].get<double>() < bj[0]["best"][0]["seconds"].get<double>();
  EXPECT_EQ(bj[0]["chosen"], lib_faster ? "library" : "tuned");
  // One answer: best says what tune said, on the same figures.
  EXPECT_EQ(bj[0]["implementation"], lib_faster ? "onednn.cpu" : j["target"].get<std::string>());
  EXPECT_EQ(lib_faster, chosen == "onednn.cpu");
  EXPECT_DOUBLE_EQ(bj[0]["library"]["seconds"].get<double>(), t["library_seconds"].get<double>());
  EXPECT_DOUBLE_EQ(bj[0]["best"][0]["seconds"].get<double>(), t["best_seconds"].get<double>());
  CliRun bt = run_cli(d, {"best", "--db", db}, "best_text");
  ASSERT_EQ(bt.status, 0) << bt.err;
  EXPECT_NE(bt.out.find("(library: onednn.cpu)"), std::string::npos) << bt.out;
  EXPECT_NE(bt.out.find("chosen: "), std::string::npos) << bt.out;

  // replay of the library record builds the workload with oneDNN and checks it.
  CliRun p = run_cli(d,
                     {"replay", "--db", db, "--record", std::to_string(lib_id), "--repeats", "1",
                      "--min-repeat-ms", "1", "--json"},
                     "replay");
  ASSERT_EQ(p.status, 0) << p.err << p.out;
  nlohmann::json pj = nlohmann::json::parse(last_line(p.out));
  EXPECT_EQ(pj["ok"], true);
  EXPECT_EQ(pj["target_component"], "onednn.cpu");
  EXPECT_GT(pj["seconds"].get<double>(), 0);

  // The same command again: nothing to tune, no library candidate measured again.
  CliRun again = run_cli(d, tune_args(db, kSpec, 4, "1", true), "again");
  ASSERT_EQ(again.status, 0) << again.err;
  nlohmann::json aj = nlohmann::json::parse(last_line(again.out));
  EXPECT_EQ(aj["trials"], 0);
  EXPECT_EQ(aj["tasks"][0]["library_measured"], 0);
  EXPECT_EQ(aj["tasks"][0]["library_record_id"], lib_id);
}

TEST(TuneCli, EverySampleRefusedExitsWithStatus1NamingThePostproc) {
  TempDir d;
  std::vector<std::string> args = tune_args(d.file("t.db"), kSpec, 8);
  args.push_back("--postprocs");
  args.push_back("std.DisallowDynamicLoop,std.VerifyGPUCode{\"max_threads_per_block\": 0}");
  auto t0 = std::chrono::steady_clock::now();
  CliRun r = run_cli(d, args, "refused");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60);
  EXPECT_EQ(r.status, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("every sample was refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("std.VerifyGPUCode"), std::string::npos) << r.err;
}

// A model file's tasks share one budget, each with its weight; a --workload that is also in
// the model is one task. `metatune models` lists the built-in models and a model's tasks.
TEST(TuneCli, ModelTasksShareTheBudgetWithTheirWeights) {
  TempDir d;
  std::string model = d.file("m.json");
  std::ofstream(model) << R"JSON({"name": "tiny", "tasks": [
      {"workload": "matmul(M=32,N=32,K=32)", "weight": 3, "name": "proj"},
      {"workload": "dense(M=16,N=32,K=16,bias=1,act=relu)", "weight": 2}]})JSON";
  std::vector<std::string> args = tune_args(d.file("t.db"), "matmul(M=32, N=32, K=32)", 8);
  args.push_back("--model");
  args.push_back(model);
  CliRun r = run_cli(d, args, "tune");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("model tiny: 2 tasks"), std::string::npos) << r.err;
  nlohmann::json j = nlohmann::json::parse(last_line(r.out));
  ASSERT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["tasks"][0]["weight"], 4); // 3 from the model + 1 from --workload
  EXPECT_EQ(j["tasks"][1]["weight"], 2);
  // A model's tasks, but neither memory-bound (8 and 5 flops per input byte): timed hot.
  EXPECT_EQ(j["tasks"][0]["cold_inputs"], false);
  EXPECT_EQ(j["tasks"][1]["cold_inputs"], false);
  EXPECT_EQ(count_records(d.file("t.db")), 8u);
  // Where the run's time went, summed over its tasks.
  EXPECT_NE(r.out.find("time, all 2 tasks: setup "), std::string::npos) << r.out;

  CliRun list = run_cli(d, {"models"}, "models");
  ASSERT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("bert-base:"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("resnet-50:"), std::string::npos) << list.out;
  CliRun one = run_cli(d, {"models", "resnet-50"}, "resnet");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find("conv2d(N=1,C=64,H=56,W=56,F=64,KH=3,KW=3"), std::string::npos) << one.out;

  CliRun none = run_cli(d, {"tune", "--db", d.file("n.db")}, "none");
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("--workload SPEC or --model NAME"), std::string::npos) << none.err;
  CliRun typo = run_cli(d, {"tune", "--db", d.file("n.db"), "--model", "resnet50"}, "typo");
  EXPECT_EQ(typo.status, 1);
  EXPECT_NE(typo.err.find("did you mean 'resnet-50'"), std::string::npos) << typo.err;
}

// A model's matrix-vector product is timed on cold inputs: the tune JSON and `best` say so, and
// workloads tuned hot into the same database are refused with the way out.
TEST(TuneCli, AModelsMemoryBoundTaskIsTimedOnColdInputs) {
  TempDir d;
  std::string model = d.file("gemv.json");
  std::ofstream(model) << R"JSON({"name": "gemv", "tasks": [
      {"workload": "dense(M=1,N=256,K=256,bias=0,act=none)"}]})JSON";
  std::vector<std::string> args =
      tune_args(d.file("t.db"), "dense(M=1,N=256,K=256,bias=0,act=none)", 4);
  args.push_back("--model");
  args.push_back(model);
  CliRun r = run_cli(d, args, "tune");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  nlohmann::json j = nlohmann::json::parse(last_line(r.out));
  ASSERT_EQ(j["tasks"].size(), 1u);
  EXPECT_EQ(j["tasks"][0]["cold_inputs"], true);
  CliRun best = run_cli(d, {"best", "--db", d.file("t.db")}, "best");
  ASSERT_EQ(best.status, 0) << best.err;
  EXPECT_NE(best.out.find("timed on cold inputs"), std::string::npos) << best.out;

  std::vector<std::string> hot_args = tune_args(d.file("t.db"), "matmul(M=32,N=32,K=32)", 8);
  hot_args.insert(hot_args.end(), {"--cold-inputs", "off"});
  CliRun hot = run_cli(d, hot_args, "hot");
  EXPECT_EQ(hot.status, 1) << hot.out;
  EXPECT_NE(hot.err.find("--cold-inputs memory-bound"), std::string::npos) << hot.err;
  EXPECT_EQ(count_records(d.file("t.db")), 4u);
  // Without the flag (auto) workloads join the database under its policy.
  CliRun joined = run_cli(d, tune_args(d.file("t.db"), "matmul(M=32,N=32,K=32)", 8), "joined");
  EXPECT_EQ(joined.status, 0) << joined.err;
  EXPECT_GT(count_records(d.file("t.db")), 4u);
}

// `metatune db`: a database exported and imported on another machine keeps its records and
// how they were measured; records measured otherwise are refused, whole; bad lines are skipped
// with their place named; check finds a damaged file.
TEST(TuneCli, DatabasesTravelAsJsonLines) {
  TempDir d;
  const std::string spec = "matmul(M=32,N=32,K=32)";
  ASSERT_EQ(run_cli(d, tune_args(d.file("a.db"), spec, 4), "tune").status, 0);
  CliRun ex = run_cli(d, {"db", "export", "--db", d.file("a.db"), "-o", d.file("a.jsonl")}, "ex");
  ASSERT_EQ(ex.status, 0) << ex.err;
  EXPECT_NE(ex.err.find("4 record(s)"), std::string::npos) << ex.err;

  CliRun im =
      run_cli(d, {"db", "import", "--db", d.file("b.db"), d.file("a.jsonl"), "--json"}, "im");
  ASSERT_EQ(im.status, 0) << im.err;
  nlohmann::json j = nlohmann::json::parse(last_line(im.out));
  EXPECT_EQ(j[0]["records_added"], 4);
  EXPECT_EQ(j[0]["settings_added"], 1);
  EXPECT_EQ(count_records(d.file("b.db")), 4u);
  CliRun best_a = run_cli(d, {"best", "--db", d.file("a.db"), "--json"}, "best_a");
  CliRun best_b = run_cli(d, {"best", "--db", d.file("b.db"), "--json"}, "best_b");
  ASSERT_EQ(best_b.status, 0) << best_b.err;
  const auto ja = nlohmann::json::parse(last_line(best_a.out)),
             jb = nlohmann::json::parse(last_line(best_b.out));
  ASSERT_EQ(jb.size(), 1u);
  EXPECT_EQ(jb[0]["records"], ja[0]["records"]); // same times, same record ids

  // A database of a model's cold-timed tasks refuses the hot records, and keeps its own.
  std::ofstream(d.file("gemv.json")) << R"JSON({"name": "gemv", "tasks": [
      {"workload": "dense(M=1,N=64,K=64,bias=0,act=none)"}]})JSON";
  std::vector<std::string> cold =
      tune_args(d.file("c.db"), "dense(M=1,N=64,K=64,bias=0,act=none)", 2);
  cold.insert(cold.end(), {"--model", d.file("gemv.json")});
  ASSERT_EQ(run_cli(d, cold, "cold").status, 0);
  CliRun refused = run_cli(d, {"db", "import", "--db", d.file("c.db"), d.file("a.jsonl")}, "ref");
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("'off'"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("'memory-bound'"), std::string::npos) << refused.err;
  EXPECT_EQ(count_records(d.file("c.db")), 2u);

  // A line that is not JSON is skipped, named by file and line; the rest is imported.
  std::ifstream in(d.file("a.jsonl"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(d.file("bad.jsonl")) << text << "{oops\n";
  CliRun bad = run_cli(d, {"db", "import", "--db", d.file("e.db"), d.file("bad.jsonl")}, "bad");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("bad.jsonl:"), std::string::npos) << bad.err;
  EXPECT_EQ(count_records(d.file("e.db")), 4u);

  // Records of another CPU are imported, and said to be of another machine's target.
  const std::string other =
      std::regex_replace(text, std::regex("-mcpu=[^ \"]+"), "-mcpu=otherchip");
  ASSERT_NE(other, text) << "no -mcpu in the records' targets";
  std::ofstream(d.file("other.jsonl")) << other;
  CliRun foreign =
      run_cli(d, {"db", "import", "--db", d.file("f.db"), d.file("other.jsonl")}, "foreign");
  EXPECT_EQ(foreign.status, 0) << foreign.err;
  EXPECT_NE(foreign.err.find("4 record(s) are for 'llvm -mcpu=otherchip', not this machine's"),
            std::string::npos)
      << foreign.err;
  EXPECT_EQ(count_records(d.file("f.db")), 4u);
  EXPECT_EQ(im.err.find("not this machine's"), std::string::npos) << im.err;

  CliRun dir = run_cli(d, {"db", "import", "--db", d.file("e.db"), d.dir.string()}, "dir");
  EXPECT_EQ(dir.status, 1);
  EXPECT_NE(dir.err.find("is a directory"), std::string::npos) << dir.err;

  CliRun ok = run_cli(d, {"db", "check", "--db", d.file("b.db")}, "check");
  EXPECT_EQ(ok.status, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("sound"), std::string::npos) << ok.out;
  std::ofstream(d.file("junk.db")) << "not a database at all, just some text";
  CliRun junk = run_cli(d, {"db", "check", "--db", d.file("junk.db")}, "junk");
  EXPECT_EQ(junk.status, 1);
  EXPECT_NE(junk.err.find("junk.db"), std::string::npos) << junk.err;
}

TEST(TuneCli, UnknownWorkloadIsAnError) {
  TempDir d;
  CliRun r = run_cli(d, tune_args(d.file("t.db"), "matmull(M=4)", 4), "bad");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("matmull"), std::string::npos) << r.err;
}

} // namespace
} // namespace mt
