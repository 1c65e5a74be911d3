// Walks over whole config trees (core/model/config_tree.cpp) and dimension push-down
// (dimension_push_down.cpp): visit order and paths, recursive replacement by kind and by
// predicate, resolve() writing a parent's shared dimensions into its children and reporting
// conflicts with both paths.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config_test_schemas.h"
#include "core/model/config.h"

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

std::vector<std::string> walk(const Config& c) {
  std::vector<std::string> events;
  c.visit([&](const std::string& path,
              const Config& n) { events.push_back("+" + path + ":" + n.kind()); },
          [&](const std::string& path, const Config& n) {
            events.push_back("-" + path + ":" + n.kind());
          });
  return events;
}

TEST(ConfigTree, VisitEntersAndExitsEveryConfigWithItsPath) {
  ConfigRegistry reg = config_test_registry();
  Config layer = reg.make("TransformerLayer");
  std::vector<std::string> expected = {
      "+:TransformerLayer",
      "+attention:Attention",
      "+attention.qkv_proj:Linear",
      "-attention.qkv_proj:Linear",
      "+attention.output_proj:Linear",
      "-attention.output_proj:Linear",
      "-attention:Attention",
      "+feed_forward:FeedForward",
      "+feed_forward.linear1:Linear",
      "-feed_forward.linear1:Linear",
      "+feed_forward.linear2:Linear",
      "-feed_forward.linear2:Linear",
      "-feed_forward:FeedForward",
      "+norm:LayerNorm",
      "-norm:LayerNorm",
      "-:TransformerLayer",
  };
  EXPECT_EQ(walk(layer), expected);

  Config stack = reg.make("Stack");
  stack.clear("layer").set("layers",
                           std::vector<Config>{reg.make("LayerNorm"), reg.make("Linear")});
  EXPECT_EQ(walk(stack),
            (std::vector<std::string>{"+:Stack", "+layers[0]:LayerNorm", "-layers[0]:LayerNorm",
                                      "+layers[1]:Linear", "-layers[1]:Linear", "-:Stack"}));
  // Either callback may be left out.
  int entered = 0;
  layer.visit([&](const std::string&, const Config&) { ++entered; });
  EXPECT_EQ(entered, 8);
}

Config wrap_in_rotary(const ConfigRegistry& reg, const Config& c) {
  return reg.make("RotaryLinear").set("input_linear", c);
}

TEST(ConfigTree, ReplaceKindWrapsEveryMatchOnce) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  exp.set("model.decoder.layers", std::vector<Config>{reg.make("TransformerLayer")});
  exp.set("model.decoder.layer.attention.qkv_proj.output_dim", 96);
  std::vector<std::string> linear_paths;
  exp.visit([&](const std::string& p, const Config& c) {
    if (c.kind() == "Linear") linear_paths.push_back(p);
  });
  ASSERT_EQ(linear_paths.size(), 8u); // 4 per transformer layer
  Config before = exp;

  int n = exp.replace_kind("Linear", [&](const Config& c) { return wrap_in_rotary(reg, c); });
  EXPECT_EQ(n, 8);
  for (const std::string& p : linear_paths) {
    EXPECT_EQ(exp.child(p).kind(), "RotaryLinear") << p;
    // The wrapper holds the original, which was not replaced again.
    EXPECT_TRUE(exp.child(p + ".input_linear") == before.child(p)) << p;
  }
  EXPECT_EQ(exp.get<int>("model.decoder.layer.attention.qkv_proj.input_linear.output_dim"), 96);
  int linears_left = 0;
  exp.visit([&](const std::string&, const Config& c) { linears_left += c.kind() == "Linear"; });
  EXPECT_EQ(linears_left, 8);
  EXPECT_EQ(exp.replace_kind("NoSuchKind", [](const Config& c) { return c; }), 0);

  // RoPE on every attention: only the QKV projections are wrapped, and the wrapper hands the
  // dimension its parent shares on to the projection it holds.
  Config layer = reg.make("TransformerLayer");
  EXPECT_EQ(
      layer.replace_if([](const std::string& p, const Config&) { return p.ends_with("qkv_proj"); },
                       [&](const Config& c) { return wrap_in_rotary(reg, c); }),
      1);
  layer.set("input_dim", 64).resolve();
  EXPECT_EQ(layer.get<int>("attention.qkv_proj.input_dim"), 64);
  EXPECT_EQ(layer.get<int>("attention.qkv_proj.input_linear.input_dim"), 64);
}

TEST(ConfigTree, ReplaceIsBottomUpAndTakesAPredicate) {
  ConfigRegistry reg = config_test_registry();
  Config layer = reg.make("TransformerLayer");
  std::vector<std::string> order;
  int n = layer.replace_if(
      [&](const std::string& path, const Config&) {
        order.push_back(path);
        return path.rfind("feed_forward", 0) == 0;
      },
      [&](const Config& c) {
        Config r = c;
        if (r.kind() == "Linear") r.set("bias", false);
        if (r.kind() == "FeedForward") {
          // Bottom-up: the children were already replaced when the parent is.
          EXPECT_FALSE(r.get<bool>("linear1.bias"));
          r.set("activation", "relu");
        }
        return r;
      });
  EXPECT_EQ(n, 3);
  EXPECT_EQ(order, (std::vector<std::string>{"attention.qkv_proj", "attention.output_proj",
                                             "attention", "feed_forward.linear1",
                                             "feed_forward.linear2", "feed_forward", "norm", ""}));
  EXPECT_FALSE(layer.get<bool>("feed_forward.linear2.bias"));
  EXPECT_TRUE(layer.get<bool>("attention.qkv_proj.bias"));
  EXPECT_EQ(layer.get<std::string>("feed_forward.activation"), "relu");

  // The root itself can be replaced.
  Config lin = reg.make("Linear");
  EXPECT_EQ(lin.replace_kind("Linear", [&](const Config& c) { return wrap_in_rotary(reg, c); }), 1);
  EXPECT_EQ(lin.kind(), "RotaryLinear");

  // A replacer that fails leaves the tree as it was.
  Config before = layer;
  EXPECT_HAS(error_of([&] {
               layer.replace_kind("Linear", [](const Config& c) -> Config {
                 if (c.get<bool>("bias")) throw ConfigError("replacer refuses");
                 return Config(c);
               });
             }),
             "replacer refuses");
  EXPECT_TRUE(layer == before);
  EXPECT_HAS(
      error_of([&] { layer.replace_kind("LayerNorm", [](const Config&) { return Config(); }); }),
      "replace at 'norm' (LayerNorm): the replacement is an empty config");
}

