// Whole small models of the standard layers -- a GPT-style decoder (pre-norm, causal, tied LM
// head) and a BERT-style encoder (post-norm, padding mask) -- against float64 references built
// from the same parameters, block by block.
#include <optional>

#include "graph_test_util.h"

namespace mt {
namespace {

using namespace graph_test;

struct Shape {
  int64_t V, D, H, F, L, P; // vocab, width, heads, ffn width, layers, max positions
};

json block(const Shape& s, bool prenorm, bool causal) {
  const char* structure = prenorm ? "prenorm" : "postnorm";
  json norm = {{"kind", "std.LayerNorm"}, {"input_dim", s.D}, {"eps", 1e-5}};
  return {{"kind", "std.TransformerLayer"},
          {"input_dim", s.D},
          {"self_attention",
           {{"kind", "std.TransformerAttentionLayer"},
            {"input_dim", s.D},
            {"structure", structure},
            {"norm", norm},
            {"attention",
             {{"kind", "std.MultiheadAttention"},
              {"input_dim", s.D},
              {"num_heads", s.H},
              {"num_kv_heads", s.H},
              {"per_head_dim", s.D / s.H},
              {"causal", causal},
              {"scale", 0.0},
              {"output_bias", true},
              {"qkv",
               {{"kind", "std.FusedQKVLinear"},
                {"input_dim", s.D},
                {"num_heads", s.H},
                {"num_kv_heads", s.H},
                {"per_head_dim", s.D / s.H},
                {"bias", true}}}}}}},
          {"feed_forward",
           {{"kind", "std.TransformerFeedForwardLayer"},
            {"input_dim", s.D},
            {"hidden_dim", s.F},
            {"activation", "gelu"},
            {"structure", structure},
            {"norm", norm},
            {"linear1",
             {{"kind", "std.Linear"}, {"input_dim", s.D}, {"output_dim", s.F}, {"bias", true}}},
            {"linear2",
             {{"kind", "std.Linear"}, {"input_dim", s.F}, {"output_dim", s.D}, {"bias", true}}}}}};
}

json stack(const Shape& s, bool prenorm, bool causal) {
  return {{"kind", "std.StackedTransformerLayer"},
          {"input_dim", s.D},
          {"num_layers", s.L},
          {"layer", block(s, prenorm, causal)}};
}

// A model's parameter values by path, as float64.
struct Params {
  const std::map<std::string, NDArray>& values;
  Matrix param(const std::string& path) const {
    const NDArray& a = values.at(path);
    return Matrix(a.data_as<float>(), a.data_as<float>() + a.num_elements());
  }
};

// One transformer block of the reference on h [S, D] (batch 1), parameters under `p`.
Matrix block_ref(const Params& run, const std::string& p, const Shape& s, Matrix h, bool prenorm,
                 bool causal, const Matrix* mask) {
  const size_t S = h.size() / s.D, D = s.D, F = s.F;
  auto norm = [&](const std::string& n, const Matrix& x) {
    return layer_norm_ref(x, run.param(n + ".weight"), run.param(n + ".bias"), S, D, 1e-5);
  };
  std::string a = p + "self_attention.", f = p + "feed_forward.";
  Matrix in = prenorm ? norm(a + "norm", h) : h;
  Matrix qb = run.param(a + "attention.qkv.bias");
  Matrix all = linear_ref(in, run.param(a + "attention.qkv.weight"), &qb, S, D, 3 * D);
  Matrix q(S * D), k(S * D), v(S * D);
  for (size_t r = 0; r < S; ++r)
    for (size_t c = 0; c < D; ++c) {
      q[r * D + c] = all[r * 3 * D + c];
      k[r * D + c] = all[r * 3 * D + D + c];
      v[r * D + c] = all[r * 3 * D + 2 * D + c];
    }
  Matrix ob = run.param(a + "attention.o_bias");
  Dims d{1, S, D, static_cast<size_t>(s.H), static_cast<size_t>(s.H), D / s.H};
  Matrix att = attention_ref(d, q, k, v, run.param(a + "attention.o_weight"), &ob, causal, mask);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] += att[i];
  if (!prenorm) h = norm(a + "norm", h);
  Matrix in2 = prenorm ? norm(f + "norm", h) : h;
  Matrix b1 = run.param(f + "linear1.bias"), b2 = run.param(f + "linear2.bias");
  Matrix u = linear_ref(in2, run.param(f + "linear1.weight"), &b1, S, D, F);
  for (double& e : u)
    e = gelu(e);
  Matrix y = linear_ref(u, run.param(f + "linear2.weight"), &b2, S, F, D);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] += y[i];
  return prenorm ? h : norm(f + "norm", h);
}

