// The standard layers (plugins/layers) instantiated from config trees, fused and run by the
// LLVM CPU target, against straightforward double-precision references written here.
#include "graph_test_util.h"

namespace mt {
namespace {

using namespace graph_test;

TEST(StdLayers, LinearMatchesReferenceOnEveryLeadingShape) {
  json cfg = {{"kind", "std.Linear"}, {"input_dim", 24}, {"output_dim", 10}, {"bias", true}};
  ModelRun run(cfg, {2, 3, 24});
  Matrix x = input(2 * 3 * 24);
  Matrix w = run.param("weight"), b = run.param("bias");
  expect_close(run(x, {2, 3, 24}), linear_ref(x, w, &b, 6, 24, 10), 1e-5);
  // Without bias: one group, the contraction alone.
  cfg["bias"] = false;
  ModelRun nobias(cfg, {5, 24});
  EXPECT_EQ(nobias.exec->groups().size(), 1u);
  Matrix x2 = input(5 * 24, 0.5);
  expect_close(nobias(x2, {5, 24}), linear_ref(x2, nobias.param("weight"), nullptr, 5, 24, 10),
               1e-5);
}

TEST(StdLayers, DropoutIsTheIdentityAtInference) {
  ModelRun run({{"kind", "std.Dropout"}, {"rate", 0.3}}, {2, 5});
  EXPECT_EQ(run.exec->groups().size(), 0u); // no kernel at all
  Matrix x = input(10);
  expect_close(run(x, {2, 5}), x, 1e-7); // x rounded to f32, nothing else
  try {
    instantiate_model(host(), json{{"kind", "std.Dropout"}, {"rate", 1.5}},
                      {te::placeholder({2, 5}, DType::f32(), "x")});
    FAIL() << "rate 1.5 accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("rate must be in [0, 1)"), std::string::npos) << e.what();
  }
}

TEST(StdLayers, NormsMatchReference) {
  Matrix x = input(7 * 33, 3.0);
  ModelRun ln({{"kind", "std.LayerNorm"}, {"input_dim", 33}, {"eps", 1e-5}}, {7, 33});
  expect_close(ln(x, {7, 33}), layer_norm_ref(x, ln.param("weight"), ln.param("bias"), 7, 33, 1e-5),
               1e-5);
  // The two row reductions and the normalisation: one kernel.
  EXPECT_EQ(ln.exec->groups().size(), 1u);
  ModelRun rms({{"kind", "std.RMSNorm"}, {"input_dim", 33}, {"eps", 1e-6}}, {7, 33});
  expect_close(rms(x, {7, 33}), rms_norm_ref(x, rms.param("weight"), 7, 33, 1e-6), 1e-5);
}

json ffn_config(const std::string& activation, bool gated, const std::string& norm) {
  const int64_t d = 16, h = 40;
  json lin1 = {{"kind", "std.Linear"}, {"input_dim", d}, {"output_dim", h}, {"bias", !gated}};
  json lin2 = {{"kind", "std.Linear"}, {"input_dim", h}, {"output_dim", d}, {"bias", !gated}};
  json cfg = {{"kind", "std.TransformerFeedForwardLayer"},
              {"input_dim", d},
              {"hidden_dim", h},
              {"activation", activation},
              {"structure", "prenorm"},
              {"norm", {{"kind", norm}, {"input_dim", d}, {"eps", 1e-5}}},
              {"linear1", lin1},
              {"linear2", lin2}};
  if (gated) cfg["linear1_gate"] = lin1;
  return cfg;
}

TEST(StdLayers, FeedForwardGeluMatchesReferenceInThreeKernels) {
  const size_t rows = 6, d = 16, h = 40;
  ModelRun run(ffn_config("gelu", false, "std.LayerNorm"), {2, 3, 16});
  Matrix x = input(rows * d, 2.0);
  Matrix n = layer_norm_ref(x, run.param("norm.weight"), run.param("norm.bias"), rows, d, 1e-5);
  Matrix b1 = run.param("linear1.bias"), b2 = run.param("linear2.bias");
  Matrix u = linear_ref(n, run.param("linear1.weight"), &b1, rows, d, h);
  for (double& v : u)
    v = gelu(v);
  Matrix y = linear_ref(u, run.param("linear2.weight"), &b2, rows, h, d);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] += x[i];
  expect_close(run(x, {2, 3, 16}), y, 1e-5);
  // norm | linear1 + bias + gelu | linear2 + bias + residual
  ASSERT_EQ(run.exec->groups().size(), 3u);
  EXPECT_FALSE(run.exec->groups()[0].has_contraction);
  EXPECT_EQ(run.exec->groups()[1].computes.size(), 3u);
  EXPECT_EQ(run.exec->groups()[2].computes.size(), 3u);
}

TEST(StdLayers, FeedForwardSwiGluWithRmsNormMatchesReference) {
  const size_t rows = 5, d = 16, h = 40;
  ModelRun run(ffn_config("silu", true, "std.RMSNorm"), {5, 16});
  Matrix x = input(rows * d, 1.5);
  Matrix n = rms_norm_ref(x, run.param("norm.weight"), rows, d, 1e-5);
  Matrix up = linear_ref(n, run.param("linear1.weight"), nullptr, rows, d, h);
  Matrix gate = linear_ref(n, run.param("linear1_gate.weight"), nullptr, rows, d, h);
  for (size_t i = 0; i < up.size(); ++i)
    up[i] *= silu(gate[i]);
  Matrix y = linear_ref(up, run.param("linear2.weight"), nullptr, rows, h, d);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] += x[i];
  expect_close(run(x, {5, 16}), y, 1e-5);
}

