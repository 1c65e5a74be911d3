// Discovery and refusal: every broken plugin is refused with its path and the reason, the host
// carries on, and good plugins (also stripped ones) are found and registered.
#include <gtest/gtest.h>

#include <boost/dll/library_info.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <unistd.h>

#include "abi_test_util.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/schedule.h"
#include "core/workload/library.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

using abi_test::CapturedLog;

const PluginRecord* record_named(const PluginHost& host, const std::string& file) {
  for (const PluginRecord& r : host.plugins())
    if (fs::path(r.path).filename() == file) return &r;
  return nullptr;
}

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("metatune_abi_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(PluginHost, LoadsGoodPluginsAndListsTheirComponents) {
  PluginHost host;
  EXPECT_EQ(host.discover({abi_test::good_dir()}), 2u);
  const PluginRecord* c = record_named(host, "c_split_rule.so");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->loaded()) << c->message;
  EXPECT_EQ(c->name, "test_c_split_rule");
  EXPECT_EQ(c->abi_version, MT_PLUGIN_ABI_VERSION);
  EXPECT_EQ(c->abi_version_string(), std::to_string(MT_PLUGIN_ABI_VERSION_MAJOR) + "." +
                                         std::to_string(MT_PLUGIN_ABI_VERSION_MINOR));
  ASSERT_EQ(c->components.size(), 2u);
  EXPECT_EQ(c->components[0].name, "test.c.SplitBy4");
  EXPECT_EQ(c->components[0].kind, ComponentKind::ScheduleRule);
  EXPECT_EQ(c->components[0].plugin_path, c->path);

  const PluginRecord* s = record_named(host, "sdk_components.so");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->loaded()) << s->message;
  EXPECT_EQ(s->version, "2.1");
  // One of every kind.
  for (int k = 0; k < kNumComponentKinds; ++k)
    EXPECT_FALSE(host.components(static_cast<ComponentKind>(k)).empty())
        << to_string(static_cast<ComponentKind>(k));
  ASSERT_NE(host.find(ComponentKind::Target, "test.sdk.TreeTarget"), nullptr);
  EXPECT_EQ(host.find(ComponentKind::Mutator, "test.sdk.TreeTarget"), nullptr);
  EXPECT_TRUE(host.refused().empty());
}

TEST(PluginHost, LoadingTheSameFileTwiceIsOneRecord) {
  PluginHost host;
  const PluginRecord& a = host.load(abi_test::good_dir() / "c_split_rule.so");
  ASSERT_TRUE(a.loaded()) << a.message;
  const PluginRecord& b = host.load(abi_test::good_dir() / "." / "c_split_rule.so");
  EXPECT_TRUE(b.loaded());
  EXPECT_EQ(host.plugins().size(), 1u);
}

struct RefusalCase {
  const char* file;
  RefusalReason reason;
  const char* needle; // must occur in the message
};

TEST(PluginHost, RefusesEachBrokenPluginWithPathAndReasonAndCarriesOn) {
  TempDir tmp;
  // "Not a shared library": text with the right suffix, and an ELF file that is no library.
  { std::ofstream(tmp.path / "garbage.so") << "this is not an ELF file\n"; }
  fs::copy_file(abi_test::refused_dir() / "no_entry.so", tmp.path / "no_entry_copy.so");

  CapturedLog log;
  PluginHost host;
  host.discover({abi_test::refused_dir(), tmp.path, abi_test::good_dir(), "/no/such/dir"});

  const std::string host_abi = std::to_string(MT_PLUGIN_ABI_VERSION_MAJOR) + "." +
                               std::to_string(MT_PLUGIN_ABI_VERSION_MINOR);
  const std::string next_major = std::to_string(MT_PLUGIN_ABI_VERSION_MAJOR + 1) + ".0";
  const std::string next_minor = std::to_string(MT_PLUGIN_ABI_VERSION_MAJOR) + "." +
                                 std::to_string(MT_PLUGIN_ABI_VERSION_MINOR + 1);
  const RefusalCase cases[] = {
      {"wrong_major.so", RefusalReason::WrongMajor, "major versions must match"},
      {"newer_minor.so", RefusalReason::NewerMinor, "newer than this host"},
      {"failing_init.so", RefusalReason::InitFailed, "deliberate failure: the device is missing"},
      {"no_version.so", RefusalReason::InvalidAnswer, "did not report its ABI version"},
      {"hidden_entry.so", RefusalReason::NotAPlugin, "exports no metatune_plugin_entry"},
      {"dup_b.so", RefusalReason::DuplicateComponent, "schedule_rule 'test.Duplicate'"},
      {"no_entry.so", RefusalReason::NotAPlugin, "no metatune_plugin_entry symbol"},
      {"load_failed.so", RefusalReason::LoadFailed, "metatune_test_symbol_that_does_not_exist"},
      {"garbage.so", RefusalReason::NotSharedLibrary, "not a shared library"},
  };
  std::vector<std::string> warnings = log.at_least(MT_LOG_WARNING);
  for (const RefusalCase& c : cases) {
    SCOPED_TRACE(c.file);
    const PluginRecord* r = record_named(host, c.file);
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->loaded());
    EXPECT_EQ(r->refusal, c.reason) << to_string(r->refusal) << ": " << r->message;
    EXPECT_NE(r->message.find(r->path), std::string::npos) << r->message;
    EXPECT_NE(r->message.find(c.needle), std::string::npos) << r->message;
    EXPECT_TRUE(r->components.empty());
    // Each refusal is also reported through the log, with the path.
    EXPECT_TRUE(
        std::any_of(warnings.begin(), warnings.end(),
                    [&](const std::string& w) { return w.find(r->message) != std::string::npos; }))
        << "no warning for " << r->message;
  }
  // Versions in the messages are the real ones.
  EXPECT_NE(record_named(host, "wrong_major.so")->message.find(next_major), std::string::npos);
  EXPECT_NE(record_named(host, "wrong_major.so")->message.find(host_abi), std::string::npos);
  EXPECT_NE(record_named(host, "newer_minor.so")->message.find(next_minor), std::string::npos);
  EXPECT_EQ(record_named(host, "wrong_major.so")->abi_version_string(), next_major);
  // The duplicate names the plugin that registered the name first.
  EXPECT_NE(record_named(host, "dup_b.so")->message.find("dup_a.so"), std::string::npos);
  const PluginRecord* elf = record_named(host, "no_entry_copy.so");
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->refusal, RefusalReason::NotAPlugin);

  // The host carried on: the first duplicate and the good plugins are loaded and usable.
  EXPECT_TRUE(record_named(host, "dup_a.so")->loaded());
  EXPECT_TRUE(record_named(host, "c_split_rule.so")->loaded());
  EXPECT_NE(host.find(ComponentKind::ScheduleRule, "test.Duplicate"), nullptr);
  auto rule = host.create_schedule_rule("test.c.SplitBy4");
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=8,N=8,K=8)"));
  BlockRV block = sch->all_blocks()[0];
  EXPECT_EQ(rule->apply(sch, block).size(), 1u);
  EXPECT_EQ(sch->get_loops(block).size(), 4u);
  EXPECT_EQ(host.refused().size(), 10u);
}

