// nvrtc_test.cpp: the CUDA vendor layer (plugins/cuda/src). NVRTC needs no GPU, so the compile
// tests run wherever libnvrtc is installed (skipped elsewhere); the driver tests accept either
// outcome of a machine -- a device, on which a kernel must compute what the CPU computes, or
// a clean "no CUDA device (...)" -- but never both or neither.
#include "../gpu/tiled_matmul_source.h"
#include "../scoped_env.h"
#include "cuda_driver.h"
#include "nvrtc_compiler.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using mt::cuda::Nvrtc;
using mt::cuda::NvrtcResult;

using mt::gpu_test::kTiledMatmul;

constexpr const char* kHalfKernel = R"(
#include <cuda_fp16.h>
extern "C" __global__ void axpy_half(const __half* x, __half* y, float alpha, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hfma(__float2half(alpha), x[i], y[i]);
}
)";

constexpr const char* kBf16Kernel = R"(
#include <cuda_bf16.h>
extern "C" __global__ void scale_bf16(__nv_bfloat16* x, float alpha, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2bfloat16(alpha * __bfloat162float(x[i]));
}
)";

bool is_elf(const std::vector<char>& binary) {
  return binary.size() >= 4 && binary[0] == 0x7f && binary[1] == 'E' && binary[2] == 'L' &&
         binary[3] == 'F';
}

class NvrtcTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    nvrtc_ = Nvrtc::get(&why);
    if (!nvrtc_) GTEST_SKIP() << why;
  }
  Nvrtc* nvrtc_ = nullptr;
};

TEST_F(NvrtcTest, ReportsVersionAndArchs) {
  const std::string version = nvrtc_->version();
  EXPECT_NE(version.find('.'), std::string::npos) << version;
  const std::vector<std::string> archs = nvrtc_->supported_archs();
  ASSERT_FALSE(archs.empty());
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_80"), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_90"), archs.end());
  std::string list;
  for (const std::string& a : archs)
    list += a + " ";
  std::cout << "NVRTC " << version << " from " << nvrtc_->library() << ", include dir '"
            << nvrtc_->include_dir() << "', archs: " << list << "\n";
}

TEST_F(NvrtcTest, TiledMatmulCompilesWithoutWarnings) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    NvrtcResult r = nvrtc_->compile(kTiledMatmul, "matmul.cu", arch, {});
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_TRUE(is_elf(r.binary)) << "CUBIN of " << r.binary.size() << " bytes";
    EXPECT_TRUE(Nvrtc::log_is_clean(r.log)) << r.log;
    EXPECT_NE(r.ptx_or_empty.find(".entry matmul"), std::string::npos);
  }
}

TEST_F(NvrtcTest, HalfAndBf16KernelsCompile) {
  if (nvrtc_->include_dir().empty()) GTEST_SKIP() << "no CUDA toolkit headers for cuda_fp16.h";
  for (const char* source : {kHalfKernel, kBf16Kernel}) {
    NvrtcResult r = nvrtc_->compile(source, "half.cu", "sm_80", {});
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_TRUE(is_elf(r.binary));
    EXPECT_TRUE(Nvrtc::log_is_clean(r.log)) << r.log;
  }
}

TEST_F(NvrtcTest, SyntaxErrorFailsWithTheErrorInTheLog) {
  NvrtcResult r = nvrtc_->compile("extern \"C\" __global__ void k(float* x) { x[0] = 1.f }",
                                  "syntax_error.cu", "sm_80", {});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.binary.empty());
  EXPECT_NE(r.log.find("syntax_error.cu(1): error"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << r.log;
}

TEST_F(NvrtcTest, UndeclaredNameIsNamedInTheLog) {
  NvrtcResult r = nvrtc_->compile("extern \"C\" __global__ void k(float* x) { x[0] = nope; }",
                                  "undeclared.cu", "sm_80", {});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("\"nope\""), std::string::npos) << r.log;
}

TEST_F(NvrtcTest, UnknownArchFailsCleanly) {
  NvrtcResult r = nvrtc_->compile(kTiledMatmul, "matmul.cu", "sm_1", {});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.binary.empty());
  EXPECT_NE(r.log.find("gpu-architecture"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("NVRTC_ERROR_INVALID_OPTION"), std::string::npos) << r.log;
}

TEST_F(NvrtcTest, BadOptionFailsCleanly) {
  NvrtcResult r = nvrtc_->compile(kTiledMatmul, "matmul.cu", "sm_80", {"--no-such-option"});
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.log.empty());
}

TEST_F(NvrtcTest, WarningsAreKeptInTheLogOnSuccess) {
  NvrtcResult r =
      nvrtc_->compile("extern \"C\" __global__ void k(float* x) { int unused; x[0] = 1.f; }",
                      "warn.cu", "sm_80", {});
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_NE(r.log.find("warning"), std::string::npos) << r.log;
  EXPECT_FALSE(Nvrtc::log_is_clean(r.log));
}

