// hip_runtime_test.cpp: the ROCm vendor layer (plugins/rocm/src). clang needs no GPU, so the
// compile tests run wherever clang and the ROCm device libraries are installed (skipped
// elsewhere); the runtime tests accept either outcome of a machine -- a device, on which a
// kernel must compute what the CPU computes, or a clean "no ROCm device (...)" -- but never
// both or neither.
#include "../gpu/tiled_matmul_source.h"
#include "../scoped_env.h"
#include "hip_compiler.h"
#include "hip_runtime.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using mt::rocm::HipCompiler;
using mt::rocm::HipCompileResult;

using mt::gpu_test::kTiledMatmul;

bool is_elf(const std::vector<char>& binary) {
  return binary.size() >= 4 && binary[0] == 0x7f && binary[1] == 'E' && binary[2] == 'L' &&
         binary[3] == 'F';
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

size_t open_fd_count() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

using mt::test::ScopedEnv;

class HipCompilerTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    clang_ = HipCompiler::get(&why);
    if (!clang_) GTEST_SKIP() << why;
  }
  // The toolchain these tests were measured with (Debian 12's clang 15 and ROCm 5.2 device
  // libraries), whose refusals are known; a newer one may build gfx942 and gfx1100.
  bool debian_clang_15() const {
    return clang_->clang() == "/usr/lib/llvm-15/bin/clang++" ||
           clang_->clang() == "/usr/bin/clang++-15";
  }
  const HipCompiler* clang_ = nullptr;
};

TEST_F(HipCompilerTest, ReportsItsToolchain) {
  EXPECT_FALSE(clang_->clang().empty());
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(clang_->device_libs()) / "ocml.bc"));
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(clang_->rocm_path()) /
                                      "include/hip/hip_runtime.h"));
  std::cout << "clang " << clang_->clang() << ", device libraries " << clang_->device_libs()
            << ", rocm path " << clang_->rocm_path() << "\n";
}

TEST_F(HipCompilerTest, TiledMatmulCompilesForCdnaAndRdnaWithoutWarnings) {
  for (const char* arch : {"gfx90a", "gfx940", "gfx1030"}) {
    SCOPED_TRACE(arch);
    const auto start = std::chrono::steady_clock::now();
    HipCompileResult r = clang_->compile(kTiledMatmul, "matmul.hip", arch);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_TRUE(is_elf(r.code_object)) << "code object of " << r.code_object.size() << " bytes";
    EXPECT_TRUE(HipCompiler::log_is_clean(r.log)) << r.log;
    std::cout << arch << ": " << r.code_object.size() << " bytes in " << s << " s\n";
  }
}

TEST_F(HipCompilerTest, ASourceThatIncludesTheRuntimeHeaderItselfCompiles) {
  HipCompileResult r = clang_->compile(std::string("#include <hip/hip_runtime.h>\n") + kTiledMatmul,
                                       "matmul.hip", "gfx90a");
  EXPECT_TRUE(r.ok) << r.log;
  EXPECT_TRUE(HipCompiler::log_is_clean(r.log)) << r.log;
}

TEST_F(HipCompilerTest, TargetsTheToolchainCannotBuildFailWithItsReason) {
  struct Case {
    const char* arch;
    const char* reason; // Debian clang 15's
  };
  for (const Case& c : {Case{"gfx1100", "cannot find ROCm device library for gfx1100"},
                        Case{"gfx942", "invalid target ID 'gfx942'"}}) {
    SCOPED_TRACE(c.arch);
    HipCompileResult r = clang_->compile(kTiledMatmul, "matmul.hip", c.arch);
    if (!debian_clang_15() && r.ok) {
      std::cout << clang_->clang() << " builds " << c.arch << "\n";
      EXPECT_TRUE(is_elf(r.code_object));
      continue;
    }
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.code_object.empty());
    EXPECT_TRUE(contains(r.log, c.arch)) << r.log;
    if (debian_clang_15()) {
      EXPECT_TRUE(contains(r.log, c.reason)) << r.log;
    }
  }
  // A target id no toolchain knows.
  HipCompileResult bogus = clang_->compile(kTiledMatmul, "matmul.hip", "gfx9999");
  EXPECT_FALSE(bogus.ok);
  EXPECT_TRUE(contains(bogus.log, "gfx9999")) << bogus.log;
  // The process is unharmed (no hiprtc in it): the next compile works.
  HipCompileResult again = clang_->compile(kTiledMatmul, "matmul.hip", "gfx90a");
  EXPECT_TRUE(again.ok) << again.log;
}

