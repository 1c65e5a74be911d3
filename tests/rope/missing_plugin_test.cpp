// Without the rope plugin's library: a host that loads every plugin of the build but rope.so
// refuses a config that uses rope.RotaryQKVLinear with the layer's name and where it sits --
// from the JSON tree and from a typed config alike -- and carries on (no crash); the same
// config instantiates once the library is there.
#include <filesystem>

#include "core/graph/layer_registry.h"
#include "core/model/config_json.h"
#include "rope_test_util.h"

namespace mt {
namespace {

using namespace rope_test;
namespace fs = std::filesystem;

// The build's plugins, rope.so left out.
const PluginHost& host_without_rope() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(METATUNE_BUILD_PLUGIN_DIR))
      if (e.is_regular_file() && !fs::equivalent(e.path(), ROPE_PLUGIN_FILE))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files)
      p->load(f);
    return p;
  }();
  return *h;
}

// A two-layer GPT-style decoder whose attention projections are wrapped in RoPE.
json tiny_rope_decoder() {
  return json::parse(R"({
    "kind": "std.Decoder", "vocab_size": 31, "dim": 16, "max_positions": 0,
    "transformer": {"kind": "std.StackedTransformerLayer", "input_dim": 16, "num_layers": 2,
      "layer": {"kind": "std.TransformerLayer", "input_dim": 16,
        "self_attention": {"kind": "std.TransformerAttentionLayer", "input_dim": 16,
          "norm": {"kind": "std.LayerNorm", "input_dim": 16},
          "attention": {"kind": "std.MultiheadAttention", "input_dim": 16, "num_heads": 2,
            "causal": true,
            "qkv": {"kind": "rope.RotaryQKVLinear", "input_dim": 16, "num_heads": 2,
              "input_linear": {"kind": "std.QKVLinear", "input_dim": 16, "num_heads": 2},
              "rotary": {"kind": "rope.RotaryTable"}}}},
        "feed_forward": {"kind": "std.TransformerFeedForwardLayer", "input_dim": 16,
          "hidden_dim": 32, "norm": {"kind": "std.LayerNorm", "input_dim": 16},
          "linear1": {"kind": "std.Linear", "input_dim": 16, "output_dim": 32},
          "linear2": {"kind": "std.Linear", "input_dim": 32, "output_dim": 16}}}},
    "output_norm": {"kind": "std.LayerNorm", "input_dim": 16}})");
}

bool has_layer(const PluginHost& h, const std::string& name) {
  return h.find(ComponentKind::Layer, name) != nullptr;
}

TEST(RopeMissingPlugin, TheOtherPluginsLoadAndRopeIsAbsent) {
  const PluginHost& h = host_without_rope();
  EXPECT_TRUE(has_layer(h, "std.MultiheadAttention"));
  EXPECT_FALSE(has_layer(h, "rope.RotaryQKVLinear"));
  EXPECT_FALSE(has_layer(h, "rope.RotaryTable"));
  EXPECT_TRUE(has_layer(host(), "rope.RotaryQKVLinear")); // the whole build has it
  for (const PluginRecord& r : h.plugins())
    EXPECT_TRUE(r.loaded()) << r.message;
}

TEST(RopeMissingPlugin, JsonTreeFailsNamingTheLayerAndItsPath) {
  std::vector<te::Tensor> ids = {te::placeholder({1, 4}, DType::i32(), "ids")};
  std::string what;
  try {
    instantiate_model(host_without_rope(), tiny_rope_decoder(), ids);
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("unknown layer 'rope.RotaryQKVLinear' at "
                      "'transformer.layer.0.self_attention.attention.qkv' (plugin not found"),
            std::string::npos)
      << what;
  // The host is still usable, and with the plugin the same tree instantiates.
  EXPECT_NO_THROW(instantiate_model(
      host_without_rope(), json{{"kind", "std.Linear"}, {"input_dim", 4}, {"output_dim", 2}},
      {te::placeholder({3, 4}, DType::f32(), "x")}));
  ModelGraph g = instantiate_model(host(), tiny_rope_decoder(), ids);
  EXPECT_EQ(g.outputs.at(0).shape(), (std::vector<int64_t>{1, 4, 31}));
}

TEST(RopeMissingPlugin, TypedConfigFailsNamingTheKind) {
  const std::string text = tiny_rope_decoder().dump();
  std::string what;
  try {
    config_from_json(layer_config_registry(host_without_rope()), text);
  } catch (const ConfigError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("unknown config kind 'rope.RotaryQKVLinear'"), std::string::npos) << what;
  EXPECT_NE(what.find("no loaded plugin provides a layer of this kind"), std::string::npos) << what;
  Config c = config_from_json(layer_config_registry(host()), text);
  EXPECT_EQ(c.get<Config>("transformer.layer.self_attention.attention.qkv").kind(),
            "rope.RotaryQKVLinear");
}

} // namespace
} // namespace mt
