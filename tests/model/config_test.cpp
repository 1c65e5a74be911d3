// Config values (core/model/config.h, config_registry.h, config_schema.h): defaults, set/get by
// path, type checks and conversions, deep copies, required fields, clone with overrides, and
// the content of every error message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config_test_schemas.h"
#include "core/model/config.h"

namespace mt {
namespace {

using test::config_test_registry;

// The message of the ConfigError that `f` throws ("" if it throws none).
template <typename F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(Config, MakeFillsDefaultsAndDefaultChildren) {
  ConfigRegistry reg = config_test_registry();
  Config layer = reg.make("TransformerLayer");
  EXPECT_EQ(layer.kind(), "TransformerLayer");
  EXPECT_FALSE(layer.is_set("input_dim"));
  EXPECT_EQ(layer.child("attention").kind(), "Attention");
  EXPECT_EQ(layer.child("attention.qkv_proj").kind(), "Linear");
  EXPECT_TRUE(layer.get<bool>("attention.qkv_proj.bias"));
  EXPECT_EQ(layer.get<double>("attention.dropout"), 0.0);
  EXPECT_EQ(layer.get<std::string>("feed_forward.activation"), "gelu");
  EXPECT_EQ(layer.origin("feed_forward.activation"), ValueOrigin::Default);

  Config exp = reg.make("Experiment");
  EXPECT_EQ(exp.get<std::vector<double>>("learning_rates"), (std::vector<double>{1e-3, 3e-4}));
  EXPECT_EQ(exp.get<std::vector<int64_t>>("mesh"), (std::vector<int64_t>{1, 1}));
  EXPECT_FALSE(exp.is_set("note"));
  EXPECT_TRUE(exp.get<std::vector<Config>>("model.decoder.layers").empty());
  EXPECT_EQ(exp.get<int>("model.decoder.num_layers"), 2);
}

TEST(Config, SetChainsAndGetReadsBack) {
  ConfigRegistry reg = config_test_registry();
  Config att = reg.make("Attention");
  Config& same = att.set("input_dim", 512).set("num_heads", 8).set("causal", true);
  EXPECT_EQ(&same, &att);
  EXPECT_EQ(att.get<int64_t>("input_dim"), 512);
  EXPECT_EQ(att.get<int>("num_heads"), 8);
  EXPECT_TRUE(att.get<bool>("causal"));
  EXPECT_EQ(att.origin("num_heads"), ValueOrigin::Set);

  att.set("dropout", 1); // an int for a float field widens
  EXPECT_EQ(att.get<double>("dropout"), 1.0);
  att.set("dropout", 0.25f);
  EXPECT_EQ(att.get<double>("dropout"), 0.25);
  att.set("input_dim", uint64_t{7});
  EXPECT_EQ(att.get<int64_t>("input_dim"), 7);
  att.set("input_dim", int64_t{1} << 40);
  EXPECT_EQ(att.get<int64_t>("input_dim"), int64_t{1} << 40);
  EXPECT_HAS(error_of([&] { att.get<int>("input_dim"); }), "does not fit an int");

  Config exp = reg.make("Experiment");
  exp.set("mesh", {2, 4}).set("learning_rates", {0.5, 0.25}).set("note", "hello");
  EXPECT_EQ(exp.get<std::vector<int64_t>>("mesh"), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(exp.get<std::string>("note"), "hello");
  exp.set("learning_rates", {1, 2}); // int list widens to a float list
  EXPECT_EQ(exp.get<std::vector<double>>("learning_rates"), (std::vector<double>{1.0, 2.0}));
  exp.set("learning_rates", std::vector<double>{});
  EXPECT_TRUE(exp.get<std::vector<double>>("learning_rates").empty());
}

TEST(Config, DottedAndIndexedPaths) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  exp.set("model.decoder.layer.attention.num_heads", 8);
  EXPECT_EQ(exp.child("model.decoder.layer.attention").get<int>("num_heads"), 8);
  EXPECT_EQ(exp.child("model").child("decoder").get<int>("layer.attention.num_heads"), 8);

  exp.set("model.decoder.layers",
          std::vector<Config>{reg.make("TransformerLayer"), reg.make("TransformerLayer")});
  exp.set("model.decoder.layers[1].attention.num_heads", 4);
  EXPECT_EQ(exp.get<int>("model.decoder.layers[1].attention.num_heads"), 4);
  EXPECT_FALSE(exp.is_set("model.decoder.layers[0].attention.num_heads"));
  EXPECT_EQ(exp.get<Config>("model.decoder.layers[1]").kind(), "TransformerLayer");

  // An element can be replaced by a config of any kind.
  exp.set("model.decoder.layers[0]", reg.make("Linear"));
  EXPECT_EQ(exp.child("model.decoder.layers[0]").kind(), "Linear");
  EXPECT_HAS(error_of([&] { exp.set("model.decoder.layers[0]", 3); }),
             "an element of a config list takes a config, given int");

  // In-place edits through child() and child_list().
  exp.child("model.decoder.layer").set("input_dim", 16);
  EXPECT_EQ(exp.get<int>("model.decoder.layer.input_dim"), 16);
  exp.child_list("model.decoder.layers").push_back(reg.make("LayerNorm"));
  EXPECT_EQ(exp.child_list("model.decoder.layers").size(), 3u);
}

TEST(Config, ChildOfAnyKindAndClear) {
  ConfigRegistry reg = config_test_registry();
  Config layer = reg.make("TransformerLayer");
  Config rotary = reg.make("RotaryLinear");
  rotary.set("input_linear", reg.make("Linear"));
  layer.set("attention.qkv_proj", rotary);
  EXPECT_EQ(layer.child("attention.qkv_proj").kind(), "RotaryLinear");
  EXPECT_EQ(layer.child("attention.qkv_proj.input_linear").kind(), "Linear");

  layer.clear("norm");
  EXPECT_FALSE(layer.is_set("norm"));
  EXPECT_HAS(error_of([&] { layer.set("norm.eps", 0.1); }), "'norm' is unset");
  layer.set("attention.dropout", ConfigValue()); // an unset value clears too
  EXPECT_FALSE(layer.is_set("attention.dropout"));
  EXPECT_HAS(error_of([&] { layer.get<double>("attention.dropout"); }),
             "get 'attention.dropout' (Attention.dropout): the float field is unset");
  EXPECT_HAS(error_of([&] { layer.set("attention", Config()); }), "an empty config (no kind)");
}

TEST(Config, UnknownFieldSaysDidYouMean) {
  ConfigRegistry reg = config_test_registry();
  Config att = reg.make("Attention");
  std::string m = error_of([&] { att.set("num_head", 8); });
  EXPECT_HAS(m, "set 'num_head'");
  EXPECT_HAS(m, "kind 'Attention' has no field 'num_head' (did you mean 'num_heads'?)");
  EXPECT_HAS(m, "its fields: input_dim, num_heads, dropout, causal, qkv_proj, output_proj");

  Config exp = reg.make("Experiment");
  m = error_of([&] { exp.set("model.decoder.layr.input_dim", 8); });
  EXPECT_HAS(m, "at 'model.decoder'");
  EXPECT_HAS(m, "kind 'Stack' has no field 'layr' (did you mean 'layer'?)");

  // Nothing close: no suggestion, the fields are still listed.
  m = error_of([&] { att.get<int>("zzzzzzzz"); });
  EXPECT_HAS(m, "kind 'Attention' has no field 'zzzzzzzz'; its fields:");
  EXPECT_EQ(m.find("did you mean"), std::string::npos) << m;
}

TEST(Config, WrongTypeNamesFieldExpectedAndGiven) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  std::string m = error_of([&] { exp.set("model.decoder.layer.attention.num_heads", 2.5); });
  EXPECT_HAS(m, "'model.decoder.layer.attention.num_heads' (Attention.num_heads)");
  EXPECT_HAS(m, "expected int, given float 2.5");
  EXPECT_HAS(error_of([&] { exp.set("name", 3); }),
             "'name' (Experiment.name): expected string, given int 3");
  EXPECT_HAS(error_of([&] {
               exp.set("mesh", {0.5, 1.5});
             }),
             "expected int list, given float list [0.5,1.5]");
  EXPECT_HAS(error_of([&] { exp.set("model", 1); }), "expected config, given int 1");
  EXPECT_HAS(error_of([&] { exp.set("model.tie_embeddings", "yes"); }),
             "expected bool, given string \"yes\"");
  EXPECT_HAS(error_of([&] { exp.set("model.decoder.layers", reg.make("Linear")); }),
             "expected config list, given config <Linear>");
  EXPECT_HAS(error_of([&] { exp.set("seed", uint64_t{1} << 63); }), "does not fit a config int");
  EXPECT_HAS(error_of([&] { exp.set("learning_rates", {1.0, 1.0 / 0.0}); }), "non-finite");
  EXPECT_HAS(error_of([&] { exp.set("note", std::string("\xff\xfe")); }), "not valid UTF-8");

