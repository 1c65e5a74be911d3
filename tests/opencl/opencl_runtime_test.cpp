// Tests of the OpenCL vendor layer (plugins/opencl/src) on a real device: kernels that need local
// memory and barriers to be right, scalar arguments of each KernelArg type, build errors with
// the compiler's log, profiling, error names, and the device query in a forked child. Without an
// OpenCL device each test skips with the reason; METATUNE_REQUIRE_OPENCL=1 makes that a failure.
#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "opencl_device_query.h"
#include "opencl_runtime.h"

namespace {

using namespace mt::opencl;

bool require_opencl() {
  const char* v = std::getenv("METATUNE_REQUIRE_OPENCL");
  return v && std::strcmp(v, "1") == 0;
}

#define MT_SKIP_OR_FAIL(why)                                                                       \
  do {                                                                                             \
    if (require_opencl()) FAIL() << "METATUNE_REQUIRE_OPENCL=1 but: " << (why);                    \
    GTEST_SKIP() << (why);                                                                         \
  } while (0)

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Whether this process has libOpenCL mapped (RTLD_NOLOAD loads nothing).
bool opencl_loaded_here() {
  const char* env = std::getenv("METATUNE_OPENCL_LIBRARY");
  for (const char* name : {env, "libOpenCL.so.1", "libOpenCL.so"}) {
    if (!name || !*name) continue;
    if (void* h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD)) {
      dlclose(h); // drops only the reference RTLD_NOLOAD added
      return true;
    }
  }
  return false;
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v)
    x = dist(rng);
  return v;
}

// First in the file, so that a plain run of the binary (all tests in one process) reaches it
// before any other test has opened OpenCL here.
TEST(OpenClDeviceQuery, DescribesTheDeviceFromAChildProcess) {
  bool loaded_before = opencl_loaded_here();
  std::string why;
  auto t0 = std::chrono::steady_clock::now();
  std::optional<std::string> json = query_device_in_child("", &why);
  double query_ms = ms_since(t0);
  if (!json) MT_SKIP_OR_FAIL(why);
  std::printf("[   info   ] query_device_in_child: %.1f ms: %s\n", query_ms, json->c_str());
  if (!loaded_before) {
    EXPECT_FALSE(opencl_loaded_here()) << "the query initialised OpenCL in the parent";
  }

  DeviceInfo info = device_info_from_json(*json);
  EXPECT_GT(info.max_work_group_size, 0);
  EXPECT_GT(info.local_mem_size, 0);
  EXPECT_GT(info.compute_units, 0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_TRUE(info.type == "gpu" || info.type == "cpu" || info.type == "accelerator" ||
              info.type == "custom")
      << info.type;
  EXPECT_EQ(device_info_to_json(info), *json); // the JSON form round-trips

  // The child saw the device this process would pick.
  std::unique_ptr<Device> device = Device::open(&why);
  ASSERT_TRUE(device) << why;
  EXPECT_EQ(device->info().name, info.name);
  EXPECT_EQ(device->info().platform, info.platform);
  EXPECT_EQ(device->info().max_work_group_size, info.max_work_group_size);
}

TEST(OpenClDeviceQuery, UnknownSelectorListsTheDevices) {
  std::string why;
  std::optional<std::string> json = query_device_in_child("no-such-device-anywhere", &why);
  ASSERT_FALSE(json);
  if (why.find("OpenCL not available") != std::string::npos ||
      why.find("no OpenCL platform") != std::string::npos ||
      why.find("no OpenCL device (") != std::string::npos)
    MT_SKIP_OR_FAIL(why);
  EXPECT_NE(why.find("no OpenCL device matches 'no-such-device-anywhere'"), std::string::npos)
      << why;
}

TEST(OpenClDeviceQuery, RejectsMalformedJson) {
  EXPECT_THROW(device_info_from_json("{\"name\": \"x\"}"), std::runtime_error);
  EXPECT_THROW(device_info_from_json("not json"), std::runtime_error);
}

TEST(OpenClErrors, NamesCodes) {
  EXPECT_STREQ(error_name(CL_INVALID_WORK_GROUP_SIZE), "CL_INVALID_WORK_GROUP_SIZE");
  EXPECT_STREQ(error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  EXPECT_STREQ(error_name(-12345), "CL_UNKNOWN_ERROR");
  try {
    check(-54, "clEnqueueNDRangeKernel");
    FAIL() << "check did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (-54)");
  }
}

class OpenClTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    auto t0 = std::chrono::steady_clock::now();
    device_ = Device::open(&why);
    open_ms_ = ms_since(t0);
    if (!device_) MT_SKIP_OR_FAIL(why);
  }

  // Builds and reports how long the driver's compiler took.
  Program build(const std::string& source, const std::string& options = "") {
    auto t0 = std::chrono::steady_clock::now();
    Program program(*device_, source, options);
    std::printf("[   info   ] Device::open %.1f ms, build %.1f ms (%s)\n", open_ms_, ms_since(t0),
                device_->info().name.c_str());
    return program;
  }

  std::unique_ptr<Device> device_;
  double open_ms_ = 0;
};

