// Growing the search space with nothing rebuilt: a vendor's plugin built in a separate CMake
// project against the installed SDK (tests/abi/vendor_plugin) joins real `metatune tune` runs
// -- by flag (--rules +vendor.MyRule), by a tuning-config file, and by its own declaration
// (vendor.DeclaredRule joins llvm's defaults) -- and its instructions are then in the traces of
// the database records; `-NAME` drops a default; `--show-space` prints every component with
// where it came from. The reference for the lists is the CLI's own --show-space without the
// vendor plugin, i.e. the target's defaults.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/schedule/trace.h"
#include "external_build.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

struct CliRun {
  int status = -1;
  std::string out, err;
};

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The annotate instructions of `key` in a trace, by the value they set.
std::vector<int64_t> annotations(const Trace& trace, const std::string& key) {
  std::vector<int64_t> values;
  for (const Instruction& inst : trace.instructions())
    if (inst.kind == "annotate" && !inst.attrs.empty() &&
        std::holds_alternative<std::string>(inst.attrs[0]) &&
        std::get<std::string>(inst.attrs[0]) == key)
      values.push_back(inst.attrs.size() > 1 && std::holds_alternative<int64_t>(inst.attrs[1])
                           ? std::get<int64_t>(inst.attrs[1])
                           : -1);
  return values;
}

class SpaceComposition : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
#ifdef MT_TEST_CAN_TUNE
    ext_ = std::make_unique<abi_test::ExternalBuild>("vendor");
    if (!ext_->install_sdk()) {
      build_error_ = "installing the SDK failed:\n" + ext_->log();
      return;
    }
    fs::path build = ext_->build(MT_TEST_VENDOR_SOURCE_DIR, "build", "-DCMAKE_BUILD_TYPE=Release");
    if (build.empty() || !fs::exists(build / "vendor_rules.so")) {
      build_error_ = "building the vendor plugin failed:\n" + ext_->log();
      return;
    }
    // Its own directory, as a user would install it: only the .so.
    plugin_dir_ = ext_->root() / "plugins";
    fs::create_directories(plugin_dir_);
    fs::copy_file(build / "vendor_rules.so", plugin_dir_ / "vendor_rules.so");
#endif
  }
  static void TearDownTestSuite() {
    ext_.reset();
  }

  void SetUp() override {
#ifndef MT_TEST_CAN_TUNE
    GTEST_SKIP() << "needs the std_rules and llvm_cpu plugins";
#endif
    ASSERT_TRUE(build_error_.empty()) << build_error_;
    work_ = ext_->root() / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(work_);
  }

  // `metatune ARGS`, with the vendor plugin on the path when `vendor`.
  CliRun cli(const std::string& args, bool vendor = true) const {
    fs::path out = work_ / "stdout.txt", err = work_ / "stderr.txt";
    std::string cmd = shell_quoted(MT_TEST_CLI) + " " + args;
    if (vendor) cmd += " --plugin-path " + shell_quoted(plugin_dir_.string());
    cmd += " >" + shell_quoted(out.string()) + " 2>" + shell_quoted(err.string());
    int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_all(out), read_all(err)};
  }

  // A tiny tuning run into a fresh database; returns the trace of every record but the
  // unscheduled workload's.
  std::vector<Trace> tune(const std::string& name, const std::string& extra) const {
    std::string db = (work_ / (name + ".db")).string();
    CliRun r = cli("tune --workload 'matmul(M=64,N=64,K=64)' --trials 8 --batch-size 8 --db " +
                   shell_quoted(db) +
                   " --seed 3 --no-library --no-compare --verify-top 0 --reference-cache none"
                   " --repeats 1 --min-repeat-ms 1 --cost-model none -q " +
                   extra);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    std::vector<Trace> traces;
    if (r.status != 0) return traces;
    DatabaseOptions ro;
    ro.read_only = true;
    auto d = Database::open(db, ro);
    for (const WorkloadEntry& w : d->workloads())
      for (const TuningRecord& rec : d->records(w.id)) {
        Trace t = Trace::from_json(rec.trace_json);
        // The unscheduled workload, a candidate of every task, is no rule's work.
        if (t.size() > 0) traces.push_back(std::move(t));
      }
    return traces;
  }

  nlohmann::json show_space_json(const std::string& extra, bool vendor = true) const {
    CliRun r = cli("tune --show-space --json " + extra, vendor);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    return nlohmann::json::parse(r.out);
  }

  static std::vector<std::string> names(const nlohmann::json& list) {
    std::vector<std::string> out;
    for (const auto& c : list)
      out.push_back(c["name"]);
    return out;
  }

  static inline std::unique_ptr<abi_test::ExternalBuild> ext_;
  static inline std::string build_error_;
  static inline fs::path plugin_dir_;
  fs::path work_;
};

