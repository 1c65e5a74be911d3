// wrap_child_everywhere (core/model/config_wrap.h) on the hand-registered test kinds: every
// Attention's qkv_proj wrapped in a RotaryLinear holding the original, at any depth and in
// child lists; dimensions pushed through the wrapper; no second wrapping; unset children left
// alone; unknown kinds and fields refused with the tree untouched.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "config_test_schemas.h"
#include "core/model/config_wrap.h"

namespace mt {
namespace {

using test::config_test_registry;

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigWrap, WrapsTheChildOfEveryConfigOfTheKind) {
  ConfigRegistry reg = config_test_registry();
  Config exp = reg.make("Experiment");
  exp.set("model.decoder.layers", std::vector<Config>{reg.make("TransformerLayer")});
  exp.set("model.decoder.layer.attention.qkv_proj.output_dim", 96);
  const Config before = exp;
  Config rotary = reg.make("RotaryLinear").set("theta", 500000.0);

  EXPECT_EQ(wrap_child_everywhere(exp, reg, "Attention", "qkv_proj", rotary, "input_linear"), 2);
  for (const char* p : {"model.decoder.layer.attention", "model.decoder.layers[0].attention"}) {
    std::string qkv = std::string(p) + ".qkv_proj";
    EXPECT_EQ(exp.child(qkv).kind(), "RotaryLinear") << p;
    EXPECT_EQ(exp.get<double>(qkv + ".theta"), 500000.0) << p; // a copy of the wrapper
    EXPECT_TRUE(exp.child(qkv + ".input_linear") == before.child(qkv)) << p;
    // Only the named field: the output projection is as it was.
    EXPECT_TRUE(exp.child(std::string(p) + ".output_proj") ==
                before.child(std::string(p) + ".output_proj"))
        << p;
  }
  EXPECT_EQ(exp.get<int>("model.decoder.layer.attention.qkv_proj.input_linear.output_dim"), 96);

  // The parent's dimension reaches the original through the wrapper.
  exp.set("model.input_dim", 64).resolve();
  EXPECT_EQ(exp.get<int>("model.decoder.layer.attention.qkv_proj.input_linear.input_dim"), 64);

  // Wrapped children are not wrapped again.
  EXPECT_EQ(wrap_child_everywhere(exp, reg, "Attention", "qkv_proj", rotary, "input_linear"), 0);
  EXPECT_EQ(exp.get<Config>("model.decoder.layer.attention.qkv_proj.input_linear").kind(),
            "Linear");
}

TEST(ConfigWrap, RootAndUnsetChildren) {
  ConfigRegistry reg = config_test_registry();
  Config rotary = reg.make("RotaryLinear");
  Config att = reg.make("Attention");
  EXPECT_EQ(wrap_child_everywhere(att, reg, "Attention", "qkv_proj", rotary, "input_linear"), 1);
  EXPECT_EQ(att.child("qkv_proj").kind(), "RotaryLinear");
  // No child there: nothing to wrap.
  Config bare = reg.make("Attention");
  bare.clear("qkv_proj");
  EXPECT_EQ(wrap_child_everywhere(bare, reg, "Attention", "qkv_proj", rotary, "input_linear"), 0);
  EXPECT_FALSE(bare.is_set("qkv_proj"));
  // A kind the tree does not hold: zero.
  Config ln = reg.make("LayerNorm");
  EXPECT_EQ(wrap_child_everywhere(ln, reg, "Attention", "qkv_proj", rotary, "input_linear"), 0);
}

TEST(ConfigWrap, UnknownKindsAndFieldsAreRefusedLeavingTheTree) {
  ConfigRegistry reg = config_test_registry();
  Config layer = reg.make("TransformerLayer");
  const Config before = layer;
  Config rotary = reg.make("RotaryLinear");
  EXPECT_HAS(error_of([&] {
               wrap_child_everywhere(layer, reg, "Atention", "qkv_proj", rotary, "input_linear");
             }),
             "did you mean 'Attention'");
  EXPECT_HAS(error_of([&] {
               wrap_child_everywhere(layer, reg, "Attention", "qkv", rotary, "input_linear");
             }),
             "has no field 'qkv'");
  EXPECT_HAS(error_of([&] {
               wrap_child_everywhere(layer, reg, "Attention", "num_heads", rotary, "input_linear");
             }),
             "field 'num_heads' of kind 'Attention' is of type int, not a child config");
  EXPECT_HAS(error_of([&] {
               wrap_child_everywhere(layer, reg, "Attention", "qkv_proj", rotary, "theta");
             }),
             "the wrapper's inner field: field 'theta' of kind 'RotaryLinear'");
  EXPECT_HAS(error_of([&] {
               wrap_child_everywhere(layer, reg, "Attention", "qkv_proj", Config(), "input_linear");
             }),
             "the wrapper is an empty config");
  EXPECT_TRUE(layer == before);
}

} // namespace
} // namespace mt
