// Hopper's tensor memory accelerator probed on its own, before the generator's TMA copies
// (tma_copy.h) are trusted: the generator's own helpers (the CUDA dialect's tma_prologue:
// mbarrier init, expect_tx, cp.async.bulk.tensor, the parity wait) and the cuda target's tensor
// map (cuda::encode_tensor_map, as DeviceModule makes it) copy one box of a 2-d f16 tensor into
// shared memory, and the kernel writes shared memory back as it lies. Each element must sit
// where tensor_op.h's Swizzle128 layout says: element (r, c) of the box at
// r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8. Prints "[ tma ] ..." lines. Without a device the
// kernel is only compiled for sm_90a.
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_driver.h"
#include "metatune/gpu_codegen/dialect.hpp"
#include "nvrtc_compiler.h"
#include "wgmma_probe_support.h"

namespace mt {
namespace {

constexpr int kRows = 512, kCols = 128; // the tensor in device memory, row-major u16 ids

std::string probe_source(int box_rows) {
  const std::string n = std::to_string(box_rows * 64);
  return gpu_codegen::cuda_dialect()->tma_prologue({2}) + R"(
extern "C" __global__ void __launch_bounds__(128)
tma_probe(const __grid_constant__ mt_tensor_map map, unsigned short* out, int c0, int c1) {
  __shared__ __align__(1024) unsigned short tile[)" +
         n + R"(];
  __shared__ __align__(8) unsigned long long bar[1];
  if (threadIdx.x == 0) {
    mt_tma_init(&bar[0], 1u);
    mt_tma_init_fence();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mt_tma_expect(&bar[0], )" +
         std::to_string(box_rows * 64 * 2) + R"(u);
    mt_tma_load_2d(tile, &map, c0, c1, &bar[0]);
  }
  mt_tma_wait(&bar[0], 0u);
  for (int i = threadIdx.x; i < )" +
         n + R"(; i += 128) out[i] = tile[i];
}
)";
}

TEST(TmaProbe, TheProbeKernelCompilesForSm90a) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  for (int rows : {64, 256}) {
    cuda::NvrtcResult r = nvrtc->compile(probe_source(rows), "tma_probe.cu", "sm_90a");
    EXPECT_TRUE(r.ok) << r.log << "\n" << probe_source(rows);
    EXPECT_TRUE(cuda::Nvrtc::log_is_clean(r.log)) << r.log;
  }
}

TEST(TmaProbe, OnAnSm90DeviceABoxLandsInTheSwizzledLayout) {
  std::string why;
  std::optional<wgmma_probe::Sm90Device> device = wgmma_probe::sm90_device("TMA", &why);
  if (!device) GTEST_SKIP() << why;
  cuda::Nvrtc* nvrtc = device->nvrtc;
  cuda::CudaDriver* driver = device->driver;
  cuda::Context& context = *device->context;
  // Ids below 0x7C00: no f16 NaN or infinity among the bit patterns the copy moves.
  std::vector<uint16_t> tensor(kRows * kCols);
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c)
      tensor[r * kCols + c] = static_cast<uint16_t>((r * kCols + c) % 0x7000);
  cuda::DeviceBuffer global(context, tensor.size() * 2);
  global.upload(tensor);
  struct Case {
    int rows, c0, c1; // box rows; the box's first column and row
  };
  for (const Case& k : {Case{64, 64, 32}, Case{256, 0, 256}}) {
    cuda::NvrtcResult src = nvrtc->compile(probe_source(k.rows), "tma_probe.cu", "sm_90a");
    ASSERT_TRUE(src.ok) << src.log;
    cuda::Module module(context, src.binary);
    cuda::Function f = module.function("tma_probe");
    const std::vector<uint64_t> dims{kCols, kRows}, strides{kCols * 2};
    const std::vector<uint32_t> box{64, static_cast<uint32_t>(k.rows)};
    alignas(64) std::array<uint64_t, 16> map =
        cuda::encode_tensor_map(*driver, global.ptr(), false, dims, strides, box);
    cuda::DeviceBuffer out(context, static_cast<size_t>(k.rows) * 64 * 2);
    out.fill(0xff);
    int c0 = k.c0, c1 = k.c1;
    context.launch(f, {1, 1, 1}, {128, 1, 1}, {map.data(), out.kernel_param(), &c0, &c1});
    context.synchronize();
    std::vector<uint16_t> got(static_cast<size_t>(k.rows) * 64);
    out.download(got);
    int wrong = 0, first = -1;
    for (int r = 0; r < k.rows; ++r)
      for (int c = 0; c < 64; ++c) {
        const int at = r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8;
        if (got[static_cast<size_t>(at)] != tensor[(k.c1 + r) * kCols + k.c0 + c]) {
          if (first < 0) first = r * 64 + c;
          ++wrong;
        }
      }
    const std::string what = "box " + std::to_string(k.rows) + " x 64 at column " +
                             std::to_string(k.c0) + ", row " + std::to_string(k.c1) +
                             ", 128-byte swizzle";
    std::printf("[ tma ] %-70s %s", what.c_str(), wrong ? "wrong" : "correct");
    if (wrong)
      std::printf(" (%d of %d; first at row %d col %d)", wrong, k.rows * 64, first / 64,
                  first % 64);
    std::printf("\n");
    EXPECT_EQ(wrong, 0) << what;
  }
}

} // namespace
} // namespace mt