TEST(PluginHost, StrippedPluginIsFoundThroughItsMarkerSection) {
  fs::path stripped = abi_test::stripped_dir() / "c_split_rule.so";
  ASSERT_TRUE(fs::exists(stripped));
  // The premise: strip removed .symtab, so Boost.DLL's symbols() no longer lists the entry,
  // while the marker section survives.
  boost::dll::library_info info(stripped);
  std::vector<std::string> symbols = info.symbols();
  EXPECT_EQ(std::find(symbols.begin(), symbols.end(), MT_PLUGIN_ENTRY_SYMBOL), symbols.end());
  std::vector<std::string> sections = info.sections();
  EXPECT_NE(std::find(sections.begin(), sections.end(), MT_PLUGIN_SECTION), sections.end());
  EXPECT_EQ(std::find(sections.begin(), sections.end(), ".symtab"), sections.end());

  PluginHost host;
  EXPECT_EQ(host.discover({abi_test::stripped_dir()}), 1u);
  ASSERT_EQ(host.plugins().size(), 1u);
  EXPECT_TRUE(host.plugins()[0].loaded()) << host.plugins()[0].message;
  auto rule = host.create_schedule_rule("test.c.SplitBy4");
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=8,N=8,K=8)"));
  rule->apply(sch, sch->all_blocks()[0]);
  EXPECT_EQ(sch->get_loops(sch->all_blocks()[0]).size(), 4u);
}

TEST(PluginHost, SearchPathFromEnvironmentComesFirst) {
  EXPECT_EQ(PluginHost::parse_search_path("/a::/b:"), (std::vector<fs::path>{"/a", "/b"}));
  EXPECT_TRUE(PluginHost::parse_search_path("").empty());

  const char* old = std::getenv(kPluginPathEnv);
  std::string saved = old ? old : "";
  ::setenv(kPluginPathEnv, (abi_test::good_dir().string() + ":/nowhere").c_str(), 1);
  std::vector<fs::path> path = PluginHost::default_search_path();
  if (old)
    ::setenv(kPluginPathEnv, saved.c_str(), 1);
  else
    ::unsetenv(kPluginPathEnv);
  ASSERT_EQ(path.size(), 3u);
  EXPECT_EQ(path[0], abi_test::good_dir());
  EXPECT_EQ(path[1], fs::path("/nowhere"));
  // The built-in directory is lib/metatune/plugins next to the plugin-host library.
  EXPECT_EQ(path[2], PluginHost::builtin_plugin_dir());
  EXPECT_EQ(path[2].filename(), "plugins");
  EXPECT_EQ(path[2].parent_path().filename(), "metatune");
}

TEST(PluginHost, UnknownComponentNamesTheKnownOnes) {
  PluginHost host;
  host.discover({abi_test::good_dir()});
  try {
    host.create_schedule_rule("test.NoSuchRule");
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("test.NoSuchRule"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("test.c.SplitBy4"), std::string::npos);
  }
}

TEST(PluginHost, FactoryFailureIsAPluginError) {
  PluginHost host;
  host.discover({abi_test::good_dir()});
  try {
    host.create_schedule_rule("test.c.SplitBy4", "{\"unexpected\": 1}");
    FAIL() << "expected PluginError";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.operation(), "create");
    EXPECT_NE(std::string(e.what()).find("take no configuration"), std::string::npos);
    EXPECT_NE(e.plugin_path().find("c_split_rule.so"), std::string::npos);
  }
}

TEST(PluginHost, InstancesKeepTheLibraryLoaded) {
  std::unique_ptr<PluginScheduleRule> rule;
  {
    PluginHost host;
    host.discover({abi_test::good_dir()});
    rule = host.create_schedule_rule("test.sdk.SplitBy4");
  } // the host and its registry are gone; the instance must still work
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=8,N=8,K=8)"));
  rule->apply(sch, sch->all_blocks()[0]);
  EXPECT_EQ(sch->get_loops(sch->all_blocks()[0]).size(), 4u);
  rule.reset(); // releases the object, then unloads the library
}

} // namespace
} // namespace mt
