// The on-disk reference cache (core/measure/reference_cache.h) with the real interpreter: a second
// call loads what the first stored, bit-identical to Reference::compute; the key separates
// seeds and ignores names; a truncated, corrupted, foreign-shaped or foreign-input file is
// reported, recomputed and rewritten; a disabled or unwritable cache still gives the right
// reference; the default directory follows the environment; the tuner and the CLI use it.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../scoped_env.h"
#include "core/ir/structural.h"
#include "core/measure/reference_cache.h"
#include "core/tuner/tune_log.h"
#include "core/tuner/tuner.h"
#include "core/workload/library.h"
#include "tune_test_util.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

const char* kSpec = "matmul(M=64,N=64,K=64)";

// A fresh directory under /tmp, unique per process and test, removed at the end.
struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() /
          ("mt_refcache_test_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir, ec);
  }
  std::string str() const { return dir.string(); }
};

using mt::test::ScopedEnv;

void expect_bit_identical(const Reference& a, const Reference& b) {
  ASSERT_EQ(a.args.size(), b.args.size());
  EXPECT_EQ(a.is_output, b.is_output);
  for (size_t i = 0; i < a.args.size(); ++i) {
    ASSERT_EQ(a.args[i].dtype(), b.args[i].dtype()) << "param " << i;
    ASSERT_EQ(a.args[i].shape(), b.args[i].shape()) << "param " << i;
    EXPECT_EQ(std::memcmp(a.args[i].data(), b.args[i].data(), a.args[i].nbytes()), 0)
        << "param " << i;
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// load_or_compute_reference with the warnings it logs captured.
Reference load_capturing(const Function& w, uint64_t seed, const std::string& dir,
                         ReferenceCacheInfo& info, std::string& log) {
  configure_logging("warn");
  ::testing::internal::CaptureStderr();
  Reference r = load_or_compute_reference(w, seed, dir, 0, &info);
  log = ::testing::internal::GetCapturedStderr();
  return r;
}

// A damaged file in place of a good one: reported naming the file and `reason`, recomputed
// correctly, rewritten (the next call loads it).
void expect_recovers(const Function& w, const std::string& dir, const std::string& reason) {
  std::string file = reference_cache_file(dir, w, 1);
  ReferenceCacheInfo info;
  std::string log;
  Reference r = load_capturing(w, 1, dir, info, log);
  EXPECT_FALSE(info.from_cache);
  EXPECT_NE(info.load_problem.find(reason), std::string::npos) << info.load_problem;
  EXPECT_NE(log.find(file), std::string::npos) << log;
  EXPECT_NE(log.find(reason), std::string::npos) << log;
  EXPECT_TRUE(info.stored);
  expect_bit_identical(r, Reference::compute(w, 1));
  ReferenceCacheInfo again;
  Reference r2 = load_or_compute_reference(w, 1, dir, 0, &again);
  EXPECT_TRUE(again.from_cache) << again.load_problem;
  expect_bit_identical(r2, r);
}

TEST(ReferenceCache, SecondCallLoadsWhatTheFirstStored) {
  TempDir tmp;
  Function w = make_workload(kSpec);
  ReferenceCacheInfo first;
  Reference a = load_or_compute_reference(w, 1, tmp.str(), 0, &first);
  EXPECT_FALSE(first.from_cache);
  EXPECT_TRUE(first.stored) << first.store_problem;
  EXPECT_TRUE(first.load_problem.empty());
  EXPECT_TRUE(fs::is_regular_file(first.file));
  EXPECT_EQ(fs::path(first.file).parent_path(), tmp.dir);
  // The key is visible in the name: structural hash, seed, format version.
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(structural_hash(w)));
  EXPECT_EQ(fs::path(first.file).filename().string(),
            std::string(hash) + "-s1-v" + std::to_string(kReferenceCacheVersion) + ".mtref");
  // Only the outputs are stored: C is 64*64 floats, plus a header far smaller than an input.
  EXPECT_GE(fs::file_size(first.file), 64u * 64 * 4);
  EXPECT_LT(fs::file_size(first.file), 64u * 64 * 4 + 1024);

  ReferenceCacheInfo second;
  Reference b = load_or_compute_reference(w, 1, tmp.str(), 0, &second);
  EXPECT_TRUE(second.from_cache) << second.load_problem;
  EXPECT_FALSE(second.stored);
  EXPECT_EQ(second.file, first.file);

  Reference direct = Reference::compute(w, 1);
  expect_bit_identical(a, direct);
  expect_bit_identical(b, direct);
  // The loaded outputs are real results, not the NaN placeholders.
  for (size_t i = 0; i < b.args.size(); ++i) {
    if (b.is_output[i]) {
      EXPECT_FALSE(std::isnan(b.args[i].get_double(0)));
    }
  }
  // fresh_args of a loaded reference: inputs as computed, outputs unwritten again.
  std::vector<NDArray> fresh = b.fresh_args();
  for (size_t i = 0; i < fresh.size(); ++i) {
    if (b.is_output[i]) {
      EXPECT_TRUE(std::isnan(fresh[i].get_double(0)));
    }
  }
  EXPECT_DOUBLE_EQ(b.compute_seconds, a.compute_seconds);
}

TEST(ReferenceCache, SameComputationUnderAnotherNameSharesTheFile) {
  TempDir tmp;
  Function w = make_workload(kSpec);
  ReferenceCacheInfo first;
  load_or_compute_reference(w, 1, tmp.str(), 0, &first);
  Function renamed = w;
  renamed.name = "layer7_matmul";
  ReferenceCacheInfo second;
  Reference r = load_or_compute_reference(renamed, 1, tmp.str(), 0, &second);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.file, first.file);
  expect_bit_identical(r, Reference::compute(w, 1));
}