  m = error_of([&] { exp.get<std::string>("seed"); });
  EXPECT_HAS(m, "get 'seed' (Experiment.seed): the field is int, asked for string");
  // A failed set leaves the field as it was.
  EXPECT_EQ(exp.get<std::string>("name"), "exp");
}

TEST(Config, MalformedPaths) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  EXPECT_HAS(error_of([&] { exp.set("", 1); }), "empty path");
  EXPECT_HAS(error_of([&] { exp.set("model..decoder", 1); }), "empty field name");
  EXPECT_HAS(error_of([&] { exp.set("model.", 1); }), "ends with '.'");
  EXPECT_HAS(error_of([&] { exp.set("model.decoder.layers[x].input_dim", 1); }), "malformed index");
  EXPECT_HAS(error_of([&] { exp.set("model.decoder.layers[0].input_dim", 1); }),
             "index 0 is past the end of 'model.decoder.layers' (0 configs)");
  EXPECT_HAS(error_of([&] { exp.set("seed.x", 1); }),
             "'seed' is a field of type int, not a config");
  EXPECT_HAS(error_of([&] { exp.set("seed[0]", 1); }),
             "'seed' is a field of type int, not a config list");
  EXPECT_HAS(error_of([&] { exp.set("model.decoder.layers.input_dim", 1); }),
             "'model.decoder.layers' is a config list: name an element");
  EXPECT_HAS(error_of([&] { Config().set("x", 1); }), "set on an empty config (no kind)");
}