TEST_F(NvrtcTest, VirtualArchIsNotACubin) {
  NvrtcResult r = nvrtc_->compile(kTiledMatmul, "matmul.cu", "compute_80", {});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.binary.empty());
  EXPECT_FALSE(r.ptx_or_empty.empty());
  EXPECT_NE(r.log.find("no CUBIN"), std::string::npos) << r.log;
}

TEST_F(NvrtcTest, CallerStdOverridesTheDefault) {
  NvrtcResult r = nvrtc_->compile(
      "extern \"C\" __global__ void k(float* x) { if constexpr (__cplusplus >= 202002L) x[0] = "
      "1.f; }",
      "std.cu", "sm_80", {"--std=c++20"});
  EXPECT_TRUE(r.ok) << r.log;
}

TEST_F(NvrtcTest, ConcurrentCompilesAllSucceed) {
  std::vector<NvrtcResult> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      results[i] = nvrtc_->compile(kTiledMatmul, "matmul.cu", i % 2 ? "sm_90" : "sm_80", {});
    });
  for (std::thread& t : threads)
    t.join();
  for (const NvrtcResult& r : results) {
    EXPECT_TRUE(r.ok) << r.log;
    EXPECT_TRUE(is_elf(r.binary));
  }
}

TEST(NvrtcLog, CleanMeansEmptyOrWhitespace) {
  EXPECT_TRUE(Nvrtc::log_is_clean(""));
  EXPECT_TRUE(Nvrtc::log_is_clean(" \n\t\n"));
  EXPECT_FALSE(Nvrtc::log_is_clean("k.cu(1): warning #177-D"));
}

// ------------------------------------------------------------------------------ the driver

TEST(DeviceInfo, ArchAndJsonRoundTrip) {
  mt::cuda::DeviceInfo d;
  d.ordinal = 1;
  d.name = "NVIDIA \"Test\" GPU";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.max_block_dim[2] = 64;
  d.max_grid_dim[0] = 2147483647;
  d.shared_memory_per_block_optin = 232448;
  d.global_memory_bytes = int64_t{150} << 30;
  EXPECT_EQ(d.arch(), "sm_90");
  std::vector<mt::cuda::DeviceInfo> back =
      mt::cuda::devices_from_json(mt::cuda::devices_to_json({d}));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].name, d.name);
  EXPECT_EQ(back[0].ordinal, 1);
  EXPECT_EQ(back[0].sm_count, 132);
  EXPECT_EQ(back[0].max_block_dim[2], 64);
  EXPECT_EQ(back[0].max_grid_dim[0], 2147483647);
  EXPECT_EQ(back[0].shared_memory_per_block_optin, 232448);
  EXPECT_EQ(back[0].global_memory_bytes, d.global_memory_bytes);
  d.cc_major = 10;
  EXPECT_EQ(d.arch(), "sm_100");
  EXPECT_THROW(mt::cuda::devices_from_json("[{\"name\": 1}]"), std::runtime_error);
}

using mt::test::ScopedEnv;

// Exactly one of "devices" and "no CUDA device (...)".
void expect_devices_or_reason(const std::optional<std::string>& json, const std::string& why) {
  if (json) {
    EXPECT_TRUE(why.empty()) << why;
    std::vector<mt::cuda::DeviceInfo> devices = mt::cuda::devices_from_json(*json);
    ASSERT_FALSE(devices.empty()) << *json;
    for (const mt::cuda::DeviceInfo& d : devices) {
      EXPECT_EQ(d.arch().rfind("sm_", 0), 0u);
      EXPECT_GT(d.sm_count, 0);
      EXPECT_EQ(d.warp_size, 32);
      EXPECT_GT(d.l2_bytes, 0);
    }
    std::cout << "devices: " << *json << "\n";
  } else {
    EXPECT_EQ(why.rfind("no CUDA device (", 0), 0u) << why;
    std::cout << "reason: " << why << "\n";
  }
}

// These run before any test that may initialise CUDA in this process (a forked child could
// not use it afterwards, so the query would then run in-process instead).
TEST(QueryDevicesInChild, DevicesOrNoDevice) {
  const bool initialised_before = mt::cuda::CudaDriver::initialised_in_this_process();
  std::string why;
  std::optional<std::string> json = mt::cuda::query_devices_in_child(&why);
  expect_devices_or_reason(json, why);
  EXPECT_EQ(mt::cuda::CudaDriver::initialised_in_this_process(), initialised_before)
      << "the parent must not initialise CUDA";
}

TEST(QueryDevicesInChild, MissingDriverLibrary) {
  if (mt::cuda::CudaDriver::initialised_in_this_process()) GTEST_SKIP() << "CUDA is live here";
  ScopedEnv env("METATUNE_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
  std::string why;
  EXPECT_FALSE(mt::cuda::query_devices_in_child(&why));
  EXPECT_EQ(why.rfind("no CUDA device (/nonexistent/libcuda.so.1 not found: ", 0), 0u) << why;
}

TEST(QueryDevicesInChild, TimeoutKillsAndReapsTheChild) {
  if (mt::cuda::CudaDriver::initialised_in_this_process()) GTEST_SKIP() << "CUDA is live here";
  std::string why;
  EXPECT_FALSE(mt::cuda::query_devices_in_child(&why, std::chrono::milliseconds(0)));
  EXPECT_EQ(why, "no CUDA device (device query: the child did not answer within 0 ms (killed))");
  int status = 0;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1) << "a child was left behind";
  EXPECT_EQ(errno, ECHILD);
}

