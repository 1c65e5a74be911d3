// A layer plugin out of tree: tests/graph/external_layer, a separate CMake project built
// against the installed SDK, adds ext.SquaredReLUFeedForward. `metatune layers` lists it with
// its fields, and a config tree uses it as the feed-forward sublayer of a std.TransformerLayer,
// its own projections std.Linear children: instantiated, fused, built and run, it matches a
// float64 reference. Nothing of metatune is rebuilt: the host and the CLI of this build load
// it from its directory. Without that directory the same config names the missing layer.
#include <algorithm>
#include <filesystem>

#include "../abi/external_build.h"
#include "cli_run.h"
#include "core/graph/layer_registry.h"
#include "core/model/config_json.h"
#include "graph_test_util.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

using namespace graph_test;

// Only what differs from the schemas' defaults: input_dim reaches the feed-forward layer and
// its children by push-down, the ext layer's own schema pushing it on to its linears.
constexpr const char* kTransformer = R"json({
  "kind": "std.TransformerLayer",
  "input_dim": 16,
  "self_attention": {
    "kind": "std.TransformerAttentionLayer",
    "attention": {"kind": "std.MultiheadAttention", "num_heads": 2, "causal": true}
  },
  "feed_forward": {"kind": "ext.SquaredReLUFeedForward", "hidden_dim": 40, "scale_init": 0.25}
})json";

const std::string kDecoder =
    std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/tiny-gpt-ext.json";

// The plugin, built once per test process, and a host with its directory and this build's.
class ExternalLayer : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    ext_ = std::make_unique<abi_test::ExternalBuild>("ext_layer");
    ASSERT_TRUE(ext_->install_sdk()) << ext_->log();
    fs::path dir =
        ext_->build(MT_TEST_EXTERNAL_LAYER_SOURCE_DIR, "build", "-DCMAKE_BUILD_TYPE=Release");
    ASSERT_TRUE(!dir.empty() && fs::exists(dir / "ext_layers.so")) << ext_->log();
    plugins_ = std::make_unique<PluginHost>();
    plugins_->discover({dir, METATUNE_BUILD_PLUGIN_DIR});
    dir_ = dir;
  }
  static void TearDownTestSuite() {
    plugins_.reset();
    ext_.reset();
  }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "the plugin did not build (see the suite's failure)";
  }

  static inline std::unique_ptr<abi_test::ExternalBuild> ext_;
  static inline fs::path dir_;
  static inline std::unique_ptr<PluginHost> plugins_;
};

// The config text as the host instantiates it: defaults filled in, dimensions pushed down.
json resolved(const ConfigRegistry& registry, const std::string& text) {
  Config c = config_from_json(registry, text, "ext-transformer.json");
  c.resolve();
  c.check_required();
  return json::parse(config_to_json(c));
}

TEST_F(ExternalLayer, LoadsAndIsListedWithItsFields) {
  const ComponentInfo* c = plugins_->find(ComponentKind::Layer, "ext.SquaredReLUFeedForward");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->plugin_name, "ext_layers");
  EXPECT_EQ(fs::path(c->plugin_path).parent_path(), dir_);
  const PluginRecord& r = plugins_->load(dir_ / "ext_layers.so"); // the record discover made
  EXPECT_TRUE(r.loaded()) << r.message;
  EXPECT_EQ(r.version, "0.1");

  CliResult cli = metatune("layers --path '" + dir_.string() + "'");
  ASSERT_EQ(cli.status, 0) << cli.output;
  size_t at = cli.output.find("ext.SquaredReLUFeedForward\n");
  ASSERT_NE(at, std::string::npos) << cli.output;
  std::string entry = cli.output.substr(at, cli.output.find("\nstd.", at) - at);
  for (const char* field :
       {"Primer's squared-ReLU feed-forward with a scaled residual",
        "input_dim (int, required): model width", "hidden_dim (int, required): inner width",
        "scale_init (float = 0.5): initial value of the residual scale",
        "linear1 (layer = {\"kind\":\"std.Linear\"}): up",
        "pushes input_dim -> [\"linear1.input_dim\",\"linear2.output_dim\"]"})
    EXPECT_NE(entry.find(field), std::string::npos) << field << "\n" << entry;
  // The standard layers are still there beside it.
  EXPECT_NE(cli.output.find("std.TransformerLayer\n"), std::string::npos) << cli.output;
}