TEST(Config, CopiesAreDeep) {
  ConfigRegistry reg = config_test_registry();
  Config a = reg.make("Experiment");
  a.set("model.decoder.layers", std::vector<Config>{reg.make("TransformerLayer")});
  Config b = a;
  EXPECT_TRUE(a == b);
  EXPECT_NE(&a.child("model.decoder.layer.attention"), &b.child("model.decoder.layer.attention"));
  b.set("model.decoder.layer.attention.num_heads", 12);
  b.set("model.decoder.layers[0].input_dim", 3);
  b.child_list("model.decoder.layers").push_back(reg.make("Linear"));
  EXPECT_FALSE(a.is_set("model.decoder.layer.attention.num_heads"));
  EXPECT_FALSE(a.is_set("model.decoder.layers[0].input_dim"));
  EXPECT_EQ(a.child_list("model.decoder.layers").size(), 1u);
  EXPECT_FALSE(a == b);

  // A child taken out by value or put in by set() is a copy too.
  Config att = a.get<Config>("model.decoder.layer.attention");
  att.set("num_heads", 2);
  EXPECT_FALSE(a.is_set("model.decoder.layer.attention.num_heads"));
  Config lin = reg.make("Linear");
  a.set("model.decoder.layer.attention.qkv_proj", lin);
  lin.set("input_dim", 5);
  EXPECT_FALSE(a.is_set("model.decoder.layer.attention.qkv_proj.input_dim"));

  // Assignment copies too.
  Config c;
  c = a;
  c.set("seed", 9);
  EXPECT_EQ(a.get<int>("seed"), 0);
}

