// Enabling RoPE on every attention layer of a shipped model config: the snippets between the
// `// BEGIN enable-rope <model>` and `// END enable-rope <model>` markers are what a user
// writes (bench/rope/count_lines.sh counts their lines). Each wraps the QKV projection of every
// std.MultiheadAttention in rope.RotaryQKVLinear; the tests check that every attention layer of
// the instantiated model has it, that the parameters are the same apart from GPT-2's position
// table, and run small clones of both models against float64 references.
#include <set>

#include "core/graph/layer_registry.h"
#include "core/model/config_json.h"
#include "core/model/config_wrap.h"
#include "rope_test_util.h"

namespace mt {
namespace {

using namespace rope_test;

Config shipped(const ConfigRegistry& reg, const std::string& file) {
  return load_config_file(reg, std::string(METATUNE_SOURCE_DIR) + "/configs/" + file);
}

int64_t parameter_count(const ModelGraph& g) {
  int64_t n = 0;
  for (const ModelParam& p : g.params) {
    int64_t k = 1;
    for (int64_t d : p.shape)
      k *= d;
    n += k;
  }
  return n;
}

// How many attention layers of the instantiated model project through the RoPE wrapper, and
// how many do not (their projection's parameters sit right under "attention.qkv.").
std::pair<int, int> attention_layers(const ModelGraph& g) {
  std::set<std::string> wrapped, plain;
  for (const ModelParam& p : g.params) {
    size_t at = p.path.find(".attention.qkv.");
    if (at == std::string::npos) continue;
    std::string layer = p.path.substr(0, at);
    const std::string inner = ".attention.qkv.input_linear.";
    bool rope = p.path.compare(at, inner.size(), inner) == 0;
    (rope ? wrapped : plain).insert(layer);
  }
  return {static_cast<int>(wrapped.size()), static_cast<int>(plain.size())};
}

std::vector<te::Tensor> token_inputs(int64_t S, bool mask) {
  std::vector<te::Tensor> in = {te::placeholder({1, S}, DType::i32(), "ids")};
  if (mask) in.push_back(te::placeholder({1, S}, DType::f32(), "mask"));
  return in;
}

// A model's parameters by path as float64, and its blocks in double precision.
struct Reference {
  const std::map<std::string, NDArray>& values;
  size_t S, D, H, F;
  Matrix param(const std::string& path) const {
    const NDArray& a = values.at(path);
    return Matrix(a.data_as<float>(), a.data_as<float>() + a.num_elements());
  }
  bool has(const std::string& path) const { return values.count(path) != 0; }
  Matrix norm(const std::string& n, const Matrix& x, double eps) const {
    return layer_norm_ref(x, param(n + ".weight"), param(n + ".bias"), S, D, eps);
  }
  // One transformer block on h [S, D] (batch 1) with RoPE in its attention.
  Matrix block(const std::string& p, Matrix h, bool prenorm, bool causal, bool tanh_gelu,
               double eps, const Matrix* mask) const {
    std::string a = p + "self_attention.", f = p + "feed_forward.";
    std::string proj = a + "attention.qkv.input_linear.";
    Matrix in = prenorm ? norm(a + "norm", h, eps) : h;
    Matrix q, k, v;
    if (has(proj + "weight")) { // fused
      Matrix b = param(proj + "bias");
      Matrix all = linear_ref(in, param(proj + "weight"), &b, S, D, 3 * D);
      for (size_t r = 0; r < S; ++r) {
        q.insert(q.end(), &all[r * 3 * D], &all[r * 3 * D + D]);
        k.insert(k.end(), &all[r * 3 * D + D], &all[r * 3 * D + 2 * D]);
        v.insert(v.end(), &all[r * 3 * D + 2 * D], &all[r * 3 * D + 3 * D]);
      }
    } else {
      Matrix qb = param(proj + "q_bias"), kb = param(proj + "k_bias"), vb = param(proj + "v_bias");
      q = linear_ref(in, param(proj + "q_weight"), &qb, S, D, D);
      k = linear_ref(in, param(proj + "k_weight"), &kb, S, D, D);
      v = linear_ref(in, param(proj + "v_weight"), &vb, S, D, D);
    }
    const Rotary r{D / H, false, 10000.0, 0}; // the wrapper's defaults
    Dims d{1, S, D, H, H, D / H};
    Matrix ob = param(a + "attention.o_bias");
    Matrix att =
        attention_ref(d, rotate_ref(q, 1, S, H, D / H, r), rotate_ref(k, 1, S, H, D / H, r), v,
                      param(a + "attention.o_weight"), &ob, causal, mask);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += att[i];
    if (!prenorm) h = norm(a + "norm", h, eps);
    Matrix in2 = prenorm ? norm(f + "norm", h, eps) : h;
    Matrix b1 = param(f + "linear1.bias"), b2 = param(f + "linear2.bias");
    Matrix u = linear_ref(in2, param(f + "linear1.weight"), &b1, S, D, F);
    for (double& e : u)
      e = tanh_gelu ? 0.5 * e * (1 + std::tanh(std::sqrt(2 / M_PI) * (e + 0.044715 * e * e * e)))
                    : gelu(e);
    Matrix y = linear_ref(u, param(f + "linear2.weight"), &b2, S, F, D);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += y[i];
    return prenorm ? h : norm(f + "norm", h, eps);
  }
};

// Runs `config` on `tokens` (and `mask`), with deterministic non-trivial parameters.
struct SmallRun {
  ModelGraph graph;
  std::map<std::string, NDArray> params;
  Matrix out;
  SmallRun(const Config& config, const std::vector<int32_t>& tokens, const Matrix* mask) {
    const auto S = static_cast<int64_t>(tokens.size());
    graph = instantiate_model(host(), config, token_inputs(S, mask != nullptr));
    ModelExecutor exec(graph, fuse(graph.outputs), llvm());
    params = init_params(graph.params, 5);
    for (auto& [path, a] : params) {
      float* d = a.data_as<float>();
      for (int64_t i = 0; i < a.num_elements(); ++i)
        d[i] += 0.05f * static_cast<float>(std::sin(0.3 * static_cast<double>(i) + path.size()));
    }
    exec.set_params(params);
    std::vector<NDArray> in;
    in.emplace_back(DType::i32(), std::vector<int64_t>{1, S});
    std::copy(tokens.begin(), tokens.end(), in[0].data_as<int32_t>());
    if (mask) {
      in.emplace_back(DType::f32(), std::vector<int64_t>{1, S});
      for (int64_t t = 0; t < S; ++t)
        in[1].data_as<float>()[t] = static_cast<float>((*mask)[t]);
    }
    std::vector<NDArray> o = exec.run(in);
    out.assign(o.at(0).data_as<float>(), o[0].data_as<float>() + o[0].num_elements());
  }
};

TEST(EnableRope, Gpt2EveryAttentionLayerAndTheModelMatchesReference) {
  ConfigRegistry reg = layer_config_registry(host());
  Config gpt2 = shipped(reg, "gpt2-small.json").clone({{"transformer.num_layers", 2}});
  const int64_t before = parameter_count(instantiate_model(host(), gpt2, token_inputs(4, false)));
  // BEGIN enable-rope gpt2
  Config rope = reg.make("rope.RotaryQKVLinear");
  int n = wrap_child_everywhere(gpt2, reg, "std.MultiheadAttention", "qkv", rope, "input_linear");
  gpt2.set("max_positions", 0); // the rotation replaces GPT-2's learnt position table
  // END enable-rope gpt2
  // One attention config, repeated by the stack: both instantiated layers have the wrapper.
  EXPECT_EQ(n, 1);
  EXPECT_EQ(gpt2.get<Config>("transformer.layer.self_attention.attention.qkv.input_linear").kind(),
            "std.FusedQKVLinear");
  ModelGraph g = instantiate_model(host(), gpt2, token_inputs(4, false));
  EXPECT_EQ(attention_layers(g), std::make_pair(2, 0));
  EXPECT_EQ(parameter_count(g), before - 1024 * 768); // only the position table went
  EXPECT_EQ(wrap_child_everywhere(gpt2, reg, "std.MultiheadAttention", "qkv", rope, "input_linear"),
            0); // already wrapped: not twice

  // A small clone of the RoPE GPT-2 against float64: tied head, pre-norm, tanh GELU, causal.
  const size_t S = 6, D = 32, H = 4, F = 64, V = 41;
  Config small =
      gpt2.clone({{"dim", static_cast<int64_t>(D)},
                  {"vocab_size", static_cast<int64_t>(V)},
                  {"transformer.layer.self_attention.attention.num_heads", static_cast<int64_t>(H)},
                  {"transformer.layer.feed_forward.hidden_dim", static_cast<int64_t>(F)}});
  std::vector<int32_t> tokens = {7, 40, 0, 13, 13, 2};
  SmallRun run(small, tokens, nullptr);
  EXPECT_EQ(attention_layers(run.graph), std::make_pair(2, 0));
  Reference ref{run.params, S, D, H, F};
  Matrix tok = ref.param("token_weight"), h(S * D);
  for (size_t t = 0; t < S; ++t)
    for (size_t d = 0; d < D; ++d)
      h[t * D + d] = tok[static_cast<size_t>(tokens[t]) * D + d];
  for (int l = 0; l < 2; ++l)
    h = ref.block("transformer.layer." + std::to_string(l) + ".", h, true, true, true, 1e-5,
                  nullptr);
  h = ref.norm("output_norm", h, 1e-5);
  expect_close(run.out, linear_ref(h, tok, nullptr, S, D, V), 5e-5);
}

// A Llama-style decoder (RMSNorm, SwiGLU, grouped-query attention) without positions gets
// RoPE and becomes exactly the shipped Llama config.
TEST(EnableRope, LlamaStyleDecoderBecomesTheShippedLlama) {
  ConfigRegistry reg = layer_config_registry(host());
  const Config shipped_llama = shipped(reg, "llama-small.json");
  const std::string qkv = "transformer.layer.self_attention.attention.qkv";
  Config llama = shipped_llama.clone({{qkv, shipped_llama.get<Config>(qkv + ".input_linear")}});
  ASSERT_EQ(llama.get<Config>(qkv).kind(), "std.QKVLinear");
  // BEGIN enable-rope llama
  Config rope = reg.make("rope.RotaryQKVLinear");
  int n = wrap_child_everywhere(llama, reg, "std.MultiheadAttention", "qkv", rope, "input_linear");
  // END enable-rope llama
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(llama == shipped_llama) << config_to_json(llama);
  ModelGraph g = instantiate_model(host(), llama, token_inputs(4, false));
  EXPECT_EQ(attention_layers(g), std::make_pair(12, 0));
}

TEST(EnableRope, BertEveryAttentionLayerAndTheModelMatchesReference) {
  ConfigRegistry reg = layer_config_registry(host());
  Config bert = shipped(reg, "bert-base.json");
  const int64_t before = parameter_count(instantiate_model(host(), bert, token_inputs(4, true)));
  // BEGIN enable-rope bert
  Config rope = reg.make("rope.RotaryQKVLinear");
  int n = wrap_child_everywhere(bert, reg, "std.MultiheadAttention", "qkv", rope, "input_linear");
  // END enable-rope bert
  EXPECT_EQ(n, 1);
  ModelGraph g = instantiate_model(host(), bert, token_inputs(4, true));
  EXPECT_EQ(attention_layers(g), std::make_pair(12, 0));
  EXPECT_EQ(parameter_count(g), before); // RoPE has no parameters; BERT keeps its positions

  // A small clone against float64: post-norm, erf GELU, padding mask, learnt positions + RoPE.
  const size_t S = 6, D = 32, H = 4, F = 48, V = 29;
  Config small =
      bert.clone({{"dim", static_cast<int64_t>(D)},
                  {"vocab_size", static_cast<int64_t>(V)},
                  {"max_positions", 16},
                  {"transformer.num_layers", 2},
                  {"transformer.layer.self_attention.attention.num_heads", static_cast<int64_t>(H)},
                  {"transformer.layer.feed_forward.hidden_dim", static_cast<int64_t>(F)}});
  std::vector<int32_t> tokens = {1, 28, 4, 4, 0, 0};
  Matrix mask = {1, 1, 1, 1, 0, 0};
  SmallRun run(small, tokens, &mask);
  Reference ref{run.params, S, D, H, F};
  Matrix tok = ref.param("token_weight"), pos = ref.param("position_weight"),
         type = ref.param("type_weight"), h(S * D);
  for (size_t t = 0; t < S; ++t)
    for (size_t d = 0; d < D; ++d)
      h[t * D + d] = tok[static_cast<size_t>(tokens[t]) * D + d] + pos[t * D + d] + type[d];
  h = ref.norm("embedding_norm", h, 1e-12);
  for (int l = 0; l < 2; ++l)
    h = ref.block("transformer.layer." + std::to_string(l) + ".", h, false, false, false, 1e-12,
                  &mask);
  expect_close(run.out, h, 5e-5);
}

TEST(EnableRope, WrapperFieldsAndKindsAreChecked) {
  ConfigRegistry reg = layer_config_registry(host());
  Config bert = shipped(reg, "bert-base.json");
  Config rope = reg.make("rope.RotaryQKVLinear");
  auto error_of = [&](const std::string& kind, const std::string& field, const std::string& inner) {
    try {
      wrap_child_everywhere(bert, reg, kind, field, rope, inner);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("std.MultiHeadAttention", "qkv", "input_linear").find("did you mean"),
            std::string::npos);
  EXPECT_NE(error_of("std.MultiheadAttention", "qkvs", "input_linear").find("qkvs"),
            std::string::npos);
  EXPECT_NE(error_of("std.MultiheadAttention", "causal", "input_linear").find("not a child config"),
            std::string::npos);
  EXPECT_NE(error_of("std.MultiheadAttention", "qkv", "inner").find("inner"), std::string::npos);
  // Nothing was changed by the failed calls.
  EXPECT_TRUE(bert == shipped(reg, "bert-base.json"));
}

} // namespace
} // namespace mt
