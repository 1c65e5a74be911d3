// Attention layers (plugins/layers/attention.cpp) against a straightforward double-precision
// multi-head attention written here: causal and padding masks, a sliding window, grouped-query
// heads, separate and fused projections, and stacked transformers (one layer config repeated,
// or two: alternate_layer at the indexes of alternate_at).
#include <set>

#include "graph_test_util.h"

namespace mt {
namespace {

using namespace graph_test;

json mha_config(const Dims& d, bool causal, bool fused) {
  json c = attention_config(d.KVH == d.H ? "std.MultiheadAttention" : "std.GroupedQueryAttention",
                            d, qkv_config(d, fused), causal);
  if (d.window) c["sliding_window"] = d.window;
  return c;
}

// q, k, v of the reference from the run's own parameters.
void projections(const ModelRun& run, const Dims& d, bool fused, const Matrix& x, Matrix& q,
                 Matrix& k, Matrix& v) {
  const size_t rows = d.B * d.S, qd = d.H * d.Dh, kvd = d.KVH * d.Dh;
  if (!fused) {
    Matrix qb = run.param("qkv.q_bias"), kb = run.param("qkv.k_bias"), vb = run.param("qkv.v_bias");
    q = linear_ref(x, run.param("qkv.q_weight"), &qb, rows, d.D, qd);
    k = linear_ref(x, run.param("qkv.k_weight"), &kb, rows, d.D, kvd);
    v = linear_ref(x, run.param("qkv.v_weight"), &vb, rows, d.D, kvd);
    return;
  }
  Matrix b = run.param("qkv.bias");
  Matrix all = linear_ref(x, run.param("qkv.weight"), &b, rows, d.D, qd + 2 * kvd);
  q.assign(rows * qd, 0), k.assign(rows * kvd, 0), v.assign(rows * kvd, 0);
  for (size_t r = 0; r < rows; ++r) {
    const double* a = &all[r * (qd + 2 * kvd)];
    std::copy(a, a + qd, &q[r * qd]);
    std::copy(a + qd, a + qd + kvd, &k[r * kvd]);
    std::copy(a + qd + kvd, a + qd + 2 * kvd, &v[r * kvd]);
  }
}

void check_attention(const Dims& d, bool causal, bool fused, bool with_mask) {
  SCOPED_TRACE(std::string(causal ? "causal" : "full") + (fused ? " fused" : " separate") +
               (with_mask ? " masked" : "") + " H=" + std::to_string(d.H) +
               " KVH=" + std::to_string(d.KVH));
  std::vector<std::vector<int64_t>> shapes = {
      {static_cast<int64_t>(d.B), static_cast<int64_t>(d.S), static_cast<int64_t>(d.D)}};
  if (with_mask) shapes.push_back({static_cast<int64_t>(d.B), static_cast<int64_t>(d.S)});
  ModelRun run(mha_config(d, causal, fused), shapes);
  Matrix x = input(d.B * d.S * d.D, 1.0);
  Matrix mask(d.B * d.S, 1.0);
  for (size_t j = d.S - 2; j < d.S; ++j) // the last two tokens of the second sequence: padding
    mask[(d.B - 1) * d.S + j] = 0.0;
  Matrix q, k, v;
  projections(run, d, fused, x, q, k, v);
  Matrix ob = run.param("o_bias");
  Matrix want =
      attention_ref(d, q, k, v, run.param("o_weight"), &ob, causal, with_mask ? &mask : nullptr);
  Matrix got = with_mask ? run({x, mask}) : run({x});
  expect_close(got, want, 2e-5);
}

TEST(StdAttention, MultiheadMatchesReference) {
  Dims d{2, 7, 24, 4, 4, 6};
  check_attention(d, false, false, false);
  check_attention(d, true, false, false);
  check_attention(d, false, false, true);
  check_attention(d, true, true, true);
}

TEST(StdAttention, GroupedQueryMatchesReference) {
  Dims d{2, 5, 16, 4, 2, 8};
  check_attention(d, true, false, false);
  check_attention(d, false, true, true);
}

// Mistral's window: query i sees keys i - window + 1 .. i; with 9 positions and a window of 3
// most rows lose keys the causal mask alone would keep.
TEST(StdAttention, SlidingWindowSeesOnlyTheLastPositions) {
  Dims d{2, 9, 16, 4, 2, 8};
  d.window = 3;
  check_attention(d, true, false, false);
  check_attention(d, true, true, true);
  d.window = 1; // each position sees itself only
  check_attention(d, true, false, false);
  // The window changes the result (it is not the causal attention).
  Dims full = d;
  full.window = 0;
  ModelRun run(mha_config(d, true, false), std::vector<int64_t>{2, 9, 16});
  Matrix x = input(d.B * d.S * d.D, 1.0), q, k, v;
  projections(run, d, false, x, q, k, v);
  Matrix ob = run.param("o_bias");
  Matrix causal = attention_ref(full, q, k, v, run.param("o_weight"), &ob, true, nullptr);
  Matrix got = run({x});
  double differs = 0;
  for (size_t i = 0; i < got.size(); ++i)
    differs = std::max(differs, std::abs(got[i] - causal[i]));
  EXPECT_GT(differs, 1e-2);
}

TEST(StdAttention, SlidingWindowNeedsCausalAttention) {
  Dims d{1, 4, 16, 2, 2, 8};
  json c = mha_config(d, false, false);
  c["sliding_window"] = 2;
  try {
    ModelRun run(c, std::vector<int64_t>{1, 4, 16});
    ADD_FAILURE() << "a window without the causal mask was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("sliding_window 2 needs causal attention"),
              std::string::npos)
        << e.what();
  }
}

TEST(StdAttention, FusesIntoScoresSoftmaxContextAndProjections) {
  Dims d{1, 6, 16, 2, 2, 8};
  ModelRun run(mha_config(d, true, true), std::vector<int64_t>{1, 6, 16});
  // qkv projection (+ bias, split) | scores (+ scale, mask) | softmax | context | out (+ bias)
  std::vector<std::string> names;
  for (const FusedGroup& g : run.exec->groups())
    names.push_back(g.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"fused_qkv_proj", "fused_attn_scores", "fused_attn_max",
                                      "fused_attn_context", "fused_attn_out"}));
  // The softmax kernel holds the whole row: max, exp, sum, division.
  EXPECT_EQ(run.exec->groups()[2].computes.size(), 4u);
}