TEST_F(SpaceComposition, DeclaredRuleJoinsByItselfAndADefaultCanBeDropped) {
  // Installed and nothing else: the declared rule marks every candidate, the other does not.
  std::vector<Trace> plain = tune("plain", "");
  ASSERT_FALSE(plain.empty());
  size_t tiled = 0;
  for (const Trace& t : plain) {
    EXPECT_EQ(annotations(t, "vendor.declared_rule"), std::vector<int64_t>{1}) << t.to_json();
    EXPECT_TRUE(annotations(t, "vendor.my_rule").empty()) << t.to_json();
    tiled += !annotations(t, "meta_schedule.tiling_structure").empty();
  }
  EXPECT_GT(tiled, 0u); // std.MultiLevelTiling took part

  // Dropping a target default and the declared rule: neither leaves anything any more.
  std::vector<Trace> dropped =
      tune("dropped", "--rules=-std.MultiLevelTiling --rules -vendor.DeclaredRule");
  ASSERT_FALSE(dropped.empty());
  for (const Trace& t : dropped) {
    EXPECT_TRUE(annotations(t, "vendor.declared_rule").empty()) << t.to_json();
    EXPECT_TRUE(annotations(t, "meta_schedule.tiling_structure").empty()) << t.to_json();
  }
}

TEST_F(SpaceComposition, RuleAddedByFlagOrConfigFileIsInEveryRecord) {
  // By flag, with a configuration the rule's instructions carry.
  std::vector<Trace> flagged = tune("flag", R"(--rules '+vendor.MyRule{"value": 7}')");
  ASSERT_FALSE(flagged.empty());
  for (const Trace& t : flagged) {
    EXPECT_EQ(annotations(t, "vendor.my_rule"), std::vector<int64_t>{7}) << t.to_json();
    EXPECT_EQ(annotations(t, "vendor.declared_rule"), std::vector<int64_t>{1}) << t.to_json();
  }

  // By a tuning-config file, entries in object form, the declared rule dropped.
  fs::path config = work_ / "space.json";
  std::ofstream(config) << R"({"rules": [{"add": "vendor.MyRule", "config": {"value": 9}},
                                         "-vendor.DeclaredRule"]})";
  std::vector<Trace> configured = tune("config", "--config " + shell_quoted(config.string()));
  ASSERT_FALSE(configured.empty());
  for (const Trace& t : configured) {
    EXPECT_EQ(annotations(t, "vendor.my_rule"), std::vector<int64_t>{9}) << t.to_json();
    EXPECT_TRUE(annotations(t, "vendor.declared_rule").empty()) << t.to_json();
  }
}