TEST(ReferenceCache, AnotherSeedIsAnotherFileAndResult) {
  TempDir tmp;
  Function w = make_workload(kSpec);
  ReferenceCacheInfo i1, i2;
  Reference r1 = load_or_compute_reference(w, 1, tmp.str(), 0, &i1);
  Reference r2 = load_or_compute_reference(w, 2, tmp.str(), 0, &i2);
  EXPECT_FALSE(i2.from_cache);
  EXPECT_NE(i1.file, i2.file);
  EXPECT_NE(i2.file.find("-s2-"), std::string::npos) << i2.file;
  EXPECT_TRUE(fs::is_regular_file(i1.file));
  EXPECT_TRUE(fs::is_regular_file(i2.file));
  expect_bit_identical(r2, Reference::compute(w, 2));
  size_t out = 2; // matmul(A, B, C): C is written
  ASSERT_TRUE(r1.is_output[out]);
  EXPECT_NE(std::memcmp(r1.args[out].data(), r2.args[out].data(), r1.args[out].nbytes()), 0);
  // Each seed loads its own file afterwards.
  ReferenceCacheInfo j1, j2;
  expect_bit_identical(load_or_compute_reference(w, 1, tmp.str(), 0, &j1), r1);
  expect_bit_identical(load_or_compute_reference(w, 2, tmp.str(), 0, &j2), r2);
  EXPECT_TRUE(j1.from_cache);
  EXPECT_TRUE(j2.from_cache);
}

TEST(ReferenceCache, TruncatedFileIsRecomputedAndRewritten) {
  TempDir tmp;
  Function w = make_workload(kSpec);
  ReferenceCacheInfo info;
  load_or_compute_reference(w, 1, tmp.str(), 0, &info);
  uintmax_t size = fs::file_size(info.file);
  fs::resize_file(info.file, size / 2);
  expect_recovers(w, tmp.str(), "truncated");
  EXPECT_EQ(fs::file_size(info.file), size);
  // Cut inside the header too.
  fs::resize_file(info.file, 20);
  expect_recovers(w, tmp.str(), "truncated");
}

TEST(ReferenceCache, FlippedPayloadByteFailsTheChecksum) {
  TempDir tmp;
  Function w = make_workload(kSpec);
  ReferenceCacheInfo info;
  load_or_compute_reference(w, 1, tmp.str(), 0, &info);
  std::string bytes = slurp(info.file);
  bytes[bytes.size() - 100] ^= 0x01; // one bit of one output element
  write_file(info.file, bytes);
  expect_recovers(w, tmp.str(), "checksum");
  EXPECT_EQ(slurp(info.file).size(), bytes.size());
  EXPECT_NE(slurp(info.file), bytes);
}

TEST(ReferenceCache, FileOfAnotherShapeIsNotUsed) {
  TempDir tmp;
  Function small = make_workload("matmul(M=32,N=64,K=64)");
  Function w = make_workload(kSpec);
  ReferenceCacheInfo info;
  load_or_compute_reference(small, 1, tmp.str(), 0, &info);
  // The smaller workload's file where the larger one's belongs.
  fs::copy_file(info.file, reference_cache_file(tmp.str(), w, 1));
  expect_recovers(w, tmp.str(), "the workload's is");
}

TEST(ReferenceCache, FileWhoseInputsDifferIsNotUsed) {
  TempDir tmp;
  Function w = make_workload(kSpec);
  ReferenceCacheInfo info;
  load_or_compute_reference(w, 1, tmp.str(), 0, &info);
  // As if the file came from a build whose random inputs differ: the input checksum (after
  // magic 8, version 4, params 4, hash 8, seed 8) no longer matches the regenerated inputs.
  std::string bytes = slurp(info.file);
  bytes[32] ^= 0x40;
  write_file(info.file, bytes);
  expect_recovers(w, tmp.str(), "inputs differ");
}