TEST(Config, CheckRequiredListsEveryMissingPath) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  // Every required field of the tree, in tree order (written out from the schemas above).
  std::vector<std::string> expected = {
      "model.vocab_size",
      "model.input_dim",
      "model.decoder.layer.input_dim",
      "model.decoder.layer.attention.input_dim",
      "model.decoder.layer.attention.num_heads",
      "model.decoder.layer.attention.qkv_proj.input_dim",
      "model.decoder.layer.attention.qkv_proj.output_dim",
      "model.decoder.layer.attention.output_proj.input_dim",
      "model.decoder.layer.attention.output_proj.output_dim",
      "model.decoder.layer.feed_forward.input_dim",
      "model.decoder.layer.feed_forward.hidden_dim",
      "model.decoder.layer.feed_forward.linear1.input_dim",
      "model.decoder.layer.feed_forward.linear1.output_dim",
      "model.decoder.layer.feed_forward.linear2.input_dim",
      "model.decoder.layer.feed_forward.linear2.output_dim",
      "model.decoder.layer.norm.input_dim",
  };
  EXPECT_EQ(exp.missing_required(), expected);
  std::string m = error_of([&] { exp.check_required(); });
  EXPECT_HAS(m, "config 'Experiment': 16 required fields are not set: ");
  for (const std::string& p : expected)
    EXPECT_HAS(m, p);

  // A required child left unset is reported, and nothing below it.
  Config rotary = reg.make("RotaryLinear");
  EXPECT_EQ(rotary.missing_required(), std::vector<std::string>{"input_linear"});
  EXPECT_HAS(error_of([&] { rotary.check_required(); }),
             "config 'RotaryLinear': 1 required field is not set: input_linear");

  // Elements of child lists are checked with their index.
  Config stack = reg.make("Stack");
  stack.clear("layer").set("layers", std::vector<Config>{reg.make("LayerNorm")});
  EXPECT_EQ(stack.missing_required(), std::vector<std::string>{"layers[0].input_dim"});
}

TEST(Config, ValidateResolvesOnACopy) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  exp.set("model.input_dim", 64);
  // Push-down fills every dimension the model shares; what no parent shares stays missing.
  std::string m = error_of([&] { exp.validate(); });
  EXPECT_HAS(m, "7 required fields are not set: model.vocab_size, "
                "model.decoder.layer.attention.num_heads, "
                "model.decoder.layer.attention.qkv_proj.output_dim, "
                "model.decoder.layer.attention.output_proj.input_dim, "
                "model.decoder.layer.feed_forward.hidden_dim, "
                "model.decoder.layer.feed_forward.linear1.output_dim, "
                "model.decoder.layer.feed_forward.linear2.input_dim");
  EXPECT_FALSE(exp.is_set("model.decoder.layer.input_dim")); // validate() changed nothing
  exp.set("model.vocab_size", 1000)
      .set("model.decoder.layer.attention.num_heads", 4)
      .set("model.decoder.layer.feed_forward.hidden_dim", 256);
  // Attention pushes input_dim into qkv_proj.input_dim and output_proj.output_dim only: the
  // projections' other sides stay the attention's own business.
  m = error_of([&] { exp.validate(); });
  EXPECT_HAS(m, "2 required fields are not set: "
                "model.decoder.layer.attention.qkv_proj.output_dim, "
                "model.decoder.layer.attention.output_proj.input_dim");
  exp.set("model.decoder.layer.attention.qkv_proj.output_dim", 192)
      .set("model.decoder.layer.attention.output_proj.input_dim", 64);
  EXPECT_NO_THROW(exp.validate());
  EXPECT_FALSE(exp.missing_required().empty()); // still unresolved itself
  exp.resolve();
  EXPECT_TRUE(exp.missing_required().empty());
}