const char* kReduceSource = R"CL(
__kernel void reduce_sum(__global const float* x, __global float* partial) {
  __local float s[64];
  int l = get_local_id(0);
  s[l] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = 32; k > 0; k >>= 1) {
    if (l < k) s[l] += s[l + k];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) partial[get_group_id(0)] = s[0];
}
)CL";

TEST_F(OpenClTest, WorkGroupReductionMatchesDoubleSums) {
  constexpr size_t n = 4096, group = 64, groups = n / group;
  std::vector<float> x = random_floats(n, 1);
  Program program = build(kReduceSource);
  Kernel kernel(program, "reduce_sum");
  EXPECT_EQ(kernel.num_args(), 2);
  EXPECT_GE(kernel.local_mem_size(), static_cast<int64_t>(group * sizeof(float)));
  ASSERT_GE(kernel.max_work_group_size(), static_cast<int64_t>(group));

  Buffer in(*device_, n * sizeof(float)), out(*device_, groups * sizeof(float));
  in.write(x.data(), n * sizeof(float));
  size_t global[3] = {n, 1, 1}, local[3] = {group, 1, 1};
  device_->launch(kernel, {&in, &out}, global, local, 1);
  std::vector<float> partial(groups);
  out.read(partial.data(), groups * sizeof(float));
  for (size_t g = 0; g < groups; ++g) {
    double ref = 0;
    for (size_t i = 0; i < group; ++i)
      ref += x[g * group + i];
    EXPECT_NEAR(partial[g], ref, 1e-4) << "group " << g;
  }
}

const char* kMatmulSource = R"CL(
__kernel void matmul(__global const float* A, __global const float* B, __global float* C, int n) {
  __local float As[TILE][TILE];
  __local float Bs[TILE][TILE];
  int row = get_global_id(1), col = get_global_id(0);
  int lr = get_local_id(1), lc = get_local_id(0);
  float acc = 0.0f;
  for (int t = 0; t < n; t += TILE) {
    As[lr][lc] = A[row * n + t + lc];
    Bs[lr][lc] = B[(t + lr) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k)
      acc += As[lr][k] * Bs[k][lc];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  C[row * n + col] = acc;
}
)CL";

struct Matmul {
  static constexpr int n = 64, tile = 16;
  std::vector<float> a = random_floats(n * n, 2), b = random_floats(n * n, 3);
  std::vector<float> c = std::vector<float>(n * n);
  size_t bytes = n * n * sizeof(float);
  size_t global[3] = {n, n, 1}, local[3] = {tile, tile, 1};
};

TEST_F(OpenClTest, TiledMatmulMatchesReference) {
  Matmul m;
  Program program = build(kMatmulSource, "-DTILE=" + std::to_string(m.tile));
  Kernel kernel(program, "matmul");
  Buffer a(*device_, m.bytes), b(*device_, m.bytes), c(*device_, m.bytes);
  a.write(m.a.data(), m.bytes);
  b.write(m.b.data(), m.bytes);
  device_->launch(kernel, {&a, &b, &c, int32_t{m.n}}, m.global, m.local, 2);
  c.read(m.c.data(), m.bytes);
  double max_err = 0;
  for (int i = 0; i < m.n; ++i)
    for (int j = 0; j < m.n; ++j) {
      double ref = 0;
      for (int k = 0; k < m.n; ++k)
        ref += double(m.a[i * m.n + k]) * double(m.b[k * m.n + j]);
      max_err = std::max(max_err, std::abs(ref - m.c[i * m.n + j]));
    }
  EXPECT_LT(max_err, 1e-4);
}

