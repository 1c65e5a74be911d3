// The GPU targets through the CLI on this machine: `metatune plugins` shows each GPU target's
// device or why it has none, and `metatune tune --target cuda` without a CUDA device stops with
// that reason and exit status 1, before a database is written.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace {

std::pair<int, std::string> capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string cli() {
  return std::string("'") + MT_TEST_CLI + "' ";
}
std::string plugin_path() {
  return std::string(" --no-default-path --path '") + MT_TEST_PLUGIN_DIR + "'";
}

TEST(GpuCli, PluginsShowsEachGpuTargetsDeviceOrWhyItHasNone) {
  auto [status, out] = capture(cli() + "plugins --json" + plugin_path() + " 2>&1");
  ASSERT_EQ(status, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  int seen = 0;
  for (const auto& p : j["plugins"])
    for (const auto& c : p["components"]) {
      if (c["kind"] != "target" || (c["name"] != "cuda" && c["name"] != "opencl")) continue;
      ++seen;
      const auto& d = c["device"];
      if (d.contains("unavailable")) {
        std::string why = d["unavailable"];
        if (c["name"] == "cuda")
          EXPECT_EQ(why.rfind("no CUDA device (", 0), 0u) << why;
        else
          EXPECT_NE(why.find("OpenCL"), std::string::npos) << why;
      } else {
        EXPECT_FALSE(d.value("device", std::string()).empty()) << d.dump();
        EXPECT_EQ(d.value("target", std::string()).rfind(c["name"].get<std::string>(), 0), 0u);
      }
    }
  EXPECT_EQ(seen, 2) << out;
  auto [tstatus, text] = capture(cli() + "plugins" + plugin_path() + " 2>&1");
  EXPECT_EQ(tstatus, 0);
  EXPECT_NE(text.find("    target  cuda"), std::string::npos) << text;
  EXPECT_NE(text.find("      device: "), std::string::npos) << text;
}

TEST(GpuCli, TuneForCudaWithoutADeviceFailsWithTheReason) {
  auto [status, out] = capture(cli() + "plugins --json" + plugin_path() + " 2>/dev/null");
  ASSERT_EQ(status, 0);
  nlohmann::json j = nlohmann::json::parse(out);
  bool has_device = false;
  for (const auto& p : j["plugins"])
    for (const auto& c : p["components"])
      if (c["name"] == "cuda" && !c["device"].contains("unavailable")) has_device = true;
  if (has_device) GTEST_SKIP() << "this machine has a CUDA device";
  std::filesystem::path db = std::filesystem::temp_directory_path() / "mt_gpu_cli_test.db";
  std::filesystem::remove(db);
  auto [tstatus, text] = capture(cli() + "tune --target cuda -w 'matmul(M=16,N=16,K=16)' " +
                                 "--trials 2 --db '" + db.string() + "' 2>&1");
  EXPECT_EQ(tstatus, 1) << text;
  EXPECT_NE(text.find("target 'cuda': no CUDA device ("), std::string::npos) << text;
  EXPECT_EQ(text.find("Segmentation"), std::string::npos) << text;
  EXPECT_FALSE(std::filesystem::exists(db));
}

} // namespace