// The stack's output against the layers applied in turn in double precision: the layers at
// `alternate` are alternate_layer's instances, with a sliding window of 2.
void check_stack(const json& stack, const std::set<size_t>& alternate) {
  const size_t B = 1, S = 5, D = 16, H = 2, F = 32;
  const auto L = stack["num_layers"].get<size_t>();
  ModelRun run(stack, std::vector<int64_t>{1, 5, 16});
  Matrix x = input(B * S * D, 1.0), h = x;
  for (size_t l = 0; l < L; ++l) {
    const bool alt = alternate.count(l) > 0;
    const Dims d{B, S, D, H, H, D / H, alt ? size_t{2} : size_t{0}};
    std::string p = (alt ? "alternate_layer." : "layer.") + std::to_string(l) + ".";
    std::string a = p + "self_attention.", f = p + "feed_forward.";
    Matrix n =
        layer_norm_ref(h, run.param(a + "norm.weight"), run.param(a + "norm.bias"), S, D, 1e-5);
    Matrix qb = run.param(a + "attention.qkv.bias");
    Matrix all = linear_ref(n, run.param(a + "attention.qkv.weight"), &qb, S, D, 3 * D);
    Matrix q(S * D), k(S * D), v(S * D);
    for (size_t r = 0; r < S; ++r)
      for (size_t c = 0; c < D; ++c) {
        q[r * D + c] = all[r * 3 * D + c];
        k[r * D + c] = all[r * 3 * D + D + c];
        v[r * D + c] = all[r * 3 * D + 2 * D + c];
      }
    Matrix ob = run.param(a + "attention.o_bias");
    Matrix att = attention_ref(d, q, k, v, run.param(a + "attention.o_weight"), &ob, true, nullptr);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += att[i];
    Matrix n2 =
        layer_norm_ref(h, run.param(f + "norm.weight"), run.param(f + "norm.bias"), S, D, 1e-5);
    Matrix b1 = run.param(f + "linear1.bias"), b2 = run.param(f + "linear2.bias");
    Matrix u = linear_ref(n2, run.param(f + "linear1.weight"), &b1, S, D, F);
    for (double& e : u)
      e = gelu(e);
    Matrix y = linear_ref(u, run.param(f + "linear2.weight"), &b2, S, F, D);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += y[i];
  }
  expect_close(run({x}), h, 5e-5);
  // Every layer has its own parameters.
  EXPECT_NE(run.param("layer.0.feed_forward.linear1.weight"),
            run.param((alternate.count(1) ? "alternate_layer" : "layer") +
                      std::string(".1.feed_forward.linear1.weight")));
}

TEST(StdAttention, StackedTransformerMatchesLayerByLayerReference) {
  const size_t B = 1, S = 5, D = 16, H = 2, F = 32, L = 2;
  json layer = {
      {"kind", "std.TransformerLayer"},
      {"input_dim", D},
      {"self_attention",
       {{"kind", "std.TransformerAttentionLayer"},
        {"input_dim", D},
        {"structure", "prenorm"},
        {"norm", {{"kind", "std.LayerNorm"}, {"input_dim", D}, {"eps", 1e-5}}},
        {"attention", mha_config({B, S, D, H, H, D / H}, true, true)}}},
      {"feed_forward",
       {{"kind", "std.TransformerFeedForwardLayer"},
        {"input_dim", D},
        {"hidden_dim", F},
        {"activation", "gelu"},
        {"structure", "prenorm"},
        {"norm", {{"kind", "std.LayerNorm"}, {"input_dim", D}, {"eps", 1e-5}}},
        {"linear1", {{"kind", "std.Linear"}, {"input_dim", D}, {"output_dim", F}, {"bias", true}}},
        {"linear2",
         {{"kind", "std.Linear"}, {"input_dim", F}, {"output_dim", D}, {"bias", true}}}}}};
  json stack = {{"kind", "std.StackedTransformerLayer"},
                {"input_dim", D},
                {"num_layers", L},
                {"layer", layer}};
  check_stack(stack, {});
  // Layer 1 of 3 an alternate one: the same with a sliding window of 2 (Gemma 2's two kinds).
  json windowed = layer;
  windowed["self_attention"]["attention"]["sliding_window"] = 2;
  stack["num_layers"] = 3;
  stack["alternate_layer"] = windowed;
  stack["alternate_at"] = {1};
  check_stack(stack, {1});
  stack["alternate_at"] = {3};
  EXPECT_THROW(ModelRun(stack, std::vector<int64_t>{1, 5, 16}), std::exception);
  stack.erase("alternate_layer");
  stack["alternate_at"] = {1};
  EXPECT_THROW(ModelRun(stack, std::vector<int64_t>{1, 5, 16}), std::exception);
}
} // namespace
} // namespace mt
