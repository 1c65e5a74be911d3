// ABI 1.3's joins_defaults: the host parses a component's declaration that it joins targets'
// defaults when it loads the plugin, refuses a plugin whose declaration is malformed (with the
// path and what is wrong), and never reads a declaration past the descriptor's struct_size.
#include <gtest/gtest.h>

#include <stdexcept>

#include "abi_test_util.h"
#include "core/plugin/defaults_declaration.h"
#include "core/plugin/plugin_host.h"

namespace mt {
namespace {

TEST(DefaultsDeclaration, LoadedWithThePluginOrRefusingIt) {
  PluginHost host;
  const PluginRecord& ok = host.load(abi_test::plugin_dir("declared") / "declared_ok.so");
  ASSERT_TRUE(ok.loaded()) << ok.message;
  const ComponentInfo* c = host.find(ComponentKind::ScheduleRule, "test.declared.Rule");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->joins_defaults.has_value());
  EXPECT_EQ(c->joins_defaults->targets, (std::vector<std::string>{"llvm", "cuda"}));
  EXPECT_EQ(c->joins_defaults->config, R"({"k":2})");
  EXPECT_TRUE(c->joins_defaults->applies_to("cuda", "cuda.gpu"));
  EXPECT_FALSE(c->joins_defaults->applies_to("opencl", "opencl.gpu"));

  // A weight on a schedule rule is a mistake the author must hear about.
  const PluginRecord& bad = host.load(abi_test::plugin_dir("declared") / "declared_bad.so");
  EXPECT_FALSE(bad.loaded());
  EXPECT_EQ(bad.refusal, RefusalReason::InvalidAnswer);
  EXPECT_NE(bad.message.find(bad.path), std::string::npos) << bad.message;
  EXPECT_NE(bad.message.find("test.declared.Bad"), std::string::npos) << bad.message;
  EXPECT_NE(bad.message.find("joins_defaults: only mutators take a \"probability\""),
            std::string::npos)
      << bad.message;
  EXPECT_EQ(host.find(ComponentKind::ScheduleRule, "test.declared.Bad"), nullptr);

  // A version-1 descriptor ends before the field: what lies beyond is not the plugin's.
  const PluginRecord& v1 = host.load(abi_test::plugin_dir("declared") / "declared_v1.so");
  ASSERT_TRUE(v1.loaded()) << v1.message;
  const ComponentInfo* old = host.find(ComponentKind::ScheduleRule, "test.declared.V1");
  ASSERT_NE(old, nullptr);
  EXPECT_FALSE(old->joins_defaults.has_value());
}

TEST(DefaultsDeclaration, ParsingSaysWhatIsWrong) {
  auto why = [](ComponentKind kind, const char* text) -> std::string {
    try {
      parse_defaults_declaration(kind, text);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  DefaultsDeclaration m = parse_defaults_declaration(ComponentKind::Mutator,
                                                     R"({"targets": "*", "probability": 0.25})");
  EXPECT_EQ(m.targets, std::vector<std::string>{"*"});
  EXPECT_EQ(m.probability, 0.25);
  EXPECT_TRUE(m.applies_to("anything", "any.target"));
  EXPECT_NE(why(ComponentKind::Mutator, R"({"targets": ["llvm"]})").find("positive"),
            std::string::npos);
  EXPECT_NE(why(ComponentKind::ScheduleRule, R"({"targets": []})").find("no \"targets\""),
            std::string::npos);
  EXPECT_NE(why(ComponentKind::ScheduleRule, R"({"target": ["llvm"]})").find("unknown field"),
            std::string::npos);
  EXPECT_NE(why(ComponentKind::CostModel, R"({"targets": ["llvm"]})").find("cannot join"),
            std::string::npos);
  EXPECT_NE(why(ComponentKind::Postproc, "[1, 2").find("not JSON"), std::string::npos);
  EXPECT_NE(why(ComponentKind::Postproc, R"({"targets": ["llvm"], "config": 3})")
                .find("not a JSON object"),
            std::string::npos);
}

} // namespace
} // namespace mt