TEST_F(HipCompilerTest, SyntaxErrorFailsWithTheErrorInTheLog) {
  HipCompileResult r = clang_->compile("extern \"C\" __global__ void k(float* x) { x[0] = 1.f }",
                                       "syntax_error.hip", "gfx90a");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.code_object.empty());
  EXPECT_TRUE(contains(r.log, "syntax_error.hip:1:")) << r.log;
  EXPECT_TRUE(contains(r.log, "error: expected ';'")) << r.log;
  EXPECT_TRUE(contains(r.log, "clang exited with status 1")) << r.log;
}

TEST_F(HipCompilerTest, WarningsAreKeptInTheLogOnSuccess) {
  HipCompileResult r = clang_->compile(
      "extern \"C\" __global__ void k(float* x) { 1 + 2; x[0] = 1.f; }", "warn.hip", "gfx90a");
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_TRUE(contains(r.log, "warning")) << r.log;
  EXPECT_FALSE(HipCompiler::log_is_clean(r.log));
}

TEST_F(HipCompilerTest, ExtraOptionsReachClang) {
  const char* src = "extern \"C\" __global__ void k(float* x) { x[0] = VALUE; }";
  EXPECT_TRUE(clang_->compile(src, "k.hip", "gfx90a", {"-DVALUE=3.f"}).ok);
  HipCompileResult without = clang_->compile(src, "k.hip", "gfx90a");
  EXPECT_FALSE(without.ok);
  EXPECT_TRUE(contains(without.log, "VALUE")) << without.log;
}

TEST_F(HipCompilerTest, AOneMillisecondTimeoutKillsTheCompiler) {
  const auto start = std::chrono::steady_clock::now();
  HipCompileResult r =
      clang_->compile(kTiledMatmul, "matmul.hip", "gfx90a", {}, std::chrono::milliseconds(1));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.code_object.empty());
  EXPECT_TRUE(contains(r.log, "clang did not finish within 0.001 s (killed)")) << r.log;
  EXPECT_LT(s, 5.0);
}

TEST_F(HipCompilerTest, LeavesNoTemporaryFilesAndNoFileDescriptors) {
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("metatune-hip-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  {
    ScopedEnv env("TMPDIR", tmp.c_str());
    const size_t fds = open_fd_count();
    EXPECT_TRUE(clang_->compile(kTiledMatmul, "matmul.hip", "gfx90a").ok);
    EXPECT_FALSE(clang_->compile("nonsense", "bad.hip", "gfx90a").ok);
    EXPECT_FALSE(
        clang_->compile(kTiledMatmul, "matmul.hip", "gfx90a", {}, std::chrono::milliseconds(1)).ok);
    EXPECT_EQ(open_fd_count(), fds);
    EXPECT_TRUE(std::filesystem::is_empty(tmp));
  }
  std::filesystem::remove_all(tmp);
}

TEST_F(HipCompilerTest, ANameWithSlashesStaysInTheTemporaryDirectory) {
  HipCompileResult r = clang_->compile(kTiledMatmul, "../../etc/x.hip", "gfx90a");
  EXPECT_TRUE(r.ok) << r.log;
}

TEST_F(HipCompilerTest, ConcurrentCompilesAllSucceed) {
  std::vector<HipCompileResult> results(6);
  std::vector<std::thread> threads;
  const char* archs[] = {"gfx90a", "gfx940", "gfx1030"};
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back(
        [&, i] { results[i] = clang_->compile(kTiledMatmul, "matmul.hip", archs[i % 3]); });
  for (std::thread& t : threads)
    t.join();
  for (const HipCompileResult& r : results) {
    EXPECT_TRUE(r.ok) << r.log;
    EXPECT_TRUE(is_elf(r.code_object));
  }
}

