// The GPU targets through the CLI on this machine: `metatune plugins` shows each GPU target's
// device or why it has none, and `metatune tune --target cuda` without a CUDA device stops with
// that reason and exit status 1, before a database is written.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
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

// Skips (or, with METATUNE_REQUIRE_OPENCL set, fails) a test whose run of the CLI found no
// OpenCL device.
#define SKIP_WITHOUT_OPENCL(text)                                                                  \
  do {                                                                                             \
    if ((text).find("OpenCL not available") != std::string::npos ||                                \
        (text).find("no OpenCL") != std::string::npos) {                                           \
      if (std::getenv("METATUNE_REQUIRE_OPENCL")) FAIL() << (text);                                \
      GTEST_SKIP() << (text);                                                                      \
    }                                                                                              \
  } while (0)

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
      std::string name = c["name"];
      if (c["kind"] != "target" || (name != "cuda" && name != "opencl" && name != "rocm")) continue;
      ++seen;
      const auto& d = c["device"];
      if (d.contains("unavailable")) {
        std::string why = d["unavailable"];
        if (name == "cuda")
          EXPECT_EQ(why.rfind("no CUDA device (", 0), 0u) << why;
        else if (name == "rocm")
          EXPECT_EQ(why.rfind("no ROCm device (", 0), 0u) << why;
        else
          EXPECT_NE(why.find("OpenCL"), std::string::npos) << why;
      } else {
        EXPECT_FALSE(d.value("device", std::string()).empty()) << d.dump();
        EXPECT_EQ(d.value("target", std::string()).rfind(c["name"].get<std::string>(), 0), 0u);
      }
    }
  EXPECT_GE(seen, 2) << out; // cuda and opencl always; rocm where it was built
  auto [tstatus, text] = capture(cli() + "plugins" + plugin_path() + " 2>&1");
  EXPECT_EQ(tstatus, 0);
  EXPECT_NE(text.find("    target  cuda"), std::string::npos) << text;
  EXPECT_NE(text.find("      device: "), std::string::npos) << text;
}

// `metatune tune --target NAME` where NAME's device is missing: exit 1, the reason, no database.
void expect_tune_refused(const std::string& target, const std::string& reason) {
  auto [status, out] = capture(cli() + "plugins --json" + plugin_path() + " 2>/dev/null");
  ASSERT_EQ(status, 0);
  nlohmann::json j = nlohmann::json::parse(out);
  bool registered = false, has_device = false;
  for (const auto& p : j["plugins"])
    for (const auto& c : p["components"])
      if (c["name"] == target) {
        registered = true;
        has_device = !c["device"].contains("unavailable");
      }
  if (!registered) GTEST_SKIP() << target << " is not built here";
  if (has_device) GTEST_SKIP() << "this machine has a " << target << " device";
  std::filesystem::path db = std::filesystem::temp_directory_path() / ("mt_cli_" + target + ".db");
  std::filesystem::remove(db);
  auto [tstatus, text] =
      capture(cli() + "tune --target " + target + " -w 'matmul(M=16,N=16,K=16)' --trials 2 --db '" +
              db.string() + "' 2>&1");
  EXPECT_EQ(tstatus, 1) << text;
  EXPECT_NE(text.find("target '" + target + "': " + reason), std::string::npos) << text;
  EXPECT_EQ(text.find("Segmentation"), std::string::npos) << text;
  EXPECT_FALSE(std::filesystem::exists(db));
}