TEST_F(SpaceComposition, ShowSpacePrintsEveryComponentWithItsOrigin) {
  // The reference: the target's defaults, as the CLI shows them without the vendor plugin.
  nlohmann::json base = show_space_json("", false);
  for (const char* list : {"rules", "mutators", "postprocs"})
    for (const auto& c : base[list])
      EXPECT_EQ(c["origin"]["source"], "target_default") << c.dump();
  ASSERT_FALSE(base["mutators"].empty());
  const std::string first_mutator = base["mutators"][0]["name"];
  const std::string last_postproc = base["postprocs"].back()["name"];

  fs::path config = work_ / "space.json";
  std::ofstream(config) << R"({"postprocs": "-)" << last_postproc << R"("})";
  const std::string edits = R"(--rules '+vendor.MyRule{"value": 7}' --mutators=-)" + first_mutator +
                            " --config " + shell_quoted(config.string());
  nlohmann::json j = show_space_json(edits);

  // Rules: the defaults, then the declared rule, then the one the flag adds.
  std::vector<std::string> want = names(base["rules"]);
  want.push_back("vendor.DeclaredRule");
  want.push_back("vendor.MyRule");
  EXPECT_EQ(names(j["rules"]), want);
  const std::string so = (plugin_dir_ / "vendor_rules.so").string();
  EXPECT_EQ(j["rules"][want.size() - 2]["origin"]["source"], "plugin_declaration");
  EXPECT_EQ(j["rules"][want.size() - 2]["origin"]["where"], so);
  EXPECT_EQ(j["rules"][want.size() - 1]["origin"]["where"], "--rules flag");
  EXPECT_EQ(j["rules"][want.size() - 1]["config"], nlohmann::json({{"value", 7}}));

  // Mutators: the first default dropped by the flag, the declared one added with its weight;
  // the shares are the weights normalised.
  std::vector<std::string> want_m = names(base["mutators"]);
  want_m.erase(want_m.begin());
  want_m.push_back("vendor.NoOpMutator");
  EXPECT_EQ(names(j["mutators"]), want_m);
  double total = 0;
  for (const auto& m : j["mutators"])
    total += m["probability"].get<double>();
  for (size_t i = 0; i + 1 < want_m.size(); ++i)
    EXPECT_EQ(j["mutators"][i]["probability"], base["mutators"][i + 1]["probability"]);
  const auto& noop = j["mutators"].back();
  EXPECT_DOUBLE_EQ(noop["probability"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(noop["share"].get<double>(), 0.05 / total);

  // Postprocessors: the last default dropped by the config file.
  std::vector<std::string> want_p = names(base["postprocs"]);
  want_p.pop_back();
  EXPECT_EQ(names(j["postprocs"]), want_p);
  ASSERT_EQ(j["removed"].size(), 2u);
  EXPECT_EQ(j["removed"][0]["name"], last_postproc); // the config file applies first
  EXPECT_EQ(j["removed"][0]["by"]["source"], "config_file");
  EXPECT_EQ(j["removed"][1]["name"], first_mutator);
  EXPECT_EQ(j["removed"][1]["by"]["where"], "--mutators flag");

  // The text form says the same, one line per component.
  CliRun text = cli("tune --show-space " + edits);
  ASSERT_EQ(text.status, 0) << text.err;
  auto line_of = [&](const std::string& name) {
    size_t at = text.out.find("  " + name + " ");
    if (at == std::string::npos) return std::string();
    return text.out.substr(at, text.out.find('\n', at) - at);
  };
  EXPECT_NE(line_of("vendor.DeclaredRule").find("plugin declaration (" + so + ")"),
            std::string::npos)
      << text.out;
  EXPECT_NE(line_of("vendor.MyRule").find(R"({"value":7})"), std::string::npos) << text.out;
  EXPECT_NE(line_of("vendor.MyRule").find("--rules flag"), std::string::npos) << text.out;
  EXPECT_NE(line_of(want[0]).find("target default (llvm.cpu)"), std::string::npos) << text.out;
  EXPECT_NE(line_of("vendor.NoOpMutator").find("0.05"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("mutator " + first_mutator +
                          " (target default (llvm.cpu)) by "
                          "--mutators flag"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("by config file " + config.string()), std::string::npos) << text.out;
}

// With -w, --show-space also lists the design spaces the rules make of each workload, each
// with what its trace places: the standard CPU tiling's structure, a value the search draws
// marked as such.
TEST_F(SpaceComposition, ShowSpaceListsTheDesignSpacesOfEachWorkload) {
  nlohmann::json j =
      show_space_json("-w 'matmul(M=64,N=64,K=64)' -w 'softmax(M=4,N=16)'", /*vendor=*/false);
  ASSERT_EQ(j["design_spaces"].size(), 2u) << j.dump();
  const nlohmann::json& mm = j["design_spaces"][0];
  EXPECT_EQ(mm["workload"], "matmul(M=64,N=64,K=64,dtype=f32)");
  EXPECT_EQ(mm["seed"], 1);
  ASSERT_GE(mm["spaces"].size(), 1u);
  bool tiled = false;
  for (const auto& space : mm["spaces"]) {
    EXPECT_GT(space["instructions"].get<int>(), 0);
    const auto& a = space["annotations"];
    if (a.value("meta_schedule.tiling_structure", "") == "SSRSRS") tiled = true;
    for (const auto& [key, value] : a.items())
      EXPECT_EQ(key.find(".sample_index"), std::string::npos) << key;
  }
  EXPECT_TRUE(tiled) << mm.dump();
  EXPECT_EQ(j["design_spaces"][1]["workload"], "softmax(M=4,N=16,dtype=f32)");

  CliRun text = cli("tune --show-space -w 'matmul(M=64,N=64,K=64)'", false);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("design spaces of matmul(M=64,N=64,K=64,dtype=f32) (seed 1): "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  [0] "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("meta_schedule.tiling_structure=SSRSRS"), std::string::npos) << text.out;

  CliRun bad = cli("tune --show-space -w 'matmul(M=64'", false);
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.err.find("matmul(M=64"), std::string::npos) << bad.err;
}

TEST_F(SpaceComposition, PluginsListsTheDeclarations) {
  CliRun r =
      cli("plugins --json --no-default-path --path " + shell_quoted(plugin_dir_.string()), false);
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["plugins"].size(), 1u) << r.out;
  const auto& components = j["plugins"][0]["components"];
  ASSERT_EQ(components.size(), 3u) << r.out;
  EXPECT_FALSE(components[0].contains("joins_defaults")) << r.out; // vendor.MyRule
  EXPECT_EQ(components[1]["joins_defaults"], nlohmann::json::parse(R"({"targets": ["llvm"]})"));
  EXPECT_EQ(components[2]["joins_defaults"],
            nlohmann::json::parse(R"({"targets": ["llvm.cpu"], "probability": 0.05})"));
}

TEST_F(SpaceComposition, UnknownNamesAreErrorsThatListWhatIsRegistered) {
  CliRun typo = cli("tune --show-space --rules +vendor.MyRul");
  EXPECT_EQ(typo.status, 1);
  EXPECT_NE(typo.err.find("--rules flag: schedule rule 'vendor.MyRul' is not registered"),
            std::string::npos)
      << typo.err;
  EXPECT_NE(typo.err.find("did you mean 'vendor.MyRule'"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("registered schedule rules: "), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("vendor.DeclaredRule"), std::string::npos) << typo.err;

  CliRun absent = cli("tune --show-space --rules=-vendor.MyRule");
  EXPECT_EQ(absent.status, 1);
  EXPECT_NE(absent.err.find("cannot drop schedule rule 'vendor.MyRule': the list does not have it"),
            std::string::npos)
      << absent.err;
}

} // namespace
} // namespace mt