TEST(StdModels, GptStyleDecoderMatchesReference) {
  const Shape s{37, 16, 2, 32, 2, 12};
  const int64_t S = 7;
  json cfg = {{"kind", "std.Decoder"},
              {"vocab_size", s.V},
              {"dim", s.D},
              {"max_positions", s.P},
              {"tied_lm_head", true},
              {"transformer", stack(s, true, true)},
              {"output_norm", {{"kind", "std.LayerNorm"}, {"input_dim", s.D}, {"eps", 1e-5}}}};
  te::Tensor ids = te::placeholder({1, S}, DType::i32(), "ids");
  ModelGraph g = instantiate_model(host(), cfg, {ids});
  ModelExecutor exec(g, fuse(g.outputs), llvm());
  std::map<std::string, NDArray> params = init_params(g.params, 21);
  for (auto& [path, a] : params) { // non-trivial norms and biases
    float* d = a.data_as<float>();
    for (int64_t i = 0; i < a.num_elements(); ++i)
      d[i] += 0.05f * static_cast<float>(std::sin(0.3 * static_cast<double>(i) + path.size()));
  }
  exec.set_params(params);
  std::vector<int32_t> tokens = {3, 36, 0, 17, 17, 5, 29};
  NDArray in(DType::i32(), {1, S});
  std::copy(tokens.begin(), tokens.end(), in.data_as<int32_t>());
  std::vector<NDArray> out = exec.run({in});
  const float* got = out.at(0).data_as<float>();

  // The reference, from the same parameters.
  Params ref{params};
  Matrix tok = ref.param("token_weight"), pos = ref.param("position_weight");
  Matrix h(S * s.D);
  for (int64_t t = 0; t < S; ++t)
    for (int64_t d = 0; d < s.D; ++d)
      h[t * s.D + d] = tok[tokens[t] * s.D + d] + pos[t * s.D + d];
  for (int64_t l = 0; l < s.L; ++l)
    h = block_ref(ref, "transformer.layer." + std::to_string(l) + ".", s, h, true, true, nullptr);
  h = layer_norm_ref(h, ref.param("output_norm.weight"), ref.param("output_norm.bias"), S, s.D,
                     1e-5);
  Matrix logits = linear_ref(h, tok, nullptr, S, s.D, s.V);
  expect_close(Matrix(got, got + out[0].num_elements()), logits, 5e-5);
}

