// Configs as JSON (core/model/config_json.h): the exact text written, exact round trips of
// every field type, hand-written files with fields left out, push-down after loading, JSON and
// path=value overrides, and the errors for bad input (naming the file, the path, the problem).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "config_test_schemas.h"
#include "core/model/config_json.h"

namespace mt {
namespace {

using test::config_test_registry;

template <typename F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(ConfigJson, WritesKindThenEveryFieldInSchemaOrder) {
  ConfigRegistry reg = config_test_registry();
  Config lin = reg.make("Linear");
  lin.set("input_dim", 4);
  EXPECT_EQ(config_to_json(lin), "{\n"
                                 "  \"kind\": \"Linear\",\n"
                                 "  \"input_dim\": 4,\n"
                                 "  \"output_dim\": null,\n"
                                 "  \"bias\": true\n"
                                 "}\n");

  Config stack = reg.make("Stack");
  stack.clear("layer").set("layers",
                           std::vector<Config>{reg.make("LayerNorm").set("input_dim", 3)});
  EXPECT_EQ(config_to_json(stack), "{\n"
                                   "  \"kind\": \"Stack\",\n"
                                   "  \"num_layers\": 2,\n"
                                   "  \"input_dim\": null,\n"
                                   "  \"layer\": null,\n"
                                   "  \"layers\": [\n"
                                   "    {\n"
                                   "      \"kind\": \"LayerNorm\",\n"
                                   "      \"input_dim\": 3,\n"
                                   "      \"eps\": 1e-05\n"
                                   "    }\n"
                                   "  ]\n"
                                   "}\n");

  Config exp = reg.make("Experiment");
  exp.set("note", "a \"quoted\"\nline").clear("model").set("learning_rates", std::vector<double>{});
  EXPECT_EQ(config_to_json(exp), "{\n"
                                 "  \"kind\": \"Experiment\",\n"
                                 "  \"name\": \"exp\",\n"
                                 "  \"seed\": 0,\n"
                                 "  \"learning_rates\": [],\n"
                                 "  \"mesh\": [1, 1],\n"
                                 "  \"note\": \"a \\\"quoted\\\"\\nline\",\n"
                                 "  \"model\": null\n"
                                 "}\n");
}

// A tree with every field type and awkward values: floats that need 17 digits, subnormals,
// -0.0, int64 extremes, non-ASCII strings, empty and nested lists, unset fields.
Config awkward_experiment(const ConfigRegistry& reg) {
  Config exp = reg.make("Experiment");
  exp.set("name", "r\u00e9sum\u00e9 \u6f22\u5b57 \\ / \t")
      .set("seed", std::numeric_limits<int64_t>::min())
      .set("learning_rates", std::vector<double>{0.1, 1.0 / 3.0, -0.0, 5e-324,
                                                 1.7976931348623157e308, 2.0, 123456789.123456789})
      .set("mesh", std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 0, -1})
      .set("model.vocab_size", 50257)
      .set("model.input_dim", 768)
      .set("model.decoder.layer.attention.dropout", 0.1 + 0.2)
      .set("model.decoder.layer.feed_forward.activation", "")
      .clear("model.decoder.layer.norm");
  exp.set("model.decoder.layers",
          std::vector<Config>{reg.make("TransformerLayer"), reg.make("LayerNorm")});
  exp.set("model.decoder.layer.attention.qkv_proj",
          reg.make("RotaryLinear").set("input_linear", reg.make("Linear")));
  exp.resolve();
  return exp;
}

TEST(ConfigJson, RoundTripsExactly) {
  ConfigRegistry reg = config_test_registry();
  Config exp = awkward_experiment(reg);
  std::string text = config_to_json(exp);
  Config back = config_from_json(reg, text);
  EXPECT_TRUE(back == exp);
  EXPECT_EQ(config_to_json(back), text);
  // Against the values put in, not only against the writer.
  std::vector<double> lr = back.get<std::vector<double>>("learning_rates");
  ASSERT_EQ(lr.size(), 7u);
  EXPECT_EQ(lr[1], 1.0 / 3.0);
  EXPECT_TRUE(std::signbit(lr[2]) && lr[2] == 0.0);
  EXPECT_EQ(lr[3], 5e-324);
  EXPECT_EQ(lr[4], std::numeric_limits<double>::max());
  EXPECT_EQ(back.get<double>("model.decoder.layer.attention.dropout"), 0.1 + 0.2);
  EXPECT_EQ(back.get<int64_t>("seed"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(back.get<std::vector<int64_t>>("mesh")[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(back.get<std::string>("name"), "r\u00e9sum\u00e9 \u6f22\u5b57 \\ / \t");
  EXPECT_FALSE(back.is_set("model.decoder.layer.norm"));
  EXPECT_FALSE(back.is_set("note"));
  EXPECT_EQ(back.child("model.decoder.layers[1]").kind(), "LayerNorm");
  EXPECT_EQ(back.get<int>("model.decoder.layer.attention.qkv_proj.input_linear.input_dim"), 768);
  EXPECT_EQ(back.get<int>("model.decoder.layers[0].attention.qkv_proj.input_dim"), 768);

  // Through a file as well.
  std::string path = ::testing::TempDir() + "/config_json_roundtrip.json";
  save_config_file(exp, path);
  EXPECT_TRUE(load_config_file(reg, path) == exp);
  std::remove(path.c_str());
}

TEST(ConfigJson, HandWrittenFileMayLeaveFieldsOut) {
  ConfigRegistry reg = config_test_registry();
  Config c = config_from_json(reg, R"({"kind": "TransformerLayer", "input_dim": 16,
      "attention": {"kind": "Attention", "num_heads": 2, "dropout": 0},
      "feed_forward": {"hidden_dim": 64, "kind": "FeedForward"}})");
  EXPECT_EQ(c.get<int>("attention.num_heads"), 2);
  EXPECT_EQ(c.get<double>("attention.dropout"), 0.0); // an int for a float field
  EXPECT_EQ(c.get<std::string>("feed_forward.activation"), "gelu");
  EXPECT_EQ(c.child("norm").kind(), "LayerNorm"); // left out: the default child
  EXPECT_EQ(c.child("attention.qkv_proj").kind(), "Linear");
  c.resolve();
  EXPECT_EQ(c.get<int>("feed_forward.linear1.output_dim"), 64);
  EXPECT_EQ(c.get<int>("norm.input_dim"), 16);
}

TEST(ConfigJson, LoadedPushedValuesFollowTheirParent) {
  ConfigRegistry reg = config_test_registry();
  Config layer = reg.make("TransformerLayer");
  layer.set("input_dim", 64).resolve();
  Config back = config_from_json(reg, config_to_json(layer));
  EXPECT_EQ(back.origin("input_dim"), ValueOrigin::Set);
  EXPECT_EQ(back.origin("attention.input_dim"), ValueOrigin::Pushed);
  EXPECT_EQ(back.origin("attention.qkv_proj.input_dim"), ValueOrigin::Pushed);
  back.set("input_dim", 96).resolve(); // no conflict: the children follow
  EXPECT_EQ(back.get<int>("feed_forward.linear2.output_dim"), 96);

  // A file whose child disagrees with its parent loads, and resolve() reports it.
  Config bad = config_from_json(reg, R"({"kind": "TransformerLayer", "input_dim": 64,
      "norm": {"kind": "LayerNorm", "input_dim": 32}})");
  EXPECT_HAS(error_of([&] { bad.resolve(); }),
             "'input_dim' = 64 is pushed to 'norm.input_dim', which is set to 32");
}

TEST(ConfigJson, BadInputNamesSourcePathAndProblem) {
  ConfigRegistry reg = config_test_registry();
  auto load = [&](const std::string& text) {
    return error_of([&] { config_from_json(reg, text, "my.json"); });
  };
  std::string m = load("{\"kind\": \"Linear\",\n \"input_dim\": }");
  EXPECT_HAS(m, "my.json: malformed JSON: parse error at line 2, column 15");
  EXPECT_HAS(load(""), "my.json: malformed JSON");
  EXPECT_HAS(load("[1, 2]"), "my.json: at '(root)': expected a config object, given array");
  EXPECT_HAS(load("{\"input_dim\": 3}"), "my.json: at '(root)': config object without \"kind\"");
  EXPECT_HAS(load("{\"kind\": 3}"), "\"kind\" must be a string, given int 3");
  EXPECT_HAS(load(R"({"kind": "Atention"})"),
             "my.json: at '(root)': unknown config kind 'Atention' (did you mean 'Attention'?)");
  EXPECT_HAS(
      load(R"({"kind": "TransformerLayer", "attention": {"kind": "Attention", "num_head": 2}})"),
      "my.json: at 'attention.num_head': kind 'Attention' has no field 'num_head' (did you "
      "mean 'num_heads'?)");
  EXPECT_HAS(
      load(R"({"kind": "TransformerLayer", "attention": {"kind": "Attention", "num_heads": "8"}})"),
      "my.json: at 'attention.num_heads': expected int, given string \"8\"");
  EXPECT_HAS(load(R"({"kind": "Attention", "num_heads": 8.0})"), "expected int, given float 8.0");
  EXPECT_HAS(load(R"({"kind": "Attention", "causal": 1})"),
             "at 'causal': expected bool, given int 1");
  EXPECT_HAS(load(R"({"kind": "Experiment", "mesh": [1, "x"]})"),
             "my.json: at 'mesh[1]': expected int, given string \"x\"");
  EXPECT_HAS(load(R"({"kind": "Experiment", "mesh": [1, null]})"),
             "at 'mesh[1]': expected int, given null");
  EXPECT_HAS(load(R"({"kind": "Experiment", "learning_rates": [0.1, true]})"),
             "at 'learning_rates[1]': expected float, given bool true");
  EXPECT_HAS(load(R"({"kind": "Experiment", "mesh": 3})"),
             "at 'mesh': expected int list, given int 3");
  EXPECT_HAS(load(R"({"kind": "Experiment", "seed": 9223372036854775808})"),
             "at 'seed': integer 9223372036854775808 is out of range (int64)");
  EXPECT_HAS(load(R"({"kind": "Experiment", "learning_rates": [1e999]})"),
             "my.json: malformed JSON: number overflow parsing '1e999'");
  EXPECT_HAS(load(R"({"kind": "Experiment", "model": [1]})"),
             "at 'model': expected a config object, given array");
  EXPECT_HAS(load(R"({"kind": "Stack", "layers": [{"kind": "Linear"}, 3]})"),
             "at 'layers[1]': expected a config object, given int 3");
  EXPECT_HAS(load(R"({"kind": "Stack", "layers": {"kind": "Linear"}})"),
             "at 'layers': expected config list, given object");

  // Nesting past the limit is an error, not a stack overflow.
  std::string deep;
  for (int i = 0; i < 300; ++i)
    deep += R"({"kind": "RotaryLinear", "input_linear": )";
  deep += R"({"kind": "Linear"})" + std::string(300, '}');
  EXPECT_HAS(load(deep), "configs nested deeper than 200");
}

TEST(ConfigJson, FileErrorsNameTheFile) {
  ConfigRegistry reg = config_test_registry();
  std::string path = ::testing::TempDir() + "/config_json_bad.json";
  {
    std::ofstream out(path);
    out << R"({"kind": "Linear", "bias": "no"})";
  }
  EXPECT_HAS(error_of([&] { load_config_file(reg, path); }),
             path + ": at 'bias': expected bool, given string \"no\"");
  std::remove(path.c_str());
  EXPECT_HAS(error_of([&] { load_config_file(reg, path); }),
             "cannot read config file '" + path + "'");
  EXPECT_HAS(error_of([&] { save_config_file(reg.make("Linear"), "/nonexistent-dir/x.json"); }),
             "cannot write config file '/nonexistent-dir/x.json'");
}

TEST(ConfigJson, CloneWithJsonOverrides) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  Config before = exp;
  Config c = exp.clone_json(R"({
      "seed": 3,
      "model.decoder.layer.attention": {"num_heads": 12, "qkv_proj": {"bias": false}},
      "model.decoder.layer.norm": {"kind": "RotaryLinear", "input_linear": {"kind": "Linear"}},
      "learning_rates": [1, 0.5],
      "model.decoder.layer.feed_forward.linear2": null,
      "model.decoder.layers": [{"kind": "LayerNorm", "input_dim": 2}],
      "model.decoder.layers[0]": {"eps": 0.5}})",
                            &reg);
  EXPECT_EQ(c.get<int>("seed"), 3);
  EXPECT_EQ(c.get<int>("model.decoder.layer.attention.num_heads"), 12);
  EXPECT_FALSE(c.get<bool>("model.decoder.layer.attention.qkv_proj.bias"));
  EXPECT_TRUE(c.get<bool>("model.decoder.layer.attention.output_proj.bias"));
  EXPECT_EQ(c.child("model.decoder.layer.norm").kind(), "RotaryLinear");
  EXPECT_EQ(c.get<std::vector<double>>("learning_rates"), (std::vector<double>{1.0, 0.5}));
  EXPECT_FALSE(c.is_set("model.decoder.layer.feed_forward.linear2"));
  EXPECT_EQ(c.get<double>("model.decoder.layers[0].eps"), 0.5); // applied in document order
  EXPECT_EQ(c.get<int>("model.decoder.layers[0].input_dim"), 2);
  EXPECT_TRUE(exp == before);

