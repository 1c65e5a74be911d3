// A plugin in a separate CMake project, built against the installed SDK: install the SDK
// component into a temporary prefix, configure and build tests/abi/external_plugin with
// find_package(metatune) + metatune_add_plugin, then load the result and apply its rule.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "abi_test_util.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/schedule.h"
#include "core/workload/library.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

// Runs a shell command, returning its exit status; output goes to `log`.
int run(const std::string& cmd, const fs::path& log) {
  std::string full = cmd + " >>" + log.string() + " 2>&1";
  return std::system(full.c_str());
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ExternalPlugin, BuildsAgainstTheInstalledSdkAndLoads) {
  fs::path root = fs::temp_directory_path() / ("metatune_external_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  fs::path prefix = root / "prefix", build = root / "build", log = root / "log.txt";
  const std::string cmake = MT_TEST_CMAKE_COMMAND;

  ASSERT_EQ(run("'" + cmake + "' --install '" MT_TEST_PROJECT_BINARY_DIR "' --prefix '" +
                    prefix.string() + "' --component sdk",
                log),
            0)
      << slurp(log);
  // The installed SDK is self-contained: headers and the CMake package, nothing else.
  EXPECT_TRUE(fs::exists(prefix / "include/metatune/plugin_api.h"));
  EXPECT_TRUE(fs::exists(prefix / "include/metatune/sdk.hpp"));
  EXPECT_FALSE(fs::exists(prefix / "include/metatune/core"));

  ASSERT_EQ(run("'" + cmake + "' -S '" MT_TEST_EXTERNAL_SOURCE_DIR "' -B '" + build.string() +
                    "' -G '" MT_TEST_CMAKE_GENERATOR "' -DCMAKE_BUILD_TYPE=Release"
                    " -DCMAKE_PREFIX_PATH='" +
                    prefix.string() + "'",
                log),
            0)
      << slurp(log);
  ASSERT_EQ(run("'" + cmake + "' --build '" + build.string() + "'", log), 0) << slurp(log);
  fs::path plugin = build / "external_rule.so";
  ASSERT_TRUE(fs::exists(plugin)) << slurp(log);

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
  fs::path tbuild = root / "template_build";
  ASSERT_EQ(run("'" + cmake + "' -S '" MT_TEST_TEMPLATE_SOURCE_DIR "' -B '" + tbuild.string() +
                    "' -G '" MT_TEST_CMAKE_GENERATOR "' -DCMAKE_PREFIX_PATH='" + prefix.string() +
                    "'",
                log),
            0)
      << slurp(log);
  ASSERT_EQ(run("'" + cmake + "' --build '" + tbuild.string() + "'", log), 0) << slurp(log);
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
  fs::remove_all(root);
}

} // namespace
} // namespace mt