TEST_F(ExternalLayer, InsideATransformerLayerMatchesReference) {
  const size_t B = 2, S = 5, D = 16, H = 2, F = 40, rows = B * S;
  json cfg = resolved(layer_config_registry(*plugins_), kTransformer);
  ModelRun run(*plugins_, cfg, std::vector<std::vector<int64_t>>{{2, 5, 16}});
  const std::string a = "self_attention.", f = "feed_forward.";
  // The ext layer declared its scale; its children, std.Linear, their weights and biases.
  const ModelParam* scale = nullptr;
  for (const ModelParam& p : run.graph.params)
    if (p.path == f + "scale") scale = &p;
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->shape, std::vector<int64_t>{16});
  EXPECT_EQ(json::parse(scale->init), json::parse(R"({"kind": "constant", "value": 0.25})"));
  EXPECT_EQ(run.params.at(f + "linear1.weight").shape(), (std::vector<int64_t>{40, 16}));
  EXPECT_EQ(run.params.at(f + "linear2.weight").shape(), (std::vector<int64_t>{16, 40}));

  Matrix x = input(rows * D, 1.5);
  const Dims d{B, S, D, H, H, D / H};
  Matrix n =
      layer_norm_ref(x, run.param(a + "norm.weight"), run.param(a + "norm.bias"), rows, D, 1e-5);
  const std::string qkv = a + "attention.qkv.";
  Matrix qb = run.param(qkv + "q_bias"), kb = run.param(qkv + "k_bias"),
         vb = run.param(qkv + "v_bias"), ob = run.param(a + "attention.o_bias");
  Matrix q = linear_ref(n, run.param(qkv + "q_weight"), &qb, rows, D, D);
  Matrix k = linear_ref(n, run.param(qkv + "k_weight"), &kb, rows, D, D);
  Matrix v = linear_ref(n, run.param(qkv + "v_weight"), &vb, rows, D, D);
  Matrix h = attention_ref(d, q, k, v, run.param(a + "attention.o_weight"), &ob, true, nullptr);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] += x[i];
  Matrix b1 = run.param(f + "linear1.bias"), b2 = run.param(f + "linear2.bias");
  Matrix u = linear_ref(h, run.param(f + "linear1.weight"), &b1, rows, D, F);
  for (double& e : u)
    e = std::max(e, 0.0) * std::max(e, 0.0);
  Matrix y = linear_ref(u, run.param(f + "linear2.weight"), &b2, rows, F, D);
  Matrix s = run.param(f + "scale");
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = h[i] + s[i % D] * y[i];
  expect_close(run({x}), y, 2e-5);

  // The ext layer's elementwise work folds into its projections' kernels, as std's does.
  for (const char* name : {"squared_relu", "scaled_residual"}) {
    bool folded = false;
    for (const FusedGroup& g : run.exec->groups())
      for (const te::Tensor& t : g.computes)
        folded = folded || (t.name().find(name) != std::string::npos && g.has_contraction);
    EXPECT_TRUE(folded) << name;
  }

  // The CLI of this build runs a decoder whose layers use it, given the directory.
  CliResult r = metatune("model run --config '" + kDecoder + "' --path '" + dir_.string() +
                         "' --seq 5 --repeats 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("next token after the last position: "), std::string::npos) << r.output;
}

// This build's host alone: the standard layers, not the plugin.
TEST(ExternalLayerMissing, TheConfigNamesTheLayerAndThatNoPluginProvidesIt) {
  const char* why = "unknown config kind 'ext.SquaredReLUFeedForward': no loaded plugin "
                    "provides a layer of this kind";
  try {
    resolved(layer_config_registry(host()), kTransformer);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("ext-transformer.json: at 'feed_forward': "), std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
    EXPECT_NE(m.find("`metatune layers`"), std::string::npos) << m;
  }
  CliResult r = metatune("model run --config '" + kDecoder + "' --seq 5 --repeats 1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("tiny-gpt-ext.json: at 'transformer.layer.feed_forward': "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
}

} // namespace
} // namespace mt
