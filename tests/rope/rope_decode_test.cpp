// Generation with RoPE: a small causal decoder without learnt positions, its attention
// projections wrapped in rope.RotaryQKVLinear (grouped-query heads), run by the Generator
// (core/graph/generator.h: a prefill, then one token per decode step against the key/value
// cache, where the rotary table reads each step's position as a run-time input). Greedy
// decoding gives the same tokens, and every step the same logits, as recomputing the whole
// sequence with a whole-sequence build -- across a growth of the cache's capacity.
#include "core/graph/generator.h"
#include "core/graph/layer_registry.h"
#include "core/graph/token_sampler.h"
#include "core/model/config_json.h"
#include "rope_test_util.h"

namespace mt {
namespace {

using namespace rope_test;

Config rope_decoder(const std::string& convention) {
  std::string text = R"({
    "kind": "std.Decoder", "vocab_size": 53, "dim": 32, "max_positions": 0,
    "transformer": {"kind": "std.StackedTransformerLayer", "num_layers": 2,
      "layer": {"kind": "std.TransformerLayer",
        "self_attention": {"kind": "std.TransformerAttentionLayer",
          "attention": {"kind": "std.MultiheadAttention", "num_heads": 4, "num_kv_heads": 2,
            "causal": true,
            "qkv": {"kind": "rope.RotaryQKVLinear", "convention": "CONVENTION",
              "input_linear": {"kind": "std.QKVLinear"}}}},
        "feed_forward": {"kind": "std.TransformerFeedForwardLayer", "hidden_dim": 64}}}})";
  text.replace(text.find("CONVENTION"), 10, convention);
  return config_from_json(layer_config_registry(host()), text);
}

void check_generation(const std::string& convention) {
  SCOPED_TRACE(convention);
  Config config = rope_decoder(convention);
  const int64_t total = 16; // the prompt and every generated token
  ModelGraph whole =
      instantiate_model(host(), config, {te::placeholder({1, total}, DType::i32(), "ids")});
  ModelExecutor recompute(whole, fuse(whole.outputs), llvm());
  std::map<std::string, NDArray> params = init_params(whole.params, 11);
  for (auto& [path, a] : params) { // non-trivial norms and biases
    float* d = a.data_as<float>();
    for (int64_t i = 0; i < a.num_elements(); ++i)
      d[i] += 0.1f * static_cast<float>(std::sin(0.7 * static_cast<double>(i) + path.size()));
  }
  recompute.set_params(params);

  KernelSelector selector(host(), KernelSelectionOptions{});
  GenerationShape shape;
  shape.capacities = {8, 16}; // the cache grows from 8 to 16 rows on the way
  Generator gen(host(), config, selector, params, shape);
  TokenSampler greedy(SamplingOptions{});

  std::vector<int32_t> tokens = {3, 50, 17, 17, 8};
  const float* logits = gen.prefill(tokens);
  const int64_t V = gen.vocab();
  ASSERT_EQ(V, 53);
  int steps = 0;
  while (true) {
    const auto n = static_cast<int64_t>(tokens.size());
    // The whole sequence so far, padded at the end (a causal decoder never sees the padding).
    NDArray ids(DType::i32(), {1, total});
    std::fill(ids.data_as<int32_t>(), ids.data_as<int32_t>() + total, 0);
    std::copy(tokens.begin(), tokens.end(), ids.data_as<int32_t>());
    std::vector<NDArray> out = recompute.run({ids});
    const float* want = out.at(0).data_as<float>() + (n - 1) * V;
    SCOPED_TRACE("after " + std::to_string(n) + " tokens");
    expect_close(Matrix(logits, logits + V), Matrix(want, want + V), 1e-4);
    int32_t next = greedy.next(logits, V);
    EXPECT_EQ(next, TokenSampler(SamplingOptions{}).next(want, V));
    tokens.push_back(next);
    if (static_cast<int64_t>(tokens.size()) == total) break;
    logits = gen.step(next);
    ++steps;
    ASSERT_EQ(gen.length(), static_cast<int64_t>(tokens.size()));
  }
  EXPECT_EQ(steps, 10);
  EXPECT_EQ(gen.compiled(), (std::vector<std::string>{"prefill@5", "decode@8", "decode@16"}));
  std::string generated;
  for (size_t i = 5; i < tokens.size(); ++i)
    generated += std::to_string(tokens[i]) + " ";
  std::printf("rope %s greedy tokens: %s\n", convention.c_str(), generated.c_str());
}

TEST(RopeDecode, GreedyGenerationMatchesWholeSequenceRecompute) {
  check_generation("rotate_half");
  check_generation("interleaved");
}

} // namespace
} // namespace mt