// A BERT-style encoder of 6 tokens, the last two padding, against the float64 reference;
// `types` given: the token types as the model's third input (else none, all of type 0).
void check_encoder(const std::optional<std::vector<int32_t>>& types) {
  const Shape s{29, 16, 4, 24, 2, 16};
  const int64_t S = 6;
  json cfg = {{"kind", "std.Encoder"},
              {"vocab_size", s.V},
              {"dim", s.D},
              {"max_positions", s.P},
              {"type_vocab_size", 3},
              {"embedding_norm", {{"kind", "std.LayerNorm"}, {"input_dim", s.D}, {"eps", 1e-5}}},
              {"transformer", stack(s, false, false)}};
  te::Tensor ids = te::placeholder({1, S}, DType::i32(), "ids");
  te::Tensor mask = te::placeholder({1, S}, DType::f32(), "mask");
  std::vector<te::Tensor> inputs = {ids, mask};
  if (types) inputs.push_back(te::placeholder({1, S}, DType::i32(), "token_types"));
  ModelGraph g = instantiate_model(host(), cfg, inputs);
  ModelExecutor exec(g, fuse(g.outputs), llvm());
  std::map<std::string, NDArray> params = init_params(g.params, 8);
  for (auto& [path, a] : params) {
    float* d = a.data_as<float>();
    for (int64_t i = 0; i < a.num_elements(); ++i)
      d[i] += 0.05f * static_cast<float>(std::cos(0.4 * static_cast<double>(i) + path.size()));
  }
  exec.set_params(params);
  std::vector<int32_t> tokens = {1, 28, 4, 4, 0, 0};
  Matrix m = {1, 1, 1, 1, 0, 0}; // the last two tokens are padding
  NDArray in(DType::i32(), {1, S}), mk(DType::f32(), {1, S}), ty(DType::i32(), {1, S});
  std::copy(tokens.begin(), tokens.end(), in.data_as<int32_t>());
  for (int64_t t = 0; t < S; ++t)
    mk.data_as<float>()[t] = static_cast<float>(m[t]);
  std::vector<NDArray> args = {in, mk};
  if (types) {
    std::copy(types->begin(), types->end(), ty.data_as<int32_t>());
    args.push_back(ty);
  }
  std::vector<NDArray> out = exec.run(args);
  const float* got = out.at(0).data_as<float>();

  Params ref{params};
  Matrix tok = ref.param("token_weight"), pos = ref.param("position_weight"),
         type = ref.param("type_weight");
  Matrix h(S * s.D);
  for (int64_t t = 0; t < S; ++t) {
    const int64_t row = types ? (*types)[t] : 0;
    for (int64_t d = 0; d < s.D; ++d)
      h[t * s.D + d] = tok[tokens[t] * s.D + d] + pos[t * s.D + d] + type[row * s.D + d];
  }
  h = layer_norm_ref(h, ref.param("embedding_norm.weight"), ref.param("embedding_norm.bias"), S,
                     s.D, 1e-5);
  for (int64_t l = 0; l < s.L; ++l)
    h = block_ref(ref, "transformer.layer." + std::to_string(l) + ".", s, h, false, false, &m);
  expect_close(Matrix(got, got + out[0].num_elements()), h, 5e-5);
}

TEST(StdModels, BertStyleEncoderWithPaddingMatchesReference) {
  check_encoder(std::nullopt);
}

// A sentence pair: the second segment's tokens read row 1 of the type table (row 2 for one of
// them), as Hugging Face's token_type_ids.
TEST(StdModels, BertStyleEncoderWithTokenTypesMatchesReference) {
  check_encoder(std::vector<int32_t>{0, 0, 1, 2, 1, 0});
}

// The encoder's inputs are told apart by dtype; a second mask, a second set of types or an
// input of another shape is refused with what it takes.
TEST(StdModels, BertStyleEncoderRefusesInputsItDoesNotTake) {
  const Shape s{29, 16, 4, 24, 1, 16};
  json cfg = {{"kind", "std.Encoder"},
              {"vocab_size", s.V},
              {"dim", s.D},
              {"max_positions", s.P},
              {"embedding_norm", {{"kind", "std.LayerNorm"}, {"input_dim", s.D}, {"eps", 1e-5}}},
              {"transformer", stack(s, false, false)}};
  te::Tensor ids = te::placeholder({1, 6}, DType::i32(), "ids");
  te::Tensor mask = te::placeholder({1, 6}, DType::f32(), "mask");
  te::Tensor types = te::placeholder({1, 6}, DType::i32(), "token_types");
  te::Tensor short_types = te::placeholder({1, 5}, DType::i32(), "token_types");
  for (const std::vector<te::Tensor>& bad :
       {std::vector<te::Tensor>{ids, mask, mask}, std::vector<te::Tensor>{ids, types, types},
        std::vector<te::Tensor>{ids, mask, short_types}}) {
    try {
      instantiate_model(host(), cfg, bad);
      ADD_FAILURE() << "inputs accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("token types [B, S] (integer)"), std::string::npos)
          << e.what();
    }
  }
  // Types without a mask are fine: told apart by dtype.
  EXPECT_NO_THROW(instantiate_model(host(), cfg, {ids, types}));
}

} // namespace
} // namespace mt