TEST(Config, CloneWithTypedOverridesLeavesOriginal) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  Config copy = exp.clone({{"seed", 7},
                           {"model.decoder.layer.attention.num_heads", 16},
                           {"learning_rates", {0.1}},
                           {"model.decoder.layer.norm", reg.make("Linear")}});
  EXPECT_EQ(copy.get<int>("seed"), 7);
  EXPECT_EQ(copy.get<int>("model.decoder.layer.attention.num_heads"), 16);
  EXPECT_EQ(copy.get<std::vector<double>>("learning_rates"), std::vector<double>{0.1});
  EXPECT_EQ(copy.child("model.decoder.layer.norm").kind(), "Linear");
  EXPECT_EQ(exp.get<int>("seed"), 0);
  EXPECT_FALSE(exp.is_set("model.decoder.layer.attention.num_heads"));
  EXPECT_EQ(exp.child("model.decoder.layer.norm").kind(), "LayerNorm");

  Config before = exp;
  EXPECT_HAS(error_of([&] { exp.clone({{"seed", 1}, {"sed", 2}}); }), "did you mean 'seed'?");
  EXPECT_TRUE(exp == before);
}

TEST(ConfigRegistry, UnknownKindAndBadSchemas) {
  ConfigRegistry reg = config_test_registry();
  std::string m = error_of([&] { reg.make("Atention"); });
  EXPECT_HAS(m, "unknown config kind 'Atention' (did you mean 'Attention'?); known kinds: ");
  EXPECT_HAS(m, "Attention, Dropout, Experiment, FeedForward");
  EXPECT_HAS(error_of([&] { reg.add(ConfigSchema("Linear")); }),
             "config kind 'Linear' is already registered");
  EXPECT_TRUE(reg.contains("Stack"));
  EXPECT_FALSE(reg.contains("stack"));

  // A default kind that is not registered is reported when a config needs it.
  reg.add(ConfigSchema("Wrapper").child("inner", "Missing"));
  m = error_of([&] { reg.make("Wrapper"); });
  EXPECT_HAS(m, "default kind of Wrapper.inner: unknown config kind 'Missing'");
  // Default kinds that contain themselves.
  reg.add(ConfigSchema("A").child("b", "B"));
  reg.add(ConfigSchema("B").child("a", "A"));
  EXPECT_HAS(error_of([&] { reg.make("A"); }),
             "config kind 'A' contains itself by default (A.b -> B.a -> A)");
  reg.add(ConfigSchema("Self").child("me", "Self"));
  EXPECT_HAS(error_of([&] { reg.make("Self"); }), "contains itself by default");

  auto schema_error = [](auto&& declare) {
    return error_of([&] {
      ConfigSchema s("K");
      declare(s);
      s.check();
    });
  };
  EXPECT_HAS(schema_error([](ConfigSchema& s) {
               s.required("x", FieldType::Int).optional("x", FieldType::Int);
             }),
             "config schema 'K', field 'x': declared twice");
  EXPECT_HAS(schema_error([](ConfigSchema& s) { s.optional("kind", FieldType::String); }),
             "'kind' is reserved");
  EXPECT_HAS(schema_error([](ConfigSchema& s) { s.optional("a.b", FieldType::Int); }),
             "field 'a.b': not a field name");
  EXPECT_HAS(schema_error([](ConfigSchema& s) {
               FieldSpec f;
               f.name = "x";
               f.required = true;
               f.default_value = 1;
               s.field(f);
             }),
             "required, but has a default");
  EXPECT_HAS(schema_error([](ConfigSchema& s) {
               FieldSpec f;
               f.name = "x";
               f.type = FieldType::Bool;
               f.default_value = "yes";
               s.field(f);
             }),
             "field 'x': default: expected bool, given string \"yes\"");
  EXPECT_HAS(schema_error([](ConfigSchema& s) { s.with_default("x", 1).push_down("x", {"y.x"}); }),
             "push_to 'y.x': kind 'K' has no field 'y'");
  EXPECT_HAS(schema_error([](ConfigSchema& s) {
               s.with_default("x", 1).with_default("y", 2).push_down("x", {"y.x"});
             }),
             "'y' is a field of type int, not a child");
  EXPECT_HAS(schema_error([](ConfigSchema& s) {
               s.with_default("x", 1).child("c", "").push_down("x", {"c"});
             }),
             "not a field of a child");
  EXPECT_HAS(schema_error([](ConfigSchema& s) { s.child("c", "").push_down("c", {"c.x"}); }),
             "only a scalar or list field can be pushed down");
  EXPECT_HAS(error_of([] { ConfigSchema("has space"); }), "kind name 'has space' holds a space");
}

} // namespace
} // namespace mt