TEST(PushDown, ParentDimensionReachesChildrenAndGrandchildren) {
  ConfigRegistry reg = config_test_registry();
  Config layer = reg.make("TransformerLayer");
  layer.set("input_dim", 64).set("feed_forward.hidden_dim", 256);
  layer.resolve();
  for (const char* p : {"attention.input_dim", "feed_forward.input_dim", "norm.input_dim",
                        "attention.qkv_proj.input_dim", "attention.output_proj.output_dim",
                        "feed_forward.linear1.input_dim", "feed_forward.linear2.output_dim"}) {
    EXPECT_EQ(layer.get<int>(p), 64) << p;
    EXPECT_EQ(layer.origin(p), ValueOrigin::Pushed) << p;
  }
  EXPECT_EQ(layer.get<int>("feed_forward.linear1.output_dim"), 256);
  EXPECT_EQ(layer.get<int>("feed_forward.linear2.input_dim"), 256);
  // The parent owns only what it shares: the children's own dimensions are untouched.
  EXPECT_FALSE(layer.is_set("attention.num_heads"));
  EXPECT_FALSE(layer.is_set("attention.qkv_proj.output_dim"));
  EXPECT_EQ(layer.origin("input_dim"), ValueOrigin::Set);

  // Resolving again after the parent changed updates the pushed values.
  layer.set("input_dim", 128).resolve();
  EXPECT_EQ(layer.get<int>("attention.qkv_proj.input_dim"), 128);

  // Down a chain of parents and through child lists.
  Config model = reg.make("LanguageModel");
  model.set("input_dim", 32);
  model.set("decoder.layers",
            std::vector<Config>{reg.make("TransformerLayer"), reg.make("TransformerLayer")});
  model.resolve();
  EXPECT_EQ(model.get<int>("decoder.input_dim"), 32);
  EXPECT_EQ(model.get<int>("decoder.layer.attention.qkv_proj.input_dim"), 32);
  EXPECT_EQ(model.get<int>("decoder.layers[1].feed_forward.linear2.output_dim"), 32);
}

TEST(PushDown, ExplicitChildValueMustAgree) {
  ConfigRegistry reg = config_test_registry();
  Config layer = reg.make("TransformerLayer");
  layer.set("input_dim", 64).set("norm.input_dim", 64); // the same value: fine
  layer.resolve();
  EXPECT_EQ(layer.origin("norm.input_dim"), ValueOrigin::Set);

  layer.set("attention.input_dim", 32).set("feed_forward.linear1.input_dim", 48);
  Config before = layer;
  std::string m = error_of([&] { layer.resolve(); });
  EXPECT_HAS(m, "config 'TransformerLayer': 2 push-down conflicts: ");
  EXPECT_HAS(m, "'input_dim' = 64 is pushed to 'attention.input_dim', which is set to 32");
  EXPECT_HAS(m, "'feed_forward.input_dim' = 64 is pushed to 'feed_forward.linear1.input_dim', "
                "which is set to 48");
  EXPECT_TRUE(layer == before); // a failed resolve changes nothing
  Config fresh = reg.make("TransformerLayer");
  fresh.set("input_dim", 64).set("attention.input_dim", 32);
  EXPECT_THROW(fresh.resolve(), ConfigError);
  EXPECT_EQ(fresh.origin("feed_forward.input_dim"), ValueOrigin::Default);
  EXPECT_FALSE(fresh.is_set("feed_forward.input_dim"));
  EXPECT_HAS(error_of([&] { layer.validate(); }), "push-down conflicts");
}

TEST(PushDown, UnsetParentOrChildIsSkippedAMissingTargetIsAnError) {
  ConfigRegistry reg = config_test_registry();
  Config stack = reg.make("Stack"); // input_dim is optional and unset
  stack.set("layer.input_dim", 16).resolve();
  EXPECT_EQ(stack.get<int>("layer.attention.input_dim"), 16);
  EXPECT_EQ(stack.origin("layer.input_dim"), ValueOrigin::Set);

  Config layer = reg.make("TransformerLayer");
  layer.clear("norm").set("input_dim", 8).resolve();
  EXPECT_FALSE(layer.is_set("norm"));

  // A child swapped for a kind without the shared field.
  layer.set("norm", reg.make("Dropout"));
  std::string m = error_of([&] { layer.resolve(); });
  EXPECT_HAS(m, "push-down of 'input_dim' to 'norm.input_dim': ");
  EXPECT_HAS(m, "'norm': kind 'Dropout' has no field 'input_dim'");
  // ... or with the field under another type.
  ConfigRegistry reg2 = config_test_registry();
  reg2.add(ConfigSchema("TextNorm").with_default("input_dim", "wide"));
  layer.set("norm", reg2.make("TextNorm"));
  EXPECT_HAS(error_of([&] { layer.resolve(); }),
             "'norm.input_dim' (TextNorm.input_dim): expected string, given int 8");
}

} // namespace
} // namespace mt
