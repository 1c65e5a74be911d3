// `metatune tune --strategy NAME` with a strategy from a test plugin (ABI 1.3 search context):
// the run measures its candidates and the records name the plugin; a strategy that throws
// ends the run with a message naming it, not a crash; the built-in strategies are listed by
// `metatune plugins` like any component.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "abi_test_util.h"
#include "core/database/database.h"

namespace mt {
namespace {

using abi_test::capture;

struct TempDb {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("mt_cli_strategy_" + std::to_string(::getpid()) + "_" +
                                std::to_string(reinterpret_cast<uintptr_t>(this)) + ".db");
  ~TempDb() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    std::filesystem::remove(path.string() + "-wal", ec);
    std::filesystem::remove(path.string() + "-shm", ec);
  }
};

std::string tune_cmd(const TempDb& db, const std::string& strategy) {
  return std::string("'") + MT_TEST_CLI +
         "' tune --workload 'matmul(M=32,N=32,K=32)' --trials 8 --batch-size 4 --db '" +
         db.path.string() + "' --strategy " + strategy +
         " --cost-model none --no-library --verify-top 0 --min-repeat-ms 1 --repeats 1 -q "
         "--reference-cache '' --plugin-path '" +
         abi_test::good_dir().string() + "' 2>&1";
}

TEST(CliStrategy, TestPluginStrategyDrivesTheRun) {
  TempDb db;
  auto [status, out] = capture(tune_cmd(db, "test.sdk.SmallestHashFirst"));
  ASSERT_EQ(status, 0) << out;
  std::unique_ptr<Database> d = Database::open(db.path.string());
  std::vector<TuningRecord> recs;
  for (int64_t id = 1; id <= static_cast<int64_t>(d->record_count()); ++id)
    recs.push_back(d->record(id));
  ASSERT_EQ(recs.size(), 8u) << out;
  for (const TuningRecord& r : recs) {
    bool names_plugin = false;
    for (const PluginInfo& p : r.plugins)
      names_plugin = names_plugin || p.name == "test_sdk_components";
    EXPECT_TRUE(names_plugin) << "record " << r.id << " does not name the strategy's plugin";
    EXPECT_FALSE(r.failed()) << r.error;
  }
}

TEST(CliStrategy, FailingStrategyIsReportedByName) {
  TempDb db;
  auto [status, out] = capture(tune_cmd(db, "test.sdk.BrokenStrategy"));
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("test.sdk.BrokenStrategy"), std::string::npos) << out;
  EXPECT_NE(out.find("BrokenStrategy always fails"), std::string::npos) << out;
}

TEST(CliStrategy, UnknownStrategyListsTheRegisteredOnes) {
  TempDb db;
  auto [status, out] = capture(tune_cmd(db, "test.NoSuchStrategy"));
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("test.NoSuchStrategy"), std::string::npos) << out;
  EXPECT_NE(out.find("search.Evolutionary"), std::string::npos) << out;
  EXPECT_NE(out.find("test.sdk.SmallestHashFirst"), std::string::npos) << out;
}

TEST(CliStrategy, PluginsListsTheBuiltInStrategies) {
  auto [status, out] = capture(std::string("'") + MT_TEST_CLI + "' plugins --json 2>&1");
  ASSERT_EQ(status, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  std::set<std::string> strategies;
  for (const auto& p : j["plugins"])
    for (const auto& c : p["components"])
      if (c["kind"] == "search_strategy") strategies.insert(c["name"].get<std::string>());
  EXPECT_TRUE(strategies.count("search.Evolutionary")) << out;
  EXPECT_TRUE(strategies.count("search.ReplayTrace")) << out;
}

} // namespace
} // namespace mt