TEST(HipCompilerLog, CleanMeansEmptyOrWhitespace) {
  EXPECT_TRUE(HipCompiler::log_is_clean(""));
  EXPECT_TRUE(HipCompiler::log_is_clean(" \n\t\n"));
  EXPECT_FALSE(HipCompiler::log_is_clean("k.hip:1:1: warning: expression result unused"));
}

// ----------------------------------------------------------------------------- the runtime

TEST(GfxTarget, FromKfdGfxTargetVersion) {
  using mt::rocm::arch_from_gfx_target_version;
  EXPECT_EQ(arch_from_gfx_target_version(90010), "gfx90a");
  EXPECT_EQ(arch_from_gfx_target_version(90400), "gfx940");
  EXPECT_EQ(arch_from_gfx_target_version(90402), "gfx942");
  EXPECT_EQ(arch_from_gfx_target_version(90008), "gfx908");
  EXPECT_EQ(arch_from_gfx_target_version(100300), "gfx1030");
  EXPECT_EQ(arch_from_gfx_target_version(110000), "gfx1100");
  EXPECT_EQ(arch_from_gfx_target_version(0), ""); // a CPU node
}

TEST(GfxTarget, GpuNodesOfAKfdTopologyInNodeOrder) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("metatune-kfd-" + std::to_string(::getpid()));
  auto node = [&](int id, int simd_count, int version) {
    fs::create_directories(root / std::to_string(id));
    std::ofstream(root / std::to_string(id) / "properties")
        << "cpu_cores_count 0\nsimd_count " << simd_count << "\nmem_banks_count 1\n"
        << "gfx_target_version " << version << "\nvendor_id 4098\n";
  };
  node(0, 0, 0);         // the CPU
  node(10, 440, 100300); // numerically after 2
  node(2, 1760, 90010);
  node(1, 304, 90400);
  fs::create_directories(root / "not_a_node");
  EXPECT_EQ(mt::rocm::kfd_gpu_archs(root.string()),
            (std::vector<std::string>{"gfx940", "gfx90a", "gfx1030"}));
  EXPECT_TRUE(mt::rocm::kfd_gpu_archs((root / "missing").string()).empty());
  fs::remove_all(root);
}

TEST(DeviceInfo, JsonRoundTrip) {
  mt::rocm::DeviceInfo d;
  d.ordinal = 1;
  d.name = "AMD Instinct \"Test\"";
  d.arch = "gfx90a";
  d.compute_units = 110;
  d.max_threads_per_block = 1024;
  d.max_block_dim[0] = 1024;
  d.max_block_dim[1] = 1024;
  d.max_block_dim[2] = 1024;
  d.wavefront_size = 64;
  d.lds_bytes_per_block = 65536;
  d.registers_per_block = 65536;
  d.l2_bytes = 8 << 20;
  d.global_memory_bytes = int64_t{64} << 30;
  d.clock_khz = 1700000;
  std::vector<mt::rocm::DeviceInfo> back =
      mt::rocm::devices_from_json(mt::rocm::devices_to_json({d}));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].name, d.name);
  EXPECT_EQ(back[0].arch, "gfx90a");
  EXPECT_EQ(back[0].compute_units, 110);
  EXPECT_EQ(back[0].max_block_dim[2], 1024);
  EXPECT_EQ(back[0].wavefront_size, 64);
  EXPECT_EQ(back[0].global_memory_bytes, d.global_memory_bytes);
  EXPECT_EQ(back[0].clock_khz, 1700000);
  EXPECT_THROW(mt::rocm::devices_from_json("[{\"name\": 1}]"), std::runtime_error);
}

TEST(HipRuntime, ANamedLibraryThatIsMissingIsNamedInTheReason) {
  ScopedEnv env("METATUNE_HIP_LIBRARY", "/nonexistent/libamdhip64.so");
  std::string why;
  std::unique_ptr<mt::rocm::HipRuntime> runtime = mt::rocm::HipRuntime::load(&why);
  EXPECT_EQ(runtime, nullptr);
  EXPECT_EQ(why.rfind("no ROCm device (", 0), 0u) << why;
  EXPECT_TRUE(contains(why, "/nonexistent/libamdhip64.so not found")) << why;
}

