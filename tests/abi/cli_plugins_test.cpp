// `metatune plugins`: the CLI lists loaded plugins with their components and refused ones
// with the reason, as text and as JSON.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "abi_test_util.h"
#include "metatune/plugin_api.h"

namespace mt {
namespace {

using abi_test::capture;

std::string plugins_cmd(const std::string& extra) {
  return std::string("'") + MT_TEST_CLI + "' plugins --no-default-path --path '" +
         abi_test::good_dir().string() + "' --path '" + abi_test::refused_dir().string() + "' " +
         extra + " 2>&1";
}

TEST(CliPlugins, JsonListsLoadedAndRefusedPlugins) {
  auto [status, out] = capture(plugins_cmd("--json"));
  ASSERT_EQ(status, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["host_abi_version"], std::to_string(MT_PLUGIN_ABI_VERSION_MAJOR) + "." +
                                       std::to_string(MT_PLUGIN_ABI_VERSION_MINOR));
  ASSERT_EQ(j["search_path"].size(), 2u);
  bool saw_c = false, saw_major = false;
  for (const auto& p : j["plugins"]) {
    std::string path = p["path"];
    if (path.find("c_split_rule.so") != std::string::npos) {
      saw_c = true;
      EXPECT_TRUE(p["loaded"].get<bool>());
      EXPECT_EQ(p["abi_version"], j["host_abi_version"]);
      ASSERT_EQ(p["components"].size(), 2u);
      EXPECT_EQ(p["components"][0]["kind"], "schedule_rule");
      EXPECT_EQ(p["components"][0]["name"], "test.c.SplitBy4");
    }
    if (path.find("wrong_major.so") != std::string::npos) {
      saw_major = true;
      EXPECT_FALSE(p["loaded"].get<bool>());
      EXPECT_EQ(p["refusal"], "wrong major ABI version");
      EXPECT_NE(p["message"].get<std::string>().find(path), std::string::npos);
      EXPECT_EQ(p["abi_version"], std::to_string(MT_PLUGIN_ABI_VERSION_MAJOR + 1) + ".0");
    }
  }
  EXPECT_TRUE(saw_c);
  EXPECT_TRUE(saw_major);
}

TEST(CliPlugins, TextNamesComponentsAndRefusalsAndStrictFails) {
  auto [status, out] = capture(plugins_cmd(""));
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("test.sdk.TreeTarget"), std::string::npos) << out;
  EXPECT_NE(out.find("refused:"), std::string::npos) << out;
  EXPECT_NE(out.find("[failing init]"), std::string::npos) << out;
  EXPECT_NE(out.find("deliberate failure"), std::string::npos) << out;
  EXPECT_EQ(capture(plugins_cmd("--strict")).first, 1);
}

} // namespace
} // namespace mt
