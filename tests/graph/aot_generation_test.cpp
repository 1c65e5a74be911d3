// The generation artifact end to end: `metatune model compile --generation` writes a tiny
// decoder's prefills and decode steps; the runtime's CompiledGenerator (runtime/, no LLVM)
// gives every step's logits the in-process Generator gives with the same kernels and weights,
// and the whole sequence recomputed from scratch gives (an independent path: no cache); the
// example application generates the same tokens; a prompt or a sequence that fits no graph and
// broken folders fail naming the lengths, the file, the graph and the thing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "artifact_test_util.h"
#include "cli_run.h"
#include "core/graph/generator.h"
#include "core/graph/layer_registry.h"
#include "core/graph/sequence_buckets.h"
#include "core/model/config_json.h"
#include "core/model/safetensors_file.h"
#include "graph_test_util.h"
#include "metatune/runtime/compiled_generator.h"

namespace mt {
namespace {

namespace fs = std::filesystem;
using graph_test::host;

const std::string kConfig = std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/tiny-gpt.json";

class AotGeneration : public graph_test::ArtifactTest<AotGeneration> {
public:
  static constexpr const char* kFolder = "mt_aot_gen";
  static std::string compile_args() {
    return "model compile --config " + kConfig +
           " --generation --prompt-buckets 4,8 --capacities 16,32";
  }
};

using graph_test::artifact_weights;
using graph_test::recompute;

double max_diff(const float* a, const float* b, int64_t n) {
  double d = 0;
  for (int64_t i = 0; i < n; ++i)
    d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
  return d;
}

int32_t argmax(const float* x, int64_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

TEST_F(AotGeneration, StepsMatchTheGeneratorAndTheWholeSequence) {
  rt::CompiledGenerator gen = rt::CompiledGenerator::load(dir().string());
  EXPECT_EQ(gen.prompt_buckets(), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(gen.capacities(), (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(gen.max_length(), 32);
  Config c = load_config_file(layer_config_registry(host()), kConfig);
  std::map<std::string, NDArray> weights = artifact_weights(dir());
  KernelSelectionOptions untuned;
  untuned.policy = KernelPolicy::Untuned;
  KernelSelector sel(host(), untuned);
  Generator ref(host(), c, sel, weights, GenerationShape{{4, 8}, {16, 32}});
  ASSERT_EQ(gen.vocab(), 61);
  // A 5-token prompt (padded to 8) grown to 30 tokens: across the capacities 16 and 32, the
  // cache moving between them. The tokens fed are the reference's greedy ones, so that both
  // sides see the same sequence even on a near tie.
  std::vector<int32_t> tokens = {3, 14, 15, 9, 26};
  const float* got = gen.prefill(tokens);
  const float* want = ref.prefill(tokens);
  double scale = 0;
  for (int64_t v = 0; v < gen.vocab(); ++v)
    scale = std::max(scale, std::abs(static_cast<double>(want[v])));
  ASSERT_GT(scale, 0);
  int same_tokens = 0, steps = 0;
  while (tokens.size() < 30) {
    EXPECT_LT(max_diff(got, want, gen.vocab()), 1e-5 * scale) << "at length " << tokens.size();
    // The whole sequence recomputed (a graph of each length: at the prompt, around the
    // capacity 16 and at the end).
    const size_t n = tokens.size();
    if (n == 5 || n == 15 || n == 16 || n == 17 || n == 29) {
      std::vector<float> whole = recompute(c, weights, tokens);
      EXPECT_LT(max_diff(got, whole.data(), gen.vocab()), 1e-4 * scale) << "at length " << n;
    }
    same_tokens += argmax(got, gen.vocab()) == argmax(want, gen.vocab());
    ++steps;
    const int32_t next = (argmax(want, gen.vocab()) + static_cast<int32_t>(tokens.size())) % 61;
    tokens.push_back(next);
    got = gen.step(next);
    want = ref.step(next);
    ASSERT_EQ(gen.length(), static_cast<int64_t>(tokens.size()));
  }
  EXPECT_EQ(same_tokens, steps);
  // A new sequence after a long one starts over in the smallest capacity.
  got = gen.prefill({7, 7, 1});
  std::vector<float> whole = recompute(c, weights, {7, 7, 1});
  EXPECT_LT(max_diff(got, whole.data(), gen.vocab()), 1e-4 * scale);
  EXPECT_EQ(gen.length(), 3);
}

TEST_F(AotGeneration, WhatFitsNoGraphIsNamed) {
  rt::CompiledGenerator gen = rt::CompiledGenerator::load(dir().string());
  auto expect_error = [](auto&& f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one with: " << part;
    } catch (const rt::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error([&] { gen.step(1); }, "step() before prefill()");
  expect_error([&] { gen.prefill({}); }, "the prompt is empty");
  expect_error([&] { gen.prefill(std::vector<int32_t>(32, 1)); },
               "a prompt of 32 tokens leaves no room: the longest sequence is 32");
  gen.prefill(std::vector<int32_t>(8, 1));
  for (int i = 0; i < 24; ++i)
    gen.step(2);
  EXPECT_EQ(gen.length(), 32);
  expect_error([&] { gen.step(3); }, "the sequence reached its longest (32 tokens)");
  // Without extend builds, a prompt past the largest bucket fits nothing, nor does a run of
  // tokens after the sequence.
  const fs::path d = dir().string() + "_no_extends";
  graph_test::CliResult r =
      graph_test::metatune(compile_args() + " --extend-chunk 0 --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.output;
  rt::CompiledGenerator plain = rt::CompiledGenerator::load(d.string());
  EXPECT_EQ(plain.extend_chunk(), 0);
  expect_error([&] { plain.prefill(std::vector<int32_t>(9, 1)); },
               "longer than the artifact's largest prompt bucket (8");
  plain.prefill({1, 2});
  expect_error([&] { plain.extend({3, 4}); }, "the artifact has no extend builds");
  fs::remove_all(d);
}

// The extend builds (4 tokens, the smallest bucket, at each capacity): a prompt longer than the
// largest bucket in chunks (8, then 3 padded to 4), a run of 5 more tokens (a chat turn's), a
// step, then prompts sharing a prefix with the sequence held -- each the whole sequence
// recomputed, computing only what follows the prefix.
TEST_F(AotGeneration, ChunksAndSharedPrefixesMatchTheWholeSequence) {
  rt::CompiledGenerator gen = rt::CompiledGenerator::load(dir().string());
  ASSERT_EQ(gen.extend_chunk(), 4);
  Config c = load_config_file(layer_config_registry(host()), kConfig);
  std::map<std::string, NDArray> weights = artifact_weights(dir());
  auto expect_whole = [&](const float* got, const std::vector<int32_t>& seq, const char* what) {
    std::vector<float> want = recompute(c, weights, seq);
    double scale = 0;
    for (float w : want)
      scale = std::max(scale, std::abs(static_cast<double>(w)));
    EXPECT_LT(max_diff(got, want.data(), gen.vocab()), 1e-4 * scale) << what;
    EXPECT_EQ(gen.tokens(), seq) << what;
  };
  std::vector<int32_t> seq = {3, 14, 15, 92 % 61, 6, 35, 8, 7, 32, 38, 46};
  expect_whole(gen.prefill(seq), seq, "a prompt in chunks");
  const std::vector<int32_t> more = {26, 43, 38, 32, 7};
  seq.insert(seq.end(), more.begin(), more.end());
  expect_whole(gen.extend(more), seq, "extended");
  seq.push_back(50);
  expect_whole(gen.step(50), seq, "a step after");
  std::vector<int32_t> other(seq.begin(), seq.begin() + 6);
  other.insert(other.end(), {21, 22, 23});
  expect_whole(gen.prefill_reusing(other), other, "sharing 6");
  EXPECT_EQ(gen.last_reused(), 6);
  expect_whole(gen.prefill_reusing(other), other, "the same again");
  EXPECT_EQ(gen.last_reused(), 8);
  expect_whole(gen.prefill_reusing({9, 9}), {9, 9}, "nothing shared");
  EXPECT_EQ(gen.last_reused(), 0);
}

void expect_load_error(const fs::path& d, const std::vector<std::string>& parts) {
  try {
    rt::CompiledGenerator::load(d.string());
    ADD_FAILURE() << "loaded " << d;
  } catch (const rt::Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST_F(AotGeneration, BrokenFoldersAreNamed) {
  const fs::path d = copy_of("broken");
  const fs::path file = d / "generation.json";
  const nlohmann::json good = nlohmann::json::parse(std::ifstream(file));
  auto write = [&](const nlohmann::json& m) { std::ofstream(file) << m.dump(); };
  // A decode step whose cache input is another state's (the shape differs: the ids').
  nlohmann::json m = good;
  m["decodes"][1]["state_caches"][0] = 0;
  write(m);
  expect_load_error(
      d, {file.string(), "graph 'decode@32'",
          "the cache of state '" + good["states"][0]["path"].get<std::string>() + "' (input 0)"});
  // A state write naming an output that is no state's rows.
  m = good;
  for (nlohmann::json& g : m["decodes"][0]["groups"])
    if (g.contains("state_writes")) {
      g["state_writes"][0]["rows"] = 0; // the logits
      break;
    }
  write(m);
  expect_load_error(d, {file.string(), "graph 'decode@16'", "writes output 0 into input"});
  // A prefill whose logits are not the vocabulary's.
  m = good;
  m["vocab"] = 62;
  write(m);
  expect_load_error(d, {"graph 'prefill@4'", "output 0 must be the logits f32[1, S, 62]"});
  // Not JSON, another format, no generation.json at all.
  std::ofstream(file) << "{\"format\": \"metatune-generation\", \"prefills\": [";
  expect_load_error(d, {file.string(), "not valid JSON"});
  write({{"format", "metatune-model"}, {"version", 1}});
  expect_load_error(d, {file.string(), "not a metatune generation artifact"});
  fs::remove(file);
  expect_load_error(d, {file.string(), "missing"});
  fs::remove_all(d);
}

// The example application generates what the runtime's generator gives.
TEST_F(AotGeneration, TheEmbeddingApplicationGenerates) {
  rt::CompiledGenerator gen = rt::CompiledGenerator::load(dir().string());
  const float* logits = gen.prefill({3, 14, 15});
  std::string want = "tokens:";
  for (int i = 0; i < 6; ++i) {
    const int32_t next = argmax(logits, gen.vocab());
    want += " " + std::to_string(next);
    if (i < 5) logits = gen.step(next);
  }
  graph_test::CliResult r = graph_test::run_program(std::string(METATUNE_EMBED_RUNTIME) + " " +
                                                    dir().string() + " -n 6 3 14 15");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(want + "\n"), std::string::npos) << r.output << "\nwanted " << want;
}

} // namespace
} // namespace mt
