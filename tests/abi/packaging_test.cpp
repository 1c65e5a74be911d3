// The install tree: installing the runtime, dev and sdk components into a temporary prefix
// gives a relocatable layout -- the installed CLI finds plugins in the prefix's
// lib/metatune/plugins, pkg-config reports that directory, and a program embedding metatune
// builds with find_package(metatune COMPONENTS core).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "abi_test_util.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

std::pair<int, std::string> capture(const std::string& cmd) {
  return abi_test::capture(cmd + " 2>&1");
}

TEST(Packaging, InstallTreeIsRelocatableAndFindsItsPlugins) {
  fs::path root = fs::temp_directory_path() / ("metatune_install_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::path staged = root / "staged";
  const std::string cmake = std::string("'") + MT_TEST_CMAKE_COMMAND + "'";
  for (const char* component : {"runtime", "dev", "sdk"}) {
    auto [st, out] = capture(cmake + " --install '" MT_TEST_PROJECT_BINARY_DIR "' --prefix '" +
                             staged.string() + "' --component " + component);
    ASSERT_EQ(st, 0) << out;
  }
  // Move the tree: nothing in it may depend on where it was installed.
  fs::path prefix = root / "moved";
  fs::rename(staged, prefix);
  for (const char* p :
       {"bin/metatune", "lib/libmetatune.so", "lib/libmetatune_plugin_host.so",
        "lib/cmake/metatune/metatuneConfig.cmake", "lib/cmake/metatune/metatuneConfigVersion.cmake",
        "lib/cmake/metatune/metatuneTargets.cmake", "lib/cmake/metatune/MetatunePlugin.cmake",
        "lib/pkgconfig/metatune.pc", "include/metatune/plugin_api.h",
        "include/metatune/sdk/schedule.hpp", "include/metatune/core/schedule/schedule.h"})
    EXPECT_TRUE(fs::exists(prefix / p)) << p;
  fs::path plugins = prefix / "lib/metatune/plugins";
  ASSERT_TRUE(fs::is_directory(plugins));

  // A plugin dropped into the installation's plugin directory is found by the installed CLI.
  fs::copy_file(abi_test::good_dir() / "c_split_rule.so", plugins / "c_split_rule.so");
  auto [st, out] = capture("env -u METATUNE_PLUGIN_PATH '" + (prefix / "bin/metatune").string() +
                           "' plugins --json");
  ASSERT_EQ(st, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  ASSERT_FALSE(j["search_path"].empty());
  EXPECT_TRUE(fs::equivalent(fs::path(j["search_path"].back().get<std::string>()), plugins));
  bool found = false;
  for (const auto& p : j["plugins"])
    found |= p["loaded"].get<bool>() && p["name"] == "test_c_split_rule";
  EXPECT_TRUE(found) << out;

  // pkg-config, relocated.
  auto [pst, pout] = capture("PKG_CONFIG_PATH='" + (prefix / "lib/pkgconfig").string() +
                             "' pkg-config --variable=pluginsdir metatune");
  if (pst == 127 || pout.find("not found") != std::string::npos) {
    GTEST_LOG_(INFO) << "pkg-config not available; skipped its check";
  } else {
    ASSERT_EQ(pst, 0) << pout;
    while (!pout.empty() && (pout.back() == '\n' || pout.back() == ' '))
      pout.pop_back();
    EXPECT_TRUE(fs::equivalent(fs::path(pout), plugins)) << pout;
  }

  // A host program embedding metatune, built against the moved install tree.
  fs::path build = root / "embed_build";
  auto [cst, cout] =
      capture(cmake + " -S '" MT_TEST_EMBED_SOURCE_DIR "' -B '" + build.string() +
              "' -G '" MT_TEST_CMAKE_GENERATOR "' -DCMAKE_PREFIX_PATH='" + prefix.string() + "'");
  ASSERT_EQ(cst, 0) << cout;
  auto [bst, bout] = capture(cmake + " --build '" + build.string() + "'");
  ASSERT_EQ(bst, 0) << bout;
  auto [rst, rout] = capture("env -u METATUNE_PLUGIN_PATH '" + (build / "embed_host").string() +
                             "' test.c.SplitBy4");
  ASSERT_EQ(rst, 0) << rout;
  EXPECT_EQ(rout, "3 4\n");
  fs::remove_all(root);
}

} // namespace
} // namespace mt