// Looking at the search space needs no device: for sm_90 without one, the f16 matmul's design
// spaces are listed with what sets them apart -- wgmma with each operand layout asked for,
// WMMA, and the CUDA-core tiling.
TEST(GpuCli, ShowSpaceListsTheDesignSpacesWithoutADevice) {
  auto [status, out] = capture(
      cli() + "tune --target 'cuda -arch=sm_90' --show-space --json " +
      "-w 'matmul(M=256,N=256,K=256,dtype=f16,out_dtype=f32)' --rules " +
      "'+std.MultiLevelTilingTensorCore{\"wgmma_tma\":\"both\",\"wgmma_producer\":\"both\"}' " +
      "2>/dev/null");
  ASSERT_EQ(status, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  if (!j.contains("unavailable")) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_EQ(std::string(j["unavailable"]).rfind("no CUDA device (", 0), 0u) << j.dump();
  ASSERT_EQ(j["design_spaces"].size(), 1u);
  int wgmma = 0, swizzled = 0, tma = 0, producer = 0, wmma = 0, cuda_cores = 0;
  for (const auto& space : j["design_spaces"][0]["spaces"]) {
    const auto& a = space["annotations"];
    std::string intrinsic = a.value("meta_schedule.tensor_intrinsic", "");
    wgmma += intrinsic == "wgmma.mma";
    wmma += intrinsic == "wmma.mma";
    cuda_cores += intrinsic.empty();
    swizzled += a.contains("meta_schedule.wgmma_swizzle");
    tma += a.contains("meta_schedule.wgmma_tma");
    producer += a.contains("meta_schedule.wgmma_producer");
    EXPECT_EQ(a.value("software_pipeline_stages", "sampled"), "sampled") << a.dump();
  }
  EXPECT_EQ(wgmma, 4) << out;
  EXPECT_EQ(swizzled, 3) << out;
  EXPECT_EQ(tma, 2) << out;
  EXPECT_EQ(producer, 1) << out;
  EXPECT_EQ(wmma, 1) << out;
  EXPECT_EQ(cuda_cores, 1) << out;

  auto [tstatus, text] =
      capture(cli() + "tune --target 'cuda -arch=sm_90' --show-space " +
              "-w 'matmul(M=256,N=256,K=256,dtype=f16,out_dtype=f32)' 2>/dev/null");
  EXPECT_EQ(tstatus, 0) << text;
  EXPECT_NE(text.find("(no device here: no CUDA device ("), std::string::npos) << text;
  EXPECT_NE(text.find("design spaces of matmul(M=256,N=256,K=256,dtype=f16,out_dtype=f32) (seed "
                      "1): "),
            std::string::npos)
      << text;
}

// An OpenCL device has no vendor library to compete with by default (oneDNN is the CPU's,
// cuBLAS the cuda target's); the records replay.
TEST(GpuCli, TuneForOpenClLeavesCpuLibrariesOut) {
  std::filesystem::path db = std::filesystem::temp_directory_path() / "mt_cli_opencl.db";
  std::filesystem::remove(db);
  auto [status, text] = capture(cli() + "tune --target opencl -w 'softmax(M=4,N=16)' --trials 3 " +
                                "--db '" + db.string() + "' 2>&1");
  // A record replays on the device its target string names (spaces spelled '_').
  auto [rstatus, replayed] =
      capture(cli() + "replay --db '" + db.string() + "' --record 1 --repeats 1 2>&1");
  std::filesystem::remove(db);
  SKIP_WITHOUT_OPENCL(text);
  ASSERT_EQ(status, 0) << text;
  EXPECT_EQ(text.find("library target"), std::string::npos) << text;
  EXPECT_EQ(text.find("of oneDNN"), std::string::npos) << text;
  EXPECT_NE(text.find("tuning done on opencl"), std::string::npos) << text;
  EXPECT_EQ(rstatus, 0) << replayed;
  EXPECT_NE(replayed.find("correct;"), std::string::npos) << replayed;
}

// A large GPU task's reference comes from the CPU target (llvm.cpu), not from the GPU target
// (the parent must not touch the GPU before it forks its workers) nor from the interpreter
// (minutes for a 4096^3 matmul); the kernels are checked against it like any reference.
TEST(GpuCli, LargeGpuTaskReferenceComesFromTheCpuTarget) {
  std::filesystem::path db = std::filesystem::temp_directory_path() / "mt_cli_opencl_ref.db";
  std::filesystem::remove(db);
  auto [status, text] = capture(cli() + "tune --target opencl -w 'matmul(M=64,N=48,K=32)' " +
                                "--trials 2 --reference-by-target-flops 0 --reference-cache none " +
                                "--no-library --verify-top 0 --db '" + db.string() + "' 2>&1");
  std::filesystem::remove(db);
  SKIP_WITHOUT_OPENCL(text);
  ASSERT_EQ(status, 0) << text;
  if (text.find("loaded plugin 'llvm_cpu'") == std::string::npos)
    GTEST_SKIP() << "llvm_cpu is not built here";
  // reference_schedule (core/tuner): the reduction outside matmul's innermost loop.
  EXPECT_NE(text.find("reference computed by llvm.cpu (outer loops parallel, reductions outside "
                      "the innermost loop)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(0 failed)"), std::string::npos) << text;
}

// Named on purpose, cuBLAS (kind "cuda") competes with kernels tuned for a CUDA device only,
// and oneDNN, a CPU library, with CPU kernels only: neither with OpenCL's.
TEST(GpuCli, TuneForOpenClLeavesCublasAndOneDnnOut) {
  std::filesystem::path db = std::filesystem::temp_directory_path() / "mt_cli_opencl_cublas.db";
  std::filesystem::remove(db);
  auto [status, text] =
      capture(cli() + "tune --target opencl -w 'matmul(M=16,N=16,K=16)' " +
              "--trials 1 --library cublas --library onednn.cpu --verify-top 0 --db '" +
              db.string() + "' 2>&1");
  std::filesystem::remove(db);
  SKIP_WITHOUT_OPENCL(text);
  ASSERT_EQ(status, 0) << text;
  if (text.find("loaded plugin 'cublas'") == std::string::npos)
    GTEST_SKIP() << "cublas is not built here";
  EXPECT_NE(text.find("library target 'cublas' (cuda) runs on another kind of GPU than opencl"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("cublas implementation"), std::string::npos) << text;
  if (text.find("loaded plugin 'onednn_cpu'") != std::string::npos) {
    EXPECT_NE(text.find("library target 'onednn.cpu' (a CPU library) runs on another kind of "
                        "device than opencl (a GPU): it does not compete"),
              std::string::npos)
        << text;
  }
}

TEST(GpuCli, TuneForCudaWithoutADeviceFailsWithTheReason) {
  expect_tune_refused("cuda", "no CUDA device (");
}

TEST(GpuCli, TuneForRocmWithoutADeviceFailsWithTheReason) {
  expect_tune_refused("rocm", "no ROCm device (");
}

} // namespace
