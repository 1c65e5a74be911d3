// Generation with RoPE: a small causal decoder without learnt positions, its attention
// projections wrapped in rope.RotaryQKVLinear (grouped-query heads), run by the Generator
// (core/graph/generator.h: a prefill, then one token per decode step against the key/value
// cache, where the rotary table reads each step's position as a run-time input). For both
// conventions, full and partial rotary, with and without a position offset, greedy decoding
// gives the same tokens, and every step the same logits, as recomputing the whole sequence
// with a whole-sequence build -- across a growth of the cache's capacity.
#include "core/graph/generator.h"
#include "core/graph/layer_registry.h"
#include "core/graph/token_sampler.h"
#include "core/model/config_json.h"
#include "rope_test_util.h"

namespace mt {
namespace {

using namespace rope_test;

// Head width 8; `rotary_dim` 0 rotates all of it.
Config rope_decoder(const std::string& convention, int rotary_dim, int offset) {
  json qkv = {{"kind", "rope.RotaryQKVLinear"},
              {"convention", convention},
              {"rotary_dim", rotary_dim},
              {"input_linear", {{"kind", "std.QKVLinear"}}},
              {"rotary", {{"kind", "rope.RotaryTable"}, {"position_offset", offset}}}};
  json cfg = json::parse(R"({
    "kind": "std.Decoder", "vocab_size": 53, "dim": 32, "max_positions": 0,
    "tied_lm_head": false,
    "transformer": {"kind": "std.StackedTransformerLayer", "num_layers": 2,
      "layer": {"kind": "std.TransformerLayer",
        "self_attention": {"kind": "std.TransformerAttentionLayer",
          "attention": {"kind": "std.MultiheadAttention", "num_heads": 4, "num_kv_heads": 2,
            "causal": true}},
        "feed_forward": {"kind": "std.TransformerFeedForwardLayer", "hidden_dim": 64}}}})");
  cfg["transformer"]["layer"]["self_attention"]["attention"]["qkv"] = qkv;
  return config_from_json(layer_config_registry(host()), cfg.dump());
}

void check_generation(const std::string& convention, int rotary_dim, int offset) {
  SCOPED_TRACE(convention + " rotary_dim " + std::to_string(rotary_dim) + " offset " +
               std::to_string(offset));
  Config config = rope_decoder(convention, rotary_dim, offset);
  const int64_t total = 16; // the prompt and every generated token
  ModelGraph whole =
      instantiate_model(host(), config, {te::placeholder({1, total}, DType::i32(), "ids")});
  ModelExecutor recompute(whole, fuse(whole.outputs), llvm());
  std::map<std::string, NDArray> params = init_params(whole.params, 11);
  // Non-trivial norms and biases; matrices at ten times the initial scale, so that attention
  // is far from uniform and the generated tokens depend on the context and its positions.
  for (auto& [path, a] : params) {
    float* d = a.data_as<float>();
    const bool matrix = path.ends_with("weight") && path.find("norm") == std::string::npos;
    for (int64_t i = 0; i < a.num_elements(); ++i)
      d[i] = (matrix ? 10.0f : 1.0f) * d[i] +
             0.1f * static_cast<float>(std::sin(0.7 * static_cast<double>(i) + path.size()));
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
  double worst = 0; // the largest difference of the logits, relative to max(1, |logit|)
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
    for (int64_t i = 0; i < V; ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(logits[i] - want[i]) /
                                                  std::max(1.0f, std::fabs(want[i]))));
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
  std::printf("rope %s rotary_dim %d offset %d: greedy tokens %s; logits vs recompute: %.3g\n",
              convention.c_str(), rotary_dim, offset, generated.c_str(), worst);
}

TEST(RopeDecode, GreedyGenerationMatchesWholeSequenceRecompute) {
  check_generation("rotate_half", 0, 0);
  check_generation("interleaved", 4, 7); // partial rotary, positions shifted
}

} // namespace
} // namespace mt