TEST(QueryDevicesInChild, ToolkitStubDriverHasNoDevice) {
  // The toolkit's link-time stub exports the whole API but every cuInit fails.
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no " << stub;
  if (mt::cuda::CudaDriver::initialised_in_this_process()) GTEST_SKIP() << "CUDA is live here";
  ScopedEnv env("METATUNE_CUDA_DRIVER_LIBRARY", stub);
  std::string why;
  EXPECT_FALSE(mt::cuda::query_devices_in_child(&why));
  EXPECT_EQ(why.rfind("no CUDA device (cuInit: CUDA_ERROR_STUB_LIBRARY", 0), 0u) << why;
}

TEST(CudaDriver, DeviceRunsAKernelOrSaysNoDevice) {
  std::string why;
  mt::cuda::CudaDriver* driver = mt::cuda::CudaDriver::get(&why);
  if (!driver) {
    EXPECT_EQ(why.rfind("no CUDA device (", 0), 0u) << why;
    std::cout << "reason: " << why << "\n";
    return;
  }
  ASSERT_GT(driver->device_count(), 0);
  EXPECT_GT(driver->driver_version(), 0);
  EXPECT_TRUE(mt::cuda::CudaDriver::initialised_in_this_process());

  mt::cuda::Context context(*driver, 0);
  const mt::cuda::DeviceInfo& info = context.device();
  std::cout << "device 0: " << mt::cuda::devices_to_json({info}) << "\n";
  EXPECT_EQ(info.warp_size, 32);
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GE(info.max_threads_per_block, 256);

  std::string nvrtc_why;
  Nvrtc* nvrtc = Nvrtc::get(&nvrtc_why);
  if (!nvrtc) GTEST_SKIP() << "device found, but " << nvrtc_why;
  const std::vector<std::string> archs = nvrtc->supported_archs();
  if (std::find(archs.begin(), archs.end(), info.arch()) == archs.end())
    GTEST_SKIP() << "NVRTC " << nvrtc->version() << " cannot target " << info.arch();
  NvrtcResult compiled = nvrtc->compile(kTiledMatmul, "matmul.cu", info.arch(), {});
  ASSERT_TRUE(compiled.ok) << compiled.log;

  mt::cuda::Module module(context, compiled.binary);
  mt::cuda::Function matmul = module.function("matmul");
  ASSERT_TRUE(matmul);

  int n = 37; // not a multiple of the tile: exercises the bounds checks
  std::vector<float> a(n * n), b(n * n), c(n * n, -1.f), expected(n * n, 0.f);
  for (int i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>((i * 7) % 13) - 6.f;
    b[i] = static_cast<float>((i * 5) % 11) * 0.25f;
  }
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        expected[i * n + j] += a[i * n + k] * b[k * n + j];

  const std::size_t bytes = a.size() * sizeof(float);
  mt::cuda::DeviceBuffer da(context, bytes), db(context, bytes), dc(context, bytes);
  da.upload(a);
  db.upload(b);
  dc.fill(0xff);
  const unsigned blocks = static_cast<unsigned>((n + 15) / 16);
  std::vector<void*> params = {da.kernel_param(), db.kernel_param(), dc.kernel_param(), &n};

  context.flush_l2();
  mt::cuda::Event start(context), stop(context);
  start.record();
  context.launch(matmul, {blocks, blocks, 1}, {16, 16, 1}, params);
  stop.record();
  EXPECT_GE(mt::cuda::Event::elapsed_ms(start, stop), 0.f);
  context.synchronize();
  dc.download(c);
  for (int i = 0; i < n * n; ++i)
    ASSERT_NEAR(c[i], expected[i], 1e-3f * (1.f + std::fabs(expected[i]))) << "element " << i;

  // A launch the driver rejects up front (more threads per block than any GPU has) names the
  // call and the error, and leaves the context usable.
  try {
    context.launch(matmul, {1, 1, 1}, {2048, 1, 1}, params);
    ADD_FAILURE() << "a 2048-thread block launched";
  } catch (const mt::cuda::CudaError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cuLaunchKernel: CUDA_ERROR_INVALID_VALUE", 0), 0u)
        << e.what();
  }
  try {
    module.function("no_such_kernel");
    ADD_FAILURE() << "found a kernel that does not exist";
  } catch (const mt::cuda::CudaError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cuModuleGetFunction: CUDA_ERROR_NOT_FOUND", 0), 0u)
        << e.what();
  }
  context.synchronize();
}

TEST(CudaDriver, QueryAfterGetStillAnswers) {
  // Once this process may have CUDA live, the query must not fork a child that would try it.
  std::string get_why;
  mt::cuda::CudaDriver::get(&get_why);
  std::string why;
  std::optional<std::string> json = mt::cuda::query_devices_in_child(&why);
  expect_devices_or_reason(json, why);
}

} // namespace
