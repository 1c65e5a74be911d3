// Generation with the key/value cache: each decode step's logits equal those of the whole
// sequence built and run afresh (the recompute a cache exists to avoid), the greedy tokens
// are the same, the cache grows across capacity buckets keeping its rows, and a model
// without state, an empty prompt and a sequence past the longest are refused by name.
#include "core/graph/generator.h"

#include <algorithm>

#include "core/graph/layer_registry.h"
#include "core/graph/sequence_buckets.h"
#include "core/graph/token_sampler.h"
#include "core/model/config_json.h"
#include "graph_test_util.h"

namespace mt {
namespace {

using namespace graph_test;

Config tiny(const std::string& name) {
  return load_config_file(layer_config_registry(host()),
                          std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/" + name);
}

double max_rel_diff(const float* a, const std::vector<float>& b) {
  double scale = 0, diff = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(Generator, DecodeStepsMatchRecomputingTheWholeSequence) {
  Config c = tiny("tiny-gpt.json");
  ModelGraph g0 = BucketedModel::graph_for(host(), c, 1, 1, false);
  std::map<std::string, NDArray> params = init_params(g0.params, 11);
  KernelSelector sel(host(), KernelSelectionOptions{});
  // Capacities 4 and 8 and 16: a 3-token prompt and 9 new tokens cross two of them.
  Generator gen(host(), c, sel, params, GenerationShape{{}, {4, 8, 16}});
  std::vector<int32_t> tokens = {5, 60, 17};
  TokenSampler greedy(SamplingOptions{});
  const float* logits = gen.prefill(tokens);
  EXPECT_LT(max_rel_diff(logits, recompute(c, params, tokens)), 1e-4);
  for (int step = 0; step < 9; ++step) {
    int32_t next = greedy.next(logits, gen.vocab());
    std::vector<float> want = recompute(c, params, tokens);
    EXPECT_EQ(next, greedy.next(want.data(), gen.vocab())) << "step " << step;
    tokens.push_back(next);
    logits = gen.step(next);
    EXPECT_EQ(gen.length(), static_cast<int64_t>(tokens.size()));
    EXPECT_LT(max_rel_diff(logits, recompute(c, params, tokens)), 1e-4)
        << "step " << step << " at length " << tokens.size();
  }
  std::vector<std::string> built = gen.compiled();
  EXPECT_EQ(built, (std::vector<std::string>{"prefill@3", "decode@4", "decode@8", "decode@16"}));
  // Equal tasks of the four graphs (the linears and norms of one token) share one kernel.
  size_t tasks = graph_tasks(fuse(Generator::prefill_graph(host(), c, 3).outputs), "p").size();
  for (int64_t capacity : {4, 8, 16})
    tasks += graph_tasks(fuse(Generator::decode_graph(host(), c, capacity).outputs), "d").size();
  EXPECT_GT(gen.kernels().size(), 0u);
  EXPECT_LT(gen.kernels().size(), tasks);
  // A new sequence after a long one: the cache shrinks back to the smallest capacity.
  std::vector<int32_t> again = {9, 8};
  logits = gen.prefill(again);
  EXPECT_EQ(gen.length(), 2);
  EXPECT_LT(max_rel_diff(logits, recompute(c, params, again)), 1e-4);
  again.push_back(1);
  logits = gen.step(1);
  EXPECT_LT(max_rel_diff(logits, recompute(c, params, again)), 1e-4);
}

// ABI 1.9 (layer_state_write): a decode step's attention reads its caches alone, the host
// having written the step's keys and values into them at their positions right after the kernel
// that computes them -- no kernel copies a cache to splice the step's rows in (what a host of
// ABI 1.7 makes the layer do, a copy of the whole cache per layer and step). The rest of the
// cache is left as it was, and an order of kernels that would read a cache before its rows are
// written is refused, naming the state.
TEST(Generator, ADecodeStepWritesItsRowsIntoTheCacheAndReadsItAlone) {
  Config c = tiny("tiny-gpt.json");
  constexpr int64_t kCapacity = 8, kPosition = 5;
  ModelGraph g = Generator::decode_graph(host(), c, kCapacity);
  ASSERT_FALSE(g.states.empty());
  std::vector<FusedGroup> groups = fuse(g.outputs);
  for (const ModelState& st : g.states) {
    EXPECT_TRUE(st.written_in_place) << st.path;
    for (const FusedGroup& fg : groups)
      for (const te::Tensor& t : fg.computes)
        EXPECT_NE(t.shape(), st.cache.shape())
            << "kernel " << fg.name << " computes " << t.name() << ", a copy of " << st.path;
  }
  ModelExecutor exec(g, groups, llvm());
  exec.set_params(init_params(g.params, 14));
  std::vector<NDArray> inputs;
  for (const te::Tensor& t : g.inputs) {
    NDArray a(t.dtype(), t.shape());
    if (t.dtype() == DType::f32()) {
      float* d = a.data_as<float>();
      for (int64_t i = 0; i < a.num_elements(); ++i)
        d[i] = static_cast<float>((i * 37) % 101) / 101.f - 0.5f;
    } else {
      std::fill(a.data_as<int32_t>(), a.data_as<int32_t>() + a.num_elements(), 0);
    }
    inputs.push_back(std::move(a));
  }
  inputs[g.positions_input].data_as<int32_t>()[0] = kPosition;
  std::vector<std::vector<float>> before;
  for (const ModelState& st : g.states) {
    const NDArray& cache = inputs[st.input];
    before.emplace_back(cache.data_as<float>(), cache.data_as<float>() + cache.num_elements());
  }
  exec.run(inputs);
  for (size_t s = 0; s < g.states.size(); ++s) {
    const ModelState& st = g.states[s];
    const int64_t width = st.cache.shape()[2];
    const float* cache = inputs[st.input].data_as<float>();
    const float* rows = exec.output(st.output).data_as<float>();
    for (int64_t r = 0; r < kCapacity; ++r)
      for (int64_t w = 0; w < width; ++w) {
        const float want = r == kPosition ? rows[w] : before[s][static_cast<size_t>(r * width + w)];
        ASSERT_EQ(cache[r * width + w], want) << st.path << " row " << r << " column " << w;
      }
  }
  // The same kernels in an order that reads the first cache before its rows are computed.
  const ModelState& first = g.states.front();
  auto reads = [&](const FusedGroup& fg) {
    return std::any_of(fg.inputs.begin(), fg.inputs.end(),
                       [&](const te::Tensor& t) { return t.get() == first.cache.get(); });
  };
  auto reader = std::find_if(groups.begin(), groups.end(), reads);
  ASSERT_NE(reader, groups.end());
  std::vector<FusedGroup> wrong;
  wrong.push_back(*reader);
  for (auto it = groups.begin(); it != groups.end(); ++it)
    if (it != reader) wrong.push_back(*it);
  try {
    ModelExecutor bad(g, wrong, llvm());
    ADD_FAILURE() << "a cache read before its rows are written";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("state '" + first.path + "'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("reads the cache before"), std::string::npos) << e.what();
  }
}

TEST(Generator, PromptBucketsPadTheAfterwardInvisibly) {
  Config c = tiny("tiny-gpt.json");
  ModelGraph g0 = BucketedModel::graph_for(host(), c, 1, 1, false);
  std::map<std::string, NDArray> params = init_params(g0.params, 12);
  KernelSelector sel(host(), KernelSelectionOptions{});
  Generator gen(host(), c, sel, params, GenerationShape{{8}, {16}});
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  const float* logits = gen.prefill(tokens);
  EXPECT_LT(max_rel_diff(logits, recompute(c, params, tokens)), 1e-4);
  tokens.push_back(7);
  logits = gen.step(7);
  EXPECT_LT(max_rel_diff(logits, recompute(c, params, tokens)), 1e-4);
  EXPECT_EQ(gen.compiled(), (std::vector<std::string>{"prefill@8", "decode@16"}));
}

// Tokens appended several at a time (a decode build of a bucket's length against the cache):
// a prompt longer than the largest bucket is prefilled in chunks of it, each padded to its
// bucket -- the padding's rows written past the sequence, where nothing reads them before a
// real token overwrites them --, and a run of tokens extends a sequence. Every logit is the
// whole sequence's recomputed, and decode steps go on from there.
TEST(Generator, ChunksOfABucketMatchRecomputingTheWholeSequence) {
  Config c = tiny("tiny-gpt.json");
  ModelGraph g0 = BucketedModel::graph_for(host(), c, 1, 1, false);
  std::map<std::string, NDArray> params = init_params(g0.params, 15);
  KernelSelector sel(host(), KernelSelectionOptions{});
  Generator gen(host(), c, sel, params, GenerationShape{{2, 4}, {8, 16, 32}});
  std::vector<int32_t> tokens = {3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46}; // 4 + 4 + 3
  const float* logits = gen.prefill(tokens);
  EXPECT_EQ(gen.length(), 11);
  EXPECT_EQ(gen.tokens(), tokens);
  EXPECT_LT(max_rel_diff(logits, recompute(c, params, tokens)), 1e-4);
  EXPECT_EQ(gen.compiled(), (std::vector<std::string>{"prefill@4", "extend@4:8", "extend@4:16"}));
  const std::vector<int32_t> more = {26, 43, 38, 32, 79}; // 4 + 1 (padded to 2)
  logits = gen.extend(more);
  tokens.insert(tokens.end(), more.begin(), more.end());
  EXPECT_EQ(gen.tokens(), tokens);
  EXPECT_LT(max_rel_diff(logits, recompute(c, params, tokens)), 1e-4);
  for (int32_t next : {50, 28}) {
    logits = gen.step(next);
    tokens.push_back(next);
    EXPECT_LT(max_rel_diff(logits, recompute(c, params, tokens)), 1e-4) << tokens.size();
  }
  EXPECT_EQ(gen.length(), 18);
  // No sequence held: extend() starts one, as prefill() does.
  Generator fresh(host(), c, sel, params, GenerationShape{{2, 4}, {8, 16, 32}});
  logits = fresh.extend({7, 1, 8});
  EXPECT_LT(max_rel_diff(logits, recompute(c, params, {7, 1, 8})), 1e-4);
  EXPECT_THROW(fresh.extend({}), std::invalid_argument);
  EXPECT_THROW(fresh.extend(std::vector<int32_t>(29, 1)), std::invalid_argument); // 32 in all
  EXPECT_EQ(fresh.length(), 3);
}

// A conversation's next prompt keeps the rows of the prefix it shares with the sequence held
// (what a chat turn reuses) and computes the rest: the logits are the new prompt's
// recomputed, however much of it was shared -- all but its last token, part of it, none.
TEST(Generator, PrefillReusingKeepsTheSharedPrefixOnly) {
  Config c = tiny("tiny-gpt.json");
  ModelGraph g0 = BucketedModel::graph_for(host(), c, 1, 1, false);
  std::map<std::string, NDArray> params = init_params(g0.params, 16);
  KernelSelector sel(host(), KernelSelectionOptions{});
  Generator gen(host(), c, sel, params, GenerationShape{{4, 8}, {16, 32}});
  std::vector<int32_t> held = {10, 11, 12, 13, 14, 15};
  gen.prefill(held);
  for (int32_t next : {16, 17}) {
    gen.step(next);
    held.push_back(next);
  }
  auto check = [&](const std::vector<int32_t>& prompt, int64_t reused) {
    const float* logits = gen.prefill_reusing(prompt);
    EXPECT_EQ(gen.last_reused(), reused) << prompt.size();
    EXPECT_EQ(gen.tokens(), prompt);
    EXPECT_LT(max_rel_diff(logits, recompute(c, params, prompt)), 1e-4) << prompt.size();
  };
  // The next turn: everything held, then new tokens.
  std::vector<int32_t> next = held;
  next.insert(next.end(), {20, 21, 22});
  check(next, 8);
  // A prompt that differs after 5 tokens: the rest of the held rows are dropped.
  check({10, 11, 12, 13, 14, 40, 41}, 5);
  // The same prompt again: all but its last token reused, that one recomputed.
  check({10, 11, 12, 13, 14, 40, 41}, 6);
  // A prefix of what is held.
  check({10, 11, 12}, 2);
  // Nothing shared: a prefill.
  check({50, 51}, 0);
  // A prompt with no room is refused before anything held is dropped.
  EXPECT_THROW(gen.prefill_reusing(std::vector<int32_t>(32, 50)), std::invalid_argument);
  EXPECT_EQ(gen.tokens(), (std::vector<int32_t>{50, 51}));
  gen.truncate(1);
  EXPECT_EQ(gen.tokens(), (std::vector<int32_t>{50}));
  EXPECT_THROW(gen.truncate(2), std::invalid_argument);
}

TEST(Generator, RefusesWhatItCannotDo) {
  Config c = tiny("tiny-gpt.json");
  ModelGraph g0 = BucketedModel::graph_for(host(), c, 1, 1, false);
  std::map<std::string, NDArray> params = init_params(g0.params, 13);
  KernelSelector sel(host(), KernelSelectionOptions{});
  Generator gen(host(), c, sel, params, GenerationShape{{}, {4}});
  EXPECT_THROW(gen.step(1), std::logic_error); // before a prefill
  EXPECT_THROW(gen.prefill({}), std::invalid_argument);
  gen.prefill({1, 2});
  gen.step(3);
  gen.step(4);
  try {
    gen.step(5);
    ADD_FAILURE() << "a fifth token fits no capacity";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("longest (4 tokens)"), std::string::npos) << e.what();
  }
  // An encoder keeps no state: it cannot be built for generation.
  Config enc = tiny("tiny-bert.json");
  try {
    Generator::decode_graph(host(), enc, 8);
    ADD_FAILURE() << "an encoder has no decode step";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("causal"), std::string::npos) << e.what();
  }
}

TEST(TokenSampler, GreedyTopKAndSeededSampling) {
  std::vector<float> logits = {0.1f, 2.0f, 2.0f, -1.0f, 1.9f};
  TokenSampler greedy(SamplingOptions{});
  EXPECT_EQ(greedy.next(logits.data(), 5), 1); // the lower id of a tie
  SamplingOptions top2{false, 1.0, 2, 42};
  TokenSampler a(top2), b(top2);
  std::vector<int> counts(5, 0);
  for (int i = 0; i < 2000; ++i) {
    int32_t t = a.next(logits.data(), 5);
    EXPECT_EQ(t, b.next(logits.data(), 5)) << "the same seed, the same tokens";
    counts[static_cast<size_t>(t)]++;
  }
  EXPECT_EQ(counts[0] + counts[3] + counts[4], 0) << "only the top 2 are drawn";
  EXPECT_GT(counts[1], 800);
  EXPECT_GT(counts[2], 800);
  // A low temperature is nearly greedy over the whole vocabulary.
  TokenSampler cold(SamplingOptions{false, 0.01, 0, 1});
  std::vector<float> spread = {0.0f, 1.0f, 3.0f, 0.5f};
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(cold.next(spread.data(), 4), 2);
  EXPECT_THROW(TokenSampler(SamplingOptions{false, 0.0, 0, 1}), std::invalid_argument);
}

} // namespace
} // namespace mt