  std::string m =
      error_of([&] { exp.clone_json(R"({"seed": 1, "model.decoder.layr": {"input_dim": 2}})"); });
  EXPECT_HAS(
      m,
      "overrides: at 'model.decoder.layr': at 'model.decoder': kind 'Stack' has no field 'layr'");
  EXPECT_HAS(m, "did you mean 'layer'?");
  m = error_of(
      [&] { exp.clone_json(R"({"model.decoder.layer": {"attention": {"num_heads": "x"}}})"); });
  EXPECT_HAS(m,
             "overrides: at 'model.decoder.layer.attention.num_heads': expected int, given string");
  EXPECT_HAS(error_of([&] { exp.clone_json(R"({"model": {"kind": "Linear"}})"); }),
             "needs a config registry");
  EXPECT_HAS(error_of([&] { exp.clone_json("[1]"); }), "overrides must be a JSON object");
  EXPECT_HAS(error_of([&] { exp.clone_json("{"); }), "overrides: malformed JSON");
  EXPECT_TRUE(exp == before);
}

TEST(ConfigJson, CloneWithPathValueAssignments) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  Config c = exp.clone_assignments(
      {"model.decoder.num_layers=4", "model.decoder.layer.feed_forward.activation=relu", "name=123",
       "note=\"quoted\"", "learning_rates=[0.1,0.2]", "model.tie_embeddings=false",
       "model.decoder.layer.norm={\"kind\":\"Linear\"}",
       "model.decoder.layer.attention.dropout=1e-1"},
      &reg);
  EXPECT_EQ(c.get<int>("model.decoder.num_layers"), 4);
  EXPECT_EQ(c.get<std::string>("model.decoder.layer.feed_forward.activation"), "relu");
  EXPECT_EQ(c.get<std::string>("name"), "123");
  EXPECT_EQ(c.get<std::string>("note"), "quoted");
  EXPECT_EQ(c.get<std::vector<double>>("learning_rates"), (std::vector<double>{0.1, 0.2}));
  EXPECT_FALSE(c.get<bool>("model.tie_embeddings"));
  EXPECT_EQ(c.child("model.decoder.layer.norm").kind(), "Linear");
  EXPECT_EQ(c.get<double>("model.decoder.layer.attention.dropout"), 0.1);
  EXPECT_EQ(exp.get<int>("model.decoder.num_layers"), 2);

  EXPECT_HAS(error_of([&] { exp.clone_assignments({"seed"}); }),
             "override 'seed': expected path=value");
  EXPECT_HAS(error_of([&] { exp.clone_assignments({"seed=many"}); }),
             "overrides: at 'seed': expected int, given string \"many\"");
  EXPECT_HAS(error_of([&] { exp.clone_assignments({"sede=1"}); }), "did you mean 'seed'?");
}

} // namespace
} // namespace mt
