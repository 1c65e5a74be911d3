// `metatune model run` end to end on a small config tree: it instantiates, fuses, builds and
// runs the model and names the next token; a misspelt field fails with the file, the path and
// a did-you-mean, and a non-zero exit status.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_run.h"
#include "core/database/database.h"

namespace {

using mt::graph_test::metatune;
using mt::graph_test::read_npy_floats;
using Result = mt::graph_test::CliResult;

const std::string kData = std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/";
// `model tune` of the tiny GPT in seconds: no comparisons, checks or cost model, one short run
// per candidate. The tests add the shapes, trials and database.
const std::string kQuickTune = "model tune --config " + kData +
                               "tiny-gpt.json --no-compare --verify-top 0 --reference-cache none "
                               "--repeats 1 --min-repeat-ms 1 --cost-model none ";

// `args` exits non-zero and says `message`.
void expect_refused(const std::string& args, const std::string& message) {
  Result r = metatune(args);
  EXPECT_NE(r.status, 0) << args;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
}

TEST(ModelCli, RunsASmallDecoder) {
  Result r = metatune("model run --config " + kData + "tiny-gpt.json --seq 5 --repeats 1");
  EXPECT_EQ(r.status, 0) << r.output;
  // 2 embedding tables + 2 layers x 16 (2 norms, q/k/v and output projections, 2 linears,
  // each weight and bias) + the output norm's 2.
  EXPECT_NE(r.output.find("std.Decoder: 36 parameter tensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("latency"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("next token after the last position: "), std::string::npos) << r.output;
  // The same seed, the same weights, the same answer.
  Result again = metatune("model run --config " + kData + "tiny-gpt.json --seq 5 --repeats 1");
  auto token = [](const std::string& s) { return s.substr(s.find("next token")); };
  EXPECT_EQ(token(r.output), token(again.output));
  // Without --db the library's kernels where it has them (untuned where it has none or none
  // is loaded); said in the latency line.
  EXPECT_NE(r.output.find("library kernels"), std::string::npos) << r.output;
  Result untuned = metatune("model run --config " + kData +
                            "tiny-gpt.json --seq 5 --repeats 1 --implementations untuned");
  ASSERT_EQ(untuned.status, 0) << untuned.output;
  EXPECT_NE(untuned.output.find("untuned kernels"), std::string::npos) << untuned.output;
  auto id = [&](const std::string& s) { // the logit's last digits may differ
    std::string t = token(s);
    return t.substr(0, t.find(" (logit"));
  };
  EXPECT_EQ(id(r.output), id(untuned.output));
}

TEST(ModelCli, MisspeltFieldIsNamedWithTheFile) {
  Result r = metatune("model run --config " + kData + "tiny-gpt-typo.json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("tiny-gpt-typo.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean 'num_heads'"), std::string::npos) << r.output;
}

// The report's "new_tokens" as text ("[5, 7, 7]").
std::string new_tokens(const std::string& report_path) {
  FILE* f = std::fopen(report_path.c_str(), "r");
  if (!f) return "";
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, f))
    text.append(buf, n);
  std::fclose(f);
  size_t a = text.find("\"new_tokens\"");
  if (a == std::string::npos) return "";
  a = text.find('[', a);
  const size_t end = text.find(']', a);
  if (end == std::string::npos) return "";
  std::string list;
  for (size_t i = a; i <= end; ++i)
    if (!std::isspace(static_cast<unsigned char>(text[i]))) list += text[i];
  return list;
}

// `model tune` edits the search space with the same flags as `tune`: with the rule list replaced
// by one without any tiling rule, no record of any task was tiled; a rule name that no plugin
// registers is an error naming the flag. --tasks narrows the tasks by name.
TEST(ModelCli, TuneTakesTheSearchSpaceFlags) {
  const std::string db = ::testing::TempDir() + "/model_tune_rules.db";
  std::remove(db.c_str());
  const std::string tune = "model tune --config " + kData +
                           "tiny-gpt.json --seq 4 --trials 12 --no-library --no-compare "
                           "--verify-top 0 --reference-cache none --repeats 1 "
                           "--min-repeat-ms 1 --cost-model none -q --db " +
                           db;
  Result r = metatune(tune + " --rules std.AutoInline,std.ParallelVectorizeUnroll");
  ASSERT_EQ(r.status, 0) << r.output;
  mt::DatabaseOptions ro;
  ro.read_only = true;
  std::unique_ptr<mt::Database> d = mt::Database::open(db, ro);
  size_t records = 0;
  for (const mt::WorkloadEntry& w : d->workloads())
    for (const mt::TuningRecord& rec : d->records(w.id)) {
      ++records;
      EXPECT_EQ(rec.trace_json.find("tiling_structure"), std::string::npos) << rec.trace_json;
      EXPECT_EQ(rec.trace_json.find("rfactor"), std::string::npos) << rec.trace_json;
    }
  EXPECT_GE(records, 12u);
  // --tasks keeps the tasks whose names match; none matching is an error that lists them.
  Result some = metatune(tune + " --tasks 'fused_lm_head$'");
  EXPECT_EQ(some.status, 0) << some.output;
  EXPECT_NE(some.output.find("--tasks: 1 tasks"), std::string::npos) << some.output;
  Result none = metatune(tune + " --tasks no_such_task");
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.output.find("--tasks 'no_such_task' matches none of the tasks:"),
            std::string::npos)
      << none.output;
  EXPECT_NE(none.output.find("fused_lm_head"), std::string::npos) << none.output;
  Result typo = metatune(tune + " --rules +std.NoSuchRule");
  EXPECT_NE(typo.status, 0);
  EXPECT_NE(typo.output.find("--rules flag: schedule rule 'std.NoSuchRule' is not registered"),
            std::string::npos)
      << typo.output;
  std::remove(db.c_str());
}

// `model tune` ends by timing the library's and the tuned kernels inside the model; each task
// both implement gets the faster one as the database's model choice, which `best` follows
// (said in the profile's notes).
TEST(ModelCli, TuneChoosesEachTasksKernelInsideTheModel) {
  if (metatune("plugins").output.find("onednn.cpu") == std::string::npos)
    GTEST_SKIP() << "the oneDNN target is not built: no library to compare with";
  const std::string db = ::testing::TempDir() + "/model_tune_choice.db";
  std::remove(db.c_str());
  Result r = metatune(kQuickTune + "--seq 4 --trials 12 --model-choice-rounds 3 --db " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("in the model: library kernels"), std::string::npos) << r.output;
  // Each task's faster kernel, unless the whole model timed unprofiled was faster with one side
  // alone: then every compared task's choice is that side's.
  const size_t whole = r.output.find("whole model: each task's faster ");
  ASSERT_NE(whole, std::string::npos) << r.output;
  const std::string verdict = r.output.substr(whole, r.output.find('\n', whole) - whole);
  const bool all_tuned = verdict.find("all tuned kept") != std::string::npos;
  const bool all_library = verdict.find("all library kept") != std::string::npos;
  mt::DatabaseOptions ro;
  ro.read_only = true;
  std::unique_ptr<mt::Database> d = mt::Database::open(db, ro);
  std::set<int64_t> choices;
  for (const mt::WorkloadEntry& w : d->workloads())
    for (const mt::TuningRecord& rec : d->records(w.id)) {
      std::optional<mt::ModelChoice> c = d->model_choice(w.id, rec.target);
      if (!c) continue;
      choices.insert(w.id);
      EXPECT_TRUE(c->implementation == "tuned" || c->implementation == "onednn.cpu")
          << c->implementation;
      EXPECT_GT(c->tuned_seconds, 0);
      EXPECT_GT(c->library_seconds, 0);
      const bool tuned = c->implementation == "tuned";
      if (all_tuned || all_library)
        EXPECT_EQ(tuned, all_tuned) << verdict;
      else
        EXPECT_EQ(tuned, c->tuned_seconds <= c->library_seconds) << verdict;
    }
  EXPECT_FALSE(choices.empty()) << r.output;
  Result bench =
      metatune("model bench --config " + kData +
               "tiny-gpt.json --seq 4 --policies best --repeats 1 --profile -q --db " + db);
  ASSERT_EQ(bench.status, 0) << bench.output;
  EXPECT_NE(bench.output.find("faster in the model: "), std::string::npos) << bench.output;
  std::remove(db.c_str());
}

// With --buckets the tasks tuned are every bucket's (their shapes differ), so every bucket's
// model is compared: choices for tasks of the bucket of 4 and of the bucket of 8 (told apart
// by their IR's shapes), not only of the model at --seq.
TEST(ModelCli, TuneWithBucketsChoosesInEveryBucket) {
  if (metatune("plugins").output.find("onednn.cpu") == std::string::npos)
    GTEST_SKIP() << "the oneDNN target is not built: no library to compare with";
  const std::string db = ::testing::TempDir() + "/model_tune_bucket_choice.db";
  std::remove(db.c_str());
  Result r = metatune(kQuickTune +
                      "--seq 6 --buckets 4,8 --trials 30 --model-choice-rounds 2 -q --db " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("in the buckets' models (summed): library kernels"), std::string::npos)
      << r.output;
  mt::DatabaseOptions ro;
  ro.read_only = true;
  std::unique_ptr<mt::Database> d = mt::Database::open(db, ro);
  std::set<int> buckets;
  for (const mt::WorkloadEntry& w : d->workloads())
    for (const mt::TuningRecord& rec : d->records(w.id)) {
      if (!d->model_choice(w.id, rec.target)) continue;
      for (int b : {4, 8})
        if (w.ir_text.find("[1, " + std::to_string(b) + ", ") != std::string::npos)
          buckets.insert(b);
      EXPECT_EQ(w.ir_text.find("[1, 6, "), std::string::npos) << "a task of --seq 6 compared";
    }
  EXPECT_EQ(buckets, (std::set<int>{4, 8})) << r.output;
  std::remove(db.c_str());
}

// `model tune --fpmath bf16` tunes and times the kernels inside the model as `--fpmath bf16`
// runs them and keeps those records and choices apart from the f32 ones: `best --fpmath bf16`
// follows them, `best` in f32 does not.
TEST(ModelCli, TuneWithFpmathBf16KeepsItsChoicesApart) {
  if (metatune("plugins").output.find("onednn.cpu") == std::string::npos)
    GTEST_SKIP() << "the oneDNN target is not built: no library to compare with";
  const std::string db = ::testing::TempDir() + "/model_tune_choice_bf16.db";
  std::remove(db.c_str());
  Result r = metatune(kQuickTune +
                      "--seq 4 --trials 12 --model-choice-rounds 2 --fpmath bf16 -q --db " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("in the model: library kernels"), std::string::npos) << r.output;
  {
    mt::DatabaseOptions ro;
    ro.read_only = true;
    std::unique_ptr<mt::Database> d = mt::Database::open(db, ro);
    // The tuned kernels' records are filed under the target with -fpmath=bf16 (their products
    // may round), and so are the choices; none under the f32 key.
    const std::string option = " -fpmath=bf16";
    size_t bf16 = 0, f32 = 0, bf16_records = 0;
    for (const mt::WorkloadEntry& w : d->workloads())
      for (const mt::TuningRecord& rec : d->records(w.id)) {
        if (rec.target.rfind("llvm", 0) != 0) continue; // the library's own records
        ASSERT_TRUE(rec.target.ends_with(option)) << rec.target;
        ++bf16_records;
        bf16 += d->model_choice(w.id, rec.target).has_value();
        f32 += d->model_choice(w.id, rec.target.substr(0, rec.target.size() - option.size()))
                   .has_value();
      }
    EXPECT_GT(bf16_records, 0u) << r.output;
    EXPECT_GT(bf16, 0u) << r.output;
    EXPECT_EQ(f32, 0u) << "a bf16 comparison stored as an f32 choice";
  }
  const std::string bench = "model bench --config " + kData +
                            "tiny-gpt.json --seq 4 --policies best --repeats 1 --profile -q --db " +
                            db;
  Result with = metatune(bench + " --fpmath bf16");
  ASSERT_EQ(with.status, 0) << with.output;
  EXPECT_NE(with.output.find("faster in the model: "), std::string::npos) << with.output;
  Result without = metatune(bench);
  ASSERT_EQ(without.status, 0) << without.output;
  EXPECT_EQ(without.output.find("faster in the model: "), std::string::npos) << without.output;
  // `metatune best` shows them under the records, said to be bf16's.
  Result best = metatune("best --db " + db);
  ASSERT_EQ(best.status, 0) << best.output;
  EXPECT_NE(best.output.find("in the model with bf16 weights: tuned "), std::string::npos)
      << best.output;
  EXPECT_EQ(best.output.find("in the model: tuned "), std::string::npos) << best.output;
  std::remove(db.c_str());
}

// With --decode-capacities the choice is made in generation too (the library's kernels with
// their weights packed, as `model generate` runs them): the decode step's tasks get choices,
// which `model generate --db` follows.
TEST(ModelCli, TuneChoosesTheDecodeStepsKernelsInGeneration) {
  if (metatune("plugins").output.find("onednn.cpu") == std::string::npos)
    GTEST_SKIP() << "the oneDNN target is not built: no library to compare with";
  const std::string db = ::testing::TempDir() + "/model_tune_generation_choice.db";
  std::remove(db.c_str());
  Result r = metatune(
      kQuickTune + "--seq 4 --decode-capacities 16 --trials 40 --model-choice-rounds 2 --db " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("in generation: library kernels"), std::string::npos) << r.output;
  // The decode step timed whole too; where one side alone was the faster, every choice of the
  // step's compared tasks went to it.
  const size_t whole = r.output.find("decode step at capacity 16, whole: ");
  ASSERT_NE(whole, std::string::npos) << r.output;
  const std::string verdict = r.output.substr(whole, r.output.find('\n', whole) - whole);
  {
    mt::DatabaseOptions ro;
    ro.read_only = true;
    std::unique_ptr<mt::Database> d = mt::Database::open(db, ro);
    size_t decode_choices = 0, tuned = 0;
    for (const mt::WorkloadEntry& w : d->workloads())
      for (const mt::TuningRecord& rec : d->records(w.id)) {
        std::optional<mt::ModelChoice> c = d->model_choice(w.id, rec.target);
        if (!c || w.spec.find("@decode16/") == std::string::npos) continue;
        ++decode_choices;
        tuned += c->implementation == "tuned";
      }
    EXPECT_GT(decode_choices, 0u) << r.output;
    if (verdict.find("all tuned kept") != std::string::npos) {
      EXPECT_EQ(tuned, decode_choices) << verdict;
    }
    if (verdict.find("all library kept") != std::string::npos) {
      EXPECT_EQ(tuned, 0u) << verdict;
    }
  }
  Result g = metatune("model generate --config " + kData +
                      "tiny-gpt.json --prompt-ids 5,60,17,2 --max-new-tokens 3 --capacities 16 "
                      "--profile --db " +
                      db);
  ASSERT_EQ(g.status, 0) << g.output;
  const size_t decode = g.output.find("per task (decode steps at capacity 16");
  ASSERT_NE(decode, std::string::npos) << g.output;
  EXPECT_NE(g.output.find("faster in the model: ", decode), std::string::npos) << g.output;
  std::remove(db.c_str());
}

TEST(ModelCli, GeneratesWithTheCacheWhatTheWholeModelPredicts) {
  const std::string report = ::testing::TempDir() + "/generate.json";
  Result g = metatune("model generate --config " + kData +
                      "tiny-gpt.json --prompt-ids 5,60,17 --max-new-tokens 6 --capacities 8,16 "
                      "--report-json " +
                      report);
  ASSERT_EQ(g.status, 0) << g.output;
  EXPECT_NE(g.output.find("5 decode steps"), std::string::npos) << g.output;
  EXPECT_NE(g.output.find("tokens/s"), std::string::npos) << g.output;
  std::string tokens = new_tokens(report);
  ASSERT_FALSE(tokens.empty()) << "no new_tokens in " << report;
  // The first new token is what a whole-sequence run of the prompt predicts next.
  Result r = metatune("model run --config " + kData + "tiny-gpt.json --tokens 5,60,17 --repeats 1");
  ASSERT_EQ(r.status, 0) << r.output;
  std::string next = r.output.substr(r.output.find("position: ") + 10);
  next = next.substr(0, next.find(' '));
  EXPECT_EQ(tokens.substr(1, tokens.find_first_of(",]") - 1), next) << tokens << " vs " << next;
  // Sampling with a seed is reproducible.
  const std::string a = ::testing::TempDir() + "/sample_a.json",
                    b = ::testing::TempDir() + "/sample_b.json";
  const std::string sample = "model generate --config " + kData +
                             "tiny-gpt.json --prompt-ids 1,2 --max-new-tokens 8 --temperature "
                             "0.8 --top-k 5 --sampling-seed 3 --report-json ";
  ASSERT_EQ(metatune(sample + a).status, 0);
  ASSERT_EQ(metatune(sample + b).status, 0);
  EXPECT_EQ(new_tokens(a), new_tokens(b));
}

// A database tuned for other shapes (here: none): generation runs, names the graphs whose
// kernels have no record, and gives the flags that tune them; the tokens are the untuned ones.
TEST(ModelCli, GenerateNamesTheGraphsADatabaseHasNoRecordsFor) {
  const std::string db = ::testing::TempDir() + "/generate_empty.db";
  std::remove(db.c_str());
  mt::Database::open(db);
  const std::string gen =
      "model generate --config " + kData +
      "tiny-gpt.json --prompt-ids 5,60,17 --max-new-tokens 6 --capacities 8,16 ";
  const std::string with_db = ::testing::TempDir() + "/generate_with_db.json",
                    without = ::testing::TempDir() + "/generate_without_db.json";
  Result g = metatune(gen + "--db " + db + " --report-json " + with_db);
  ASSERT_EQ(g.status, 0) << g.output;
  EXPECT_NE(g.output.find("have no record in " + db + " (decode@8, decode@16, prefill@3)"),
            std::string::npos)
      << g.output;
  EXPECT_NE(g.output.find("--seq 3 --decode-capacities 8,16"), std::string::npos) << g.output;
  ASSERT_EQ(metatune(gen + "--implementations untuned --report-json " + without).status, 0);
  EXPECT_EQ(new_tokens(with_db), new_tokens(without));
  // No database at all: the library's kernels, and the same way to tune them.
  Result plain = metatune(gen);
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_NE(plain.output.find("no tuning database (--db)"), std::string::npos) << plain.output;
  EXPECT_NE(plain.output.find("--seq 3 --decode-capacities 8,16, then --db tune.db"),
            std::string::npos)
      << plain.output;
  std::remove(db.c_str());
}

// Tuning for generation covers what generation runs: the decode steps, and the prefill's LM
// head of the last position (core/graph/last_position.h); generating then finds a record for
// every kernel, and the tokens are those of the unscheduled kernels.
TEST(ModelCli, TuningForGenerationCoversThePrefillAndTheDecodeSteps) {
  const std::string db = ::testing::TempDir() + "/generate_tuned.db";
  std::remove(db.c_str());
  Result t = metatune(
      kQuickTune + "--seq 4 --decode-capacities 8 --trials 60 --model-choice-rounds 0 --db " + db);
  ASSERT_EQ(t.status, 0) << t.output;
  EXPECT_NE(t.output.find("@prefill4/"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("@decode8/"), std::string::npos) << t.output;
  const std::string gen = "model generate --config " + kData +
                          "tiny-gpt.json --prompt-ids 5,60,17,2 --max-new-tokens 3 --capacities 8 ";
  const std::string tuned = ::testing::TempDir() + "/generate_tuned.json",
                    untuned = ::testing::TempDir() + "/generate_untuned.json";
  Result g = metatune(gen + "--db " + db + " --report-json " + tuned);
  ASSERT_EQ(g.status, 0) << g.output;
  EXPECT_EQ(g.output.find("have no record"), std::string::npos) << g.output;
  ASSERT_EQ(metatune(gen + "--implementations untuned --report-json " + untuned).status, 0);
  EXPECT_EQ(new_tokens(tuned), new_tokens(untuned));
  std::remove(db.c_str());
}

// --profile breaks down the prefill (runs of its own) and the decode steps, per task.
TEST(ModelCli, GenerateProfilesThePrefillAndTheDecodeSteps) {
  Result r = metatune("model generate --config " + kData +
                      "tiny-gpt.json --prompt-ids 5,60,17 --max-new-tokens 4 --capacities 8 "
                      "--profile");
  ASSERT_EQ(r.status, 0) << r.output;
  const size_t prefill = r.output.find("per task (the prefill of 3 tokens in the bucket of 3, "
                                       "median of 3"),
               decode = r.output.find("per task (decode steps at capacity 8, median of 3");
  ASSERT_NE(prefill, std::string::npos) << r.output;
  ASSERT_NE(decode, std::string::npos) << r.output;
  EXPECT_NE(r.output.substr(prefill, decode - prefill).find("@prefill3/fused_lm_head"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.substr(decode).find("@decode8/fused_lm_head"), std::string::npos) << r.output;
  // Without --db the library's kernels, their weights packed (and said so).
  if (metatune("plugins").output.find("onednn.cpu") != std::string::npos) {
    EXPECT_NE(r.output.find("onednn.cpu, weights packed"), std::string::npos) << r.output;
  }
}

// --fpmath bf16: the library's matmuls against the weights run on bf16 packings (the build
// log names them), or where the CPU has no bf16 instructions a warning says they stay f32.
TEST(ModelCli, FpmathBf16ReachesTheLibrarysMatmuls) {
  if (metatune("plugins").output.find("onednn.cpu") == std::string::npos)
    GTEST_SKIP() << "no onednn.cpu in this build";
  const std::string gen = "model generate --config " + kData +
                          "tiny-gpt.json --prompt-ids 5,60,17 --max-new-tokens 4 --capacities 8 ";
  Result r = metatune(gen + "--fpmath bf16 --log-level info");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(r.output.find("weights packed in bf16: ") != std::string::npos ||
              r.output.find("-fpmath=bf16 asked, but this CPU") != std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("decode steps"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("weights packed for their kernels: "), std::string::npos) << r.output;
  Result f32 = metatune(gen + "--log-level info");
  ASSERT_EQ(f32.status, 0) << f32.output;
  EXPECT_EQ(f32.output.find("in bf16"), std::string::npos) << f32.output;
  Result bad = metatune(gen + "--fpmath fp8");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("--fpmath"), std::string::npos) << bad.output;
}

TEST(ModelCli, GenerateRefusesAnEncoderAndABadPrompt) {
  expect_refused("model generate --config " + kData +
                     "tiny-bert.json --prompt-ids 1,2 --max-new-tokens 2",
                 "encoder");
  expect_refused("model generate --config " + kData +
                     "tiny-gpt.json --prompt-ids 1,999 --max-new-tokens 2",
                 "999");
  expect_refused("model generate --config " + kData +
                     "tiny-gpt.json --prompt 'hello' --max-new-tokens 2",
                 "needs a tokenizer");
}

// --text goes through the tokenizer: a BERT vocab.txt gives [CLS] hello world ##s [SEP].
TEST(ModelCli, RunTakesTextThroughTheTokenizer) {
  const std::string dir = ::testing::TempDir() + "/mt_cli_vocab";
  std::string mk = "mkdir -p " + dir +
                   " && printf '[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nhello\\nworld\\n##s\\n' > " + dir +
                   "/vocab.txt";
  ASSERT_EQ(std::system(mk.c_str()), 0);
  Result r = metatune("model run --config " + kData + "tiny-bert.json --tokenizer " + dir +
                      " --text 'Hello worlds' --repeats 1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("(batch 1, seq 5)"), std::string::npos) << r.output;
  Result none = metatune("model run --config " + kData + "tiny-bert.json --text 'hello'");
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.output.find("--text needs a tokenizer"), std::string::npos) << none.output;
}

// --with-token-types tunes the model that takes token types: a run with them then finds a
// record for every kernel, the type-reading embedding included (one without them does not).
TEST(ModelCli, TuneWithTokenTypesCoversTheirEmbedding) {
  const std::string db = ::testing::TempDir() + "/mt_cli_types.db";
  std::remove(db.c_str());
  const std::string bert = "--config " + kData + "tiny-bert.json ";
  Result t = metatune("model tune " + bert + "--seq 6 --with-token-types --trials 24 --db " + db +
                      " --no-compare --verify-top 0 --reference-cache none --repeats 1 "
                      "--min-repeat-ms 1 --cost-model none --model-choice-rounds 0 -q");
  ASSERT_EQ(t.status, 0) << t.output;
  const std::string run =
      "model run " + bert + "--tokens 2,4,5,3,6,3 --db " + db + " --implementations tuned ";
  Result with = metatune(run + "--token-types 0,0,0,1,1,1 --repeats 1");
  ASSERT_EQ(with.status, 0) << with.output;
  EXPECT_EQ(with.output.find("untuned"), std::string::npos) << with.output;
  Result without = metatune(run + "--repeats 1");
  ASSERT_EQ(without.status, 0) << without.output;
  EXPECT_NE(without.output.find("1 llvm.cpu untuned"), std::string::npos) << without.output;
}

float max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return std::numeric_limits<float>::infinity();
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// --token-types reach an encoder's type table: all 0 is the default's output, a sentence pair's
// types change it, in a bucket as in the exact length, and --text-pair gives them through the
// tokenizer; bad types are refused by name.
TEST(ModelCli, RunTakesAnEncodersTokenTypes) {
  const std::string dir = ::testing::TempDir();
  const std::string run = "model run --config " + kData +
                          "tiny-bert.json --tokens 2,4,5,3,6,6,3 --repeats 1 --save-output ";
  auto out = [&](const std::string& name, const std::string& flags) {
    Result r = metatune(run + dir + name + " " + flags);
    EXPECT_EQ(r.status, 0) << r.output;
    return read_npy_floats(dir + name);
  };
  std::vector<float> none = out("types_none.npy", "");
  std::vector<float> zeros = out("types_zeros.npy", "--token-types 0,0,0,0,0,0,0");
  std::vector<float> pair = out("types_pair.npy", "--token-types 0,0,0,0,1,1,1");
  std::vector<float> bucket = out("types_bucket.npy", "--token-types 0,0,0,0,1,1,1 --buckets 16");
  EXPECT_LT(max_difference(none, zeros), 1e-5f);
  EXPECT_GT(max_difference(none, pair), 1e-3f);
  EXPECT_LT(max_difference(pair, bucket), 1e-4f);

  expect_refused(run + dir + "x.npy --token-types 0,1", "--token-types: 2 types for 7 tokens");
  expect_refused(run + dir + "x.npy --token-types 0,0,0,0,1,1,2",
                 "type 2 (token 6) is outside [0, 2)");
  // A sentence pair through the tokenizer gives the same ids and types as written out.
  const std::string vocab = dir + "/mt_cli_pair_vocab";
  ASSERT_EQ(std::system(("mkdir -p " + vocab +
                         " && printf '[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nhello\\nworld\\n##s\\n' > " +
                         vocab + "/vocab.txt")
                            .c_str()),
            0);
  const std::string bert = "model run --config " + kData + "tiny-bert.json --repeats 1 ";
  Result text = metatune(bert + "--tokenizer " + vocab +
                         " --text Hello --text-pair worlds --save-output " + dir + "pair_text.npy");
  ASSERT_EQ(text.status, 0) << text.output;
  Result written = metatune(bert + "--tokens 2,4,3,5,6,3 --token-types 0,0,0,1,1,1 --save-output " +
                            dir + "pair_ids.npy");
  ASSERT_EQ(written.status, 0) << written.output;
  EXPECT_LT(
      max_difference(read_npy_floats(dir + "pair_text.npy"), read_npy_floats(dir + "pair_ids.npy")),
      1e-6f);
  expect_refused(bert + "--tokenizer " + vocab +
                     " --text Hello --text-pair worlds --token-types 0,0,0,1,1,1",
                 "not both");
  expect_refused("model run --config " + kData +
                     "tiny-gpt.json --tokens 1,2 --token-types 0,1 --repeats 1",
                 "is not an encoder");
}

} // namespace