TEST(ReferenceCache, OtherFormatVersionIsNotUsed) {
  TempDir tmp;
  Function w = make_workload(kSpec);
  ReferenceCacheInfo info;
  load_or_compute_reference(w, 1, tmp.str(), 0, &info);
  std::string bytes = slurp(info.file);
  uint32_t other = kReferenceCacheVersion + 1;
  std::memcpy(&bytes[8], &other, sizeof other);
  write_file(info.file, bytes);
  expect_recovers(w, tmp.str(), "format version");
}

TEST(ReferenceCache, DisabledCacheWritesNothing) {
  TempDir tmp;
  // Even with every default pointing at tmp, an empty directory means no cache.
  ScopedEnv e1("METATUNE_CACHE_DIR", tmp.str());
  ScopedEnv e2("XDG_CACHE_HOME", tmp.str());
  ScopedEnv e3("HOME", tmp.str());
  Function w = make_workload(kSpec);
  ReferenceCacheInfo info;
  Reference r = load_or_compute_reference(w, 1, "", 0, &info);
  EXPECT_FALSE(info.from_cache);
  EXPECT_FALSE(info.stored);
  EXPECT_TRUE(info.file.empty());
  EXPECT_TRUE(fs::is_empty(tmp.dir));
  expect_bit_identical(r, Reference::compute(w, 1));
}

TEST(ReferenceCache, UnwritableDirectoryStillGivesTheReference) {
  TempDir tmp;
  write_file((tmp.dir / "plain_file").string(), "not a directory");
  std::string dir = (tmp.dir / "plain_file" / "reference").string();
  Function w = make_workload(kSpec);
  ReferenceCacheInfo info;
  std::string log;
  Reference r = load_capturing(w, 1, dir, info, log);
  EXPECT_FALSE(info.from_cache);
  EXPECT_FALSE(info.stored);
  EXPECT_FALSE(info.store_problem.empty());
  EXPECT_NE(log.find("not written"), std::string::npos) << log;
  expect_bit_identical(r, Reference::compute(w, 1));

  // A directory without write permission (unless running as root, which may write anyway).
  if (geteuid() != 0) {
    fs::path ro = tmp.dir / "read_only";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    ReferenceCacheInfo info2;
    Reference r2 = load_capturing(w, 1, ro.string(), info2, log);
    EXPECT_FALSE(info2.stored);
    EXPECT_NE(log.find(ro.string()), std::string::npos) << log;
    expect_bit_identical(r2, Reference::compute(w, 1));
    EXPECT_TRUE(fs::is_empty(ro));
    fs::permissions(ro, fs::perms::owner_all);
  }
}

TEST(ReferenceCache, DefaultDirectoryFollowsTheEnvironment) {
  {
    ScopedEnv e1("METATUNE_CACHE_DIR", "/x/mt");
    ScopedEnv e2("XDG_CACHE_HOME", "/x/xdg");
    ScopedEnv e3("HOME", "/x/home");
    EXPECT_EQ(default_reference_cache_dir(), "/x/mt/reference");
  }
  {
    ScopedEnv e1("METATUNE_CACHE_DIR", std::nullopt);
    ScopedEnv e2("XDG_CACHE_HOME", "/x/xdg");
    ScopedEnv e3("HOME", "/x/home");
    EXPECT_EQ(default_reference_cache_dir(), "/x/xdg/metatune/reference");
  }
  {
    ScopedEnv e1("METATUNE_CACHE_DIR", "");
    ScopedEnv e2("XDG_CACHE_HOME", std::nullopt);
    ScopedEnv e3("HOME", "/x/home");
    EXPECT_EQ(default_reference_cache_dir(), "/x/home/.cache/metatune/reference");
    EXPECT_EQ(TuneOptions().reference_cache_dir, "/x/home/.cache/metatune/reference");
  }
  {
    ScopedEnv e1("METATUNE_CACHE_DIR", std::nullopt);
    ScopedEnv e2("XDG_CACHE_HOME", std::nullopt);
    ScopedEnv e3("HOME", std::nullopt);
    EXPECT_EQ(default_reference_cache_dir(), "");
  }
}