// Runs a kernel on the device and checks it against the CPU; needs the compiler too.
void run_matmul_on(mt::rocm::HipRuntime& runtime) {
  std::string why;
  const HipCompiler* clang = HipCompiler::get(&why);
  if (!clang) GTEST_SKIP() << "a device but no compiler: " << why;
  mt::rocm::Device device(runtime, 0);
  const mt::rocm::DeviceInfo& info = device.info();
  std::cout << "device 0: " << info.name << " (" << info.arch << "), " << info.compute_units
            << " CUs, wavefront " << info.wavefront_size << "\n";
  ASSERT_FALSE(info.arch.empty());
  EXPECT_GT(info.compute_units, 0);
  EXPECT_TRUE(info.wavefront_size == 32 || info.wavefront_size == 64);
  EXPECT_GE(info.lds_bytes_per_block, 16 * 16 * 4 * 2);
  HipCompileResult r = clang->compile(kTiledMatmul, "matmul.hip", info.arch);
  ASSERT_TRUE(r.ok) << r.log;

  const int n = 37; // not a multiple of the tile
  std::vector<float> a(n * n), b(n * n), c(n * n, -1.f), want(n * n, 0.f);
  for (int i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>(i % 7) - 3.f;
    b[i] = static_cast<float>(i % 5) * 0.5f;
  }
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        want[i * n + j] += a[i * n + k] * b[k * n + j];
  const size_t bytes = sizeof(float) * n * n;
  mt::rocm::Module module(device, r.code_object);
  void* fn = module.function("matmul");
  mt::rocm::DeviceBuffer da(device, bytes), db(device, bytes), dc(device, bytes);
  da.upload(a.data(), bytes);
  db.upload(b.data(), bytes);
  int nn = n;
  mt::rocm::Event start(device), end(device);
  device.flush_l2();
  start.record();
  device.launch(fn, {(n + 15) / 16, (n + 15) / 16, 1}, {16, 16, 1},
                {da.kernel_param(), db.kernel_param(), dc.kernel_param(), &nn});
  end.record();
  device.synchronize();
  EXPECT_GE(mt::rocm::Event::elapsed_ms(start, end), 0.f);
  dc.download(c.data(), bytes);
  for (int i = 0; i < n * n; ++i)
    ASSERT_NEAR(c[i], want[i], 1e-3f) << "at " << i;
  EXPECT_THROW(module.function("no_such_kernel"), mt::rocm::HipError);
}

TEST(HipRuntime, EitherADeviceThatRunsAKernelOrNoROCmDevice) {
  std::string why;
  mt::rocm::HipRuntime* runtime = mt::rocm::HipRuntime::get(&why);
  if (!runtime) {
    EXPECT_EQ(why.rfind("no ROCm device (", 0), 0u) << why;
    std::cout << why << "\n";
    return;
  }
  EXPECT_TRUE(why.empty()) << why;
  ASSERT_GT(runtime->device_count(), 0);
  run_matmul_on(*runtime);
}

TEST(HipRuntime, TheForkedQueryAgreesWithTheRuntime) {
  std::string why;
  std::optional<std::string> json = mt::rocm::query_devices_in_child(&why);
  if (json) {
    std::vector<mt::rocm::DeviceInfo> devices = mt::rocm::devices_from_json(*json);
    ASSERT_FALSE(devices.empty());
    for (const auto& d : devices)
      std::cout << "device " << d.ordinal << ": " << d.name << " (" << d.arch << ")\n";
  } else {
    EXPECT_EQ(why.rfind("no ROCm device (", 0), 0u) << why;
    std::cout << why << "\n";
  }
  // Asked after the child: this process had not touched HIP before.
  std::string in_process_why;
  mt::rocm::HipRuntime* runtime = mt::rocm::HipRuntime::get(&in_process_why);
  EXPECT_EQ(runtime != nullptr, json.has_value()) << why << " / " << in_process_why;
  // Once HIP is initialised here, the query answers from this process (no fork).
  std::string again_why;
  std::optional<std::string> again = mt::rocm::query_devices_in_child(&again_why);
  EXPECT_EQ(again.has_value(), json.has_value());
  if (!again) {
    EXPECT_EQ(again_why.rfind("no ROCm device (", 0), 0u) << again_why;
  }
}

} // namespace
