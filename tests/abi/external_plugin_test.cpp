// A plugin in a separate CMake project, built against the installed SDK: install the SDK
// component into a temporary prefix, configure and build tests/abi/external_plugin with
// find_package(metatune) + metatune_add_plugin, then load the result and apply its rule.
#include <gtest/gtest.h>

#include "abi_test_util.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/schedule.h"
#include "core/workload/library.h"
#include "external_build.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

TEST(ExternalPlugin, BuildsAgainstTheInstalledSdkAndLoads) {
  abi_test::ExternalBuild ext("external");
  ASSERT_TRUE(ext.install_sdk()) << ext.log();
  // The installed SDK is self-contained: headers and the CMake package, nothing else.
  EXPECT_TRUE(fs::exists(ext.prefix() / "include/metatune/plugin_api.h"));
  EXPECT_TRUE(fs::exists(ext.prefix() / "include/metatune/sdk.hpp"));
  EXPECT_FALSE(fs::exists(ext.prefix() / "include/metatune/core"));

  fs::path build = ext.build(MT_TEST_EXTERNAL_SOURCE_DIR, "build", "-DCMAKE_BUILD_TYPE=Release");
  ASSERT_FALSE(build.empty()) << ext.log();
  fs::path plugin = build / "external_rule.so";
  ASSERT_TRUE(fs::exists(plugin)) << ext.log();

  PluginHost host;
  const PluginRecord& r = host.load(plugin);
  ASSERT_TRUE(r.loaded()) << r.message;
  EXPECT_EQ(r.name, "external_rule");
  EXPECT_EQ(r.version, "0.3");
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=8,N=8,K=8)"));
  BlockRV b = sch->all_blocks()[0];
  host.create_schedule_rule("external.AnnotateInnermost")->apply(sch, b);
  const ForNode& inner = sch->get(sch->get_loops(b).back());
  ASSERT_EQ(inner.annotations.count("external.visited"), 1u);
  EXPECT_EQ(std::get<int64_t>(inner.annotations.at("external.visited")), 1);

  // The plugin template builds the same way, and its rule forks a vectorized copy.
  fs::path tbuild = ext.build(MT_TEST_TEMPLATE_SOURCE_DIR, "template_build");
  ASSERT_FALSE(tbuild.empty()) << ext.log();
  const PluginRecord& t = host.load(tbuild / "my_plugin.so");
  ASSERT_TRUE(t.loaded()) << t.message;
  Function softmax = make_workload("softmax(M=4,N=32)");
  auto s2 = std::make_shared<Schedule>(softmax);
  auto rule = host.create_schedule_rule("example.TileAndVectorizeInnermost");
  size_t forked = 0;
  for (BlockRV blk : s2->all_blocks()) {
    std::vector<std::shared_ptr<Schedule>> out = rule->apply(s2, blk);
    ASSERT_GE(out.size(), 1u);
    if (out.size() == 2) {
      ++forked;
      abi_test::expect_same_results(softmax, out[1]->func());
    }
  }
  EXPECT_GT(forked, 0u); // the spatial blocks (exp, divide) fork
}

} // namespace
} // namespace mt