TEST(StdLayers, ParametersArePathNamedAndDeterministic) {
  ModelRun a(ffn_config("gelu", false, "std.LayerNorm"), {4, 16}, 11);
  std::vector<std::string> paths;
  for (const ModelParam& p : a.graph.params)
    paths.push_back(p.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"norm.weight", "norm.bias", "linear1.weight",
                                             "linear1.bias", "linear2.weight", "linear2.bias"}));
  ModelRun b(ffn_config("gelu", false, "std.LayerNorm"), {4, 16}, 11);
  EXPECT_EQ(a.param("linear1.weight"), b.param("linear1.weight"));
  ModelRun c(ffn_config("gelu", false, "std.LayerNorm"), {4, 16}, 12);
  EXPECT_NE(a.param("linear1.weight"), c.param("linear1.weight"));
  // normal(0.02): the sample's spread is about that.
  Matrix w = a.param("linear1.weight");
  double ss = 0;
  for (double v : w)
    ss += v * v;
  EXPECT_NEAR(std::sqrt(ss / static_cast<double>(w.size())), 0.02 * 1.0, 0.1);
}

TEST(StdLayers, ConfigErrorsNameTheLayerAndPath) {
  te::Tensor x = te::placeholder({4, 16}, DType::f32(), "x");
  json cfg = ffn_config("gelu", false, "std.LayerNorm");
  cfg["norm"]["kind"] = "std.NoSuchNorm";
  try {
    instantiate_model(host(), cfg, {x});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("unknown layer 'std.NoSuchNorm' at 'norm' (plugin not found"),
              std::string::npos)
        << m;
  }
  cfg = ffn_config("gelu", false, "std.LayerNorm");
  cfg["linear1"]["input_dim"] = 17; // does not match the input
  try {
    instantiate_model(host(), cfg, {x});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("std.Linear: input's last axis is 16, input_dim is 17"), std::string::npos)
        << m;
  }
  cfg = ffn_config("tanhh", false, "std.LayerNorm");
  EXPECT_THROW(instantiate_model(host(), cfg, {x}), std::invalid_argument);
}

TEST(StdLayers, EmbeddingGathersRowsAndClampsIds) {
  te::Tensor ids = te::placeholder({2, 5}, DType::i32(), "ids");
  json cfg = {{"kind", "std.Embedding"}, {"num_embeddings", 11}, {"dim", 6}};
  ModelGraph g = instantiate_model(host(), cfg, {ids});
  ModelExecutor exec(g, fuse(g.outputs), llvm());
  std::map<std::string, NDArray> params = init_params(g.params, 5);
  exec.set_params(params);
  NDArray in(DType::i32(), {2, 5});
  std::vector<int32_t> id = {0, 3, 10, 7, 7, 1, -4, 25, 2, 9};
  std::copy(id.begin(), id.end(), in.data_as<int32_t>());
  std::vector<NDArray> out = exec.run({in});
  const float* w = params.at("weight").data_as<float>();
  const float* y = out.at(0).data_as<float>();
  for (size_t t = 0; t < id.size(); ++t) {
    int row = std::min(std::max(id[t], 0), 10);
    for (size_t d = 0; d < 6; ++d)
      EXPECT_EQ(y[t * 6 + d], w[row * 6 + d]) << "token " << t << " id " << id[t];
  }
}

} // namespace
} // namespace mt