// The tuner stores the task's reference on the first run and loads it on the resumed one.
TEST(ReferenceCache, TunerStoresThenLoads) {
  TempDir tmp;
  tune_test::TempDb db;
  std::string cache = (tmp.dir / "cache").string();
  TuneOptions o = tune_test::quick_options(db.path, 4);
  o.reference_cache_dir = cache;
  Function w = make_workload(kSpec);
  std::string file = reference_cache_file(cache, w, o.seed);

  configure_logging("info");
  ::testing::internal::CaptureStderr();
  TuneResult r1 = tune(tune_test::host(), {{kSpec, {}, 1}}, o);
  std::string log1 = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r1.trials, 4u);
  EXPECT_NE(log1.find("reference computed in"), std::string::npos) << log1;
  ASSERT_TRUE(fs::is_regular_file(file));
  auto written = fs::last_write_time(file);

  o.trials = 8;
  ::testing::internal::CaptureStderr();
  TuneResult r2 = tune(tune_test::host(), {{kSpec, {}, 1}}, o);
  std::string log2 = ::testing::internal::GetCapturedStderr();
  configure_logging("warn");
  EXPECT_EQ(r2.trials, 4u);
  EXPECT_NE(log2.find("reference loaded from cache (" + file + ")"), std::string::npos) << log2;
  EXPECT_EQ(fs::last_write_time(file), written);
  // The loaded reference checked the candidates: the successful ones were not refused.
  EXPECT_TRUE(std::isfinite(r2.tasks.at(0).best_seconds));
}

// A large task's reference comes from the tuning target's unscheduled build: close to the
// interpreter's (not bit-identical: another summation order may round differently), filed
// under its own key, and it checks the candidates as the interpreter's does.
TEST(ReferenceCache, LargeTasksGetTheirReferenceFromTheTargetsUnscheduledBuild) {
  TempDir tmp;
  tune_test::TempDb db;
  std::string cache = (tmp.dir / "cache").string();
  const char* spec = "dense(M=48,N=40,K=56)";
  Function w = make_workload(spec);
  TuneOptions o = tune_test::quick_options(db.path, 4);
  o.reference_cache_dir = cache;
  o.reference_by_target_flops = 0; // every task
  configure_logging("info");
  ::testing::internal::CaptureStderr();
  TuneResult r = tune(tune_test::host(), {{spec, {}, 1}}, o);
  std::string log = ::testing::internal::GetCapturedStderr();
  configure_logging("warn");
  EXPECT_NE(log.find("reference computed by llvm.cpu (unscheduled, outer loops parallel)"),
            std::string::npos)
      << log;
  EXPECT_TRUE(std::isfinite(r.tasks.at(0).best_seconds)) << "every candidate refused";
  std::string file = reference_cache_file(cache, w, o.seed, "llvm.cpu+parallel");
  EXPECT_NE(file, reference_cache_file(cache, w, o.seed));
  ASSERT_TRUE(fs::is_regular_file(file));
  EXPECT_FALSE(fs::exists(reference_cache_file(cache, w, o.seed)));

  // Its outputs (read back from the cache: the evaluator is not called) against the
  // interpreter's, on the same inputs.
  Reference::Evaluator cached_only{"llvm.cpu+parallel", {}};
  ReferenceCacheInfo info;
  Reference by_target = load_or_compute_reference(w, o.seed, cache, 0, &info, &cached_only);
  EXPECT_TRUE(info.from_cache);
  Reference interpreted = Reference::compute(w, o.seed);
  ASSERT_EQ(by_target.args.size(), interpreted.args.size());
  for (size_t i = 0; i < w.params.size(); ++i) {
    std::string why;
    EXPECT_TRUE(allclose(by_target.args[i], interpreted.args[i], 1e-5, 1e-6, &why))
        << w.params[i]->name << ": " << why;
  }
}

// `metatune tune --reference-cache DIR` writes there; `--reference-cache none` writes nowhere,
// not even in $METATUNE_CACHE_DIR.
TEST(ReferenceCache, CliOption) {
  TempDir tmp;
  std::string cache = (tmp.dir / "cache").string();
  std::string env_cache = (tmp.dir / "env_cache").string();
  ScopedEnv env("METATUNE_CACHE_DIR", env_cache);
  auto run = [&](const std::string& cache_arg, const std::string& db) {
    pid_t pid = fork();
    if (pid == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execl(METATUNE_CLI, METATUNE_CLI, "tune", "--workload", kSpec, "--trials", "2",
            "--batch-size", "2", "--cost-model", "cost.Random", "--no-library", "--no-compare",
            "--repeats", "1", "--min-repeat-ms", "1", "--population", "32", "--db", db.c_str(),
            "-q", "--reference-cache", cache_arg.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  };
  EXPECT_EQ(run(cache, (tmp.dir / "a.db").string()), 0);
  EXPECT_TRUE(fs::is_regular_file(reference_cache_file(cache, make_workload(kSpec), 1)));
  EXPECT_EQ(run("none", (tmp.dir / "b.db").string()), 0);
  EXPECT_FALSE(fs::exists(env_cache));
}

} // namespace
} // namespace mt