TEST_F(OpenClTest, ScalarArgumentsArrive) {
  Program program = build(R"CL(
__kernel void store(__global long* out, long v, int i, float f) {
  out[0] = v;
  out[1] = i;
  out[2] = (long)(f * 4.0f);
}
)CL");
  Kernel kernel(program, "store");
  Buffer out(*device_, 3 * sizeof(int64_t));
  const int64_t big = -(int64_t{1} << 40) - 12345; // needs all 64 bits and the sign
  size_t one[3] = {1, 1, 1};
  device_->launch(kernel, {&out, big, int32_t{-7}, 2.5f}, one, nullptr, 1);
  int64_t got[3] = {0, 0, 0};
  out.read(got, sizeof got);
  EXPECT_EQ(got[0], big);
  EXPECT_EQ(got[1], -7);
  EXPECT_EQ(got[2], 10);

  if (!device_->info().fp64) return;
  Program dp = build(R"CL(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void store_double(__global double* out, double v) { out[0] = v * 2.0; }
)CL");
  Kernel store_double(dp, "store_double");
  Buffer d(*device_, sizeof(double));
  device_->launch(store_double, {&d, 0.1}, one, nullptr, 1);
  double back = 0;
  d.read(&back, sizeof back);
  EXPECT_EQ(back, 0.2);
}

TEST_F(OpenClTest, SyntaxErrorThrowsBuildErrorWithTheLog) {
  try {
    Program program(*device_, "__kernel void broken(__global float* x) { x[0] = 1.0f + ; }");
    FAIL() << "a kernel with a syntax error built";
  } catch (const BuildError& e) {
    std::string what = e.what();
    std::printf("[   info   ] %s\n", what.c_str());
    EXPECT_NE(what.find("clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)"), std::string::npos)
        << what;
    ASSERT_FALSE(e.log().empty());
    EXPECT_NE(what.find(e.log()), std::string::npos);
    EXPECT_NE(what.find("error"), std::string::npos) << what;
  }
}

TEST_F(OpenClTest, WarningsStayInTheLog) {
  Program program = build("#warning metatune-warning-check\n__kernel void k(__global int* x) { "
                          "x[0] = 1; }");
  EXPECT_NE(program.log().find("metatune-warning-check"), std::string::npos) << program.log();
}

TEST_F(OpenClTest, EventSecondsIsPositive) {
  Matmul m;
  Program program = build(kMatmulSource, "-DTILE=" + std::to_string(m.tile));
  Kernel kernel(program, "matmul");
  Buffer a(*device_, m.bytes), b(*device_, m.bytes), c(*device_, m.bytes);
  a.write(m.a.data(), m.bytes);
  b.write(m.b.data(), m.bytes);
  cl_event event = nullptr;
  device_->launch(kernel, {&a, &b, &c, int32_t{m.n}}, m.global, m.local, 2, &event);
  ASSERT_NE(event, nullptr);
  double seconds = device_->event_seconds(event);
  std::printf("[   info   ] 64x64 matmul: %.1f us\n", seconds * 1e6);
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 10.0);
  device_->finish();
}

TEST_F(OpenClTest, ErrorsNameTheCallAndTheCode) {
  Program program = build(kReduceSource);
  EXPECT_THROW(
      {
        try {
          Kernel missing(program, "no_such_kernel");
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("CL_INVALID_KERNEL_NAME (-46)"), std::string::npos)
              << e.what();
          EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);

  Kernel kernel(program, "reduce_sum");
  Buffer in(*device_, 64 * sizeof(float)), out(*device_, sizeof(float));
  // A work group twice the largest this kernel allows, each dimension within the device's
  // per-dimension limits.
  size_t wg = static_cast<size_t>(kernel.max_work_group_size());
  size_t local[3] = {wg, 2, 1}, global[3] = {wg, 2, 1};
  ASSERT_LE(static_cast<int64_t>(wg), device_->info().max_work_item_sizes[0]);
  try {
    device_->launch(kernel, {&in, &out}, global, local, 2);
    FAIL() << "an oversized work group launched";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (-54)", 0),
        0u)
        << e.what();
  }
  EXPECT_THROW(device_->launch(kernel, {&in}, global, nullptr, 1), std::invalid_argument);
}

TEST_F(OpenClTest, SelectorsPickDevices) {
  std::string why;
  auto by_index = Device::open(&why, "0:0");
  EXPECT_TRUE(by_index) << why;
  // A case-insensitive piece of the chosen device's name selects a device of that name.
  std::string piece = device_->info().name.substr(0, 6);
  for (char& ch : piece)
    ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto by_name = Device::open(&why, piece);
  ASSERT_TRUE(by_name) << why;
  EXPECT_EQ(by_name->info().name.substr(0, 6), device_->info().name.substr(0, 6));
  EXPECT_FALSE(Device::open(&why, "99:99"));
  EXPECT_NE(why.find("no OpenCL device matches '99:99'"), std::string::npos) << why;
}

} // namespace
