// Model configs built against the loaded layer plugins' schemas (core/graph/layer_registry.h):
// defaults from the schemas, did-you-mean on a misspelt field, every missing required field in
// one error, shared dimensions pushed down through the whole tree, and the resolved tree
// instantiating to the same model as the hand-written JSON of the other tests.
#include "core/graph/layer_registry.h"

#include "core/model/config_error.h"
#include "graph_test_util.h"

namespace mt {
namespace {

using namespace graph_test;

const ConfigRegistry& registry() {
  static ConfigRegistry r = layer_config_registry(host());
  return r;
}

// A small GPT-style decoder: only what is not a default or pushed down is set.
Config tiny_gpt() {
  Config c = registry().make("std.Decoder");
  c.set("vocab_size", 40)
      .set("dim", 16)
      .set("max_positions", 8)
      .set("transformer.num_layers", 2)
      .set("transformer.layer.self_attention.attention.num_heads", 2)
      .set("transformer.layer.self_attention.attention.causal", true)
      .set("transformer.layer.feed_forward.hidden_dim", 32);
  return c;
}

TEST(LayerRegistry, EveryStandardLayerIsAConfigKind) {
  for (const char* k :
       {"std.Linear", "std.LayerNorm", "std.RMSNorm", "std.Embedding", "std.MultiheadAttention",
        "std.TransformerLayer", "std.Decoder", "std.Encoder"})
    EXPECT_TRUE(registry().contains(k)) << k;
  Config lin = registry().make("std.Linear");
  EXPECT_EQ(lin.get<bool>("bias"), true);
}

TEST(LayerRegistry, MisspeltFieldAndMissingRequiredAreNamed) {
  Config c = registry().make("std.MultiheadAttention");
  try {
    c.set("num_head", 4);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'num_heads'"), std::string::npos)
        << e.what();
  }
  Config gpt = registry().make("std.Decoder");
  gpt.set("dim", 16);
  try {
    gpt.validate();
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    std::string m = e.what();
    for (const char* p : {"vocab_size", "transformer.num_layers",
                          "transformer.layer.self_attention.attention.num_heads",
                          "transformer.layer.feed_forward.hidden_dim"})
      EXPECT_NE(m.find(p), std::string::npos) << p << " not in: " << m;
  }
}

TEST(LayerRegistry, DimensionsArePushedDownAndTheModelRuns) {
  Config c = tiny_gpt();
  Config r = c;
  r.resolve();
  EXPECT_EQ(r.get<int64_t>("transformer.layer.self_attention.attention.qkv.input_dim"), 16);
  EXPECT_EQ(r.get<int64_t>("transformer.layer.feed_forward.linear2.output_dim"), 16);
  EXPECT_EQ(r.get<int64_t>("transformer.layer.feed_forward.linear2.input_dim"), 32);
  EXPECT_EQ(r.get<int64_t>("output_norm.input_dim"), 16);
  te::Tensor ids = te::placeholder({1, 5}, DType::i32(), "ids");
  ModelGraph g = instantiate_model(host(), c, {ids});
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0].shape(), (std::vector<int64_t>{1, 5, 40}));
  size_t layer0 = 0;
  for (const ModelParam& p : g.params)
    layer0 += p.path.rfind("transformer.layer.0.", 0) == 0;
  EXPECT_EQ(layer0, 16u); // 2 norms x (w, b), q/k/v w+b, out w+b, linear1 w+b, linear2 w+b
  ModelExecutor exec(g, fuse(g.outputs), llvm());
  exec.set_params(init_params(g.params, 1));
  NDArray in(DType::i32(), {1, 5});
  for (int t = 0; t < 5; ++t)
    in.data_as<int32_t>()[t] = t * 7;
  std::vector<NDArray> out = exec.run({in});
  for (int64_t i = 0; i < out[0].num_elements(); ++i)
    ASSERT_TRUE(std::isfinite(out[0].data_as<float>()[i]));
}

} // namespace
} // namespace mt
