// Hopper's warpgroup MMA with the 128-byte swizzled shared-memory layouts, probed before the
// generator writes them. The unswizzled core matrices the generator uses now are read
// correctly (wgmma_probe_test.cpp) but the wgmma kernels stay at about 190 TFLOPS on an H200
// against WMMA's 320 and cuBLAS's 645; CUTLASS and cuBLAS lay operands out with the 128-byte
// swizzle, whose reading by the descriptor differs again:
//   - an atom is 8 rows of 128 bytes (1024 bytes, 1024-aligned); in row r the 16-byte chunk c
//     sits at chunk c ^ (r % 8);
//   - K-major (A[m, k], B[n, k]; a row is 64 f16 of k): the stride byte offset is the distance
//     between atoms along m or n; the leading offset is not used; a k16 step within the row
//     moves the descriptor's start address by 32 bytes;
//   - MN-major (B[k, n]; a row is 64 f16 of n, the rows are k): as CUTLASS reads it, the
//     leading offset is the distance between atoms along n and the stride offset the distance
//     between groups of 8 k; a k16 step moves the start by two such groups.
// One warpgroup computes m64n128k64 (four k16 products into one accumulator) for A K-major
// with B K-major and with B MN-major, the latter also with the two offsets exchanged, and
// prints which are right ("[ wgmma swizzle ] ..."). Without a device the kernels are only
// compiled for sm_90a; with one, products of small integers (exact) are compared with a
// double-precision product.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_driver.h"
#include "nvrtc_compiler.h"
#include "wgmma_probe_support.h"

namespace mt {
namespace {

constexpr int kM = 64, kN = 128, kK = 64;

// Half-element index of (row, col) in 128-byte-swizzled atoms of 8 rows x 64 halves, the atoms
// `atom_stride` halves apart along the rows' groups of 8 (and `col_atom_stride` apart along
// groups of 64 columns).
int swizzled_index(int row, int col, int atom_stride, int col_atom_stride) {
  const int chunk = ((col % 64) / 8) ^ (row % 8);
  return (row / 8) * atom_stride + (col / 64) * col_atom_stride + (row % 8) * 64 + chunk * 8 +
         col % 8;
}

struct Case {
  const char* name;
  bool b_mn_major;
  unsigned b_lbo, b_sbo; // bytes
  unsigned b_k_step;     // bytes the start address moves per k16 step
  bool reading;          // the reading described above (else the offsets exchanged)
};

// A: [64 m][64 k], atoms of 8 m stacked 1024 bytes apart. B K-major: [128 n][64 k] likewise.
// B MN-major: [64 k][128 n] as 2 x 8 atoms: groups of 8 k 1024 bytes apart, the two groups of
// 64 n 8192 bytes apart.
const Case kCases[] = {
    {"A and B K-major, SBO 1024 (atoms along m/n), start +32 B a k16 step", false, 16, 1024, 32,
     true},
    {"B MN-major, LBO 8192 (atoms along n), SBO 1024 (8 k), start +2048 B a k16 step", true, 8192,
     1024, 2048, true},
    {"B MN-major, LBO and SBO exchanged", true, 1024, 8192, 2048, false},
};

std::string probe_source(bool b_mn_major) {
  const int regs = kN / 2;
  std::string outs, acc;
  for (int i = 0; i < regs; ++i) {
    outs += (i ? ", %" : "%") + std::to_string(i);
    acc += std::string(i ? ", " : "") + "\"+f\"(d[" + std::to_string(i) + "])";
  }
  const std::string n_desc_a = std::to_string(regs), n_desc_b = std::to_string(regs + 1),
                    n_scale = std::to_string(regs + 2);
  return std::string(R"(#include <cuda_fp16.h>
static __device__ unsigned long long mt_smem_desc(const void* p, unsigned lbo, unsigned sbo) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32) | (1ull << 62); // 128-byte swizzle
}
extern "C" __global__ void __launch_bounds__(128)
wgmma_swizzle_probe(const __half* a, const __half* b, float* out, unsigned b_lbo, unsigned b_sbo,
                    unsigned b_k_step) {
  // Room beyond the tiles (zeros): a wrong reading computes a wrong product, not a fault.
  __shared__ __align__(1024) __half sa[2 * 64 * 64];
  __shared__ __align__(1024) __half sb[2 * 128 * 64];
  for (int i = threadIdx.x; i < 2 * 64 * 64; i += 128) sa[i] = i < 64 * 64 ? a[i] : __half();
  for (int i = threadIdx.x; i < 2 * 128 * 64; i += 128) sb[i] = i < 128 * 64 ? b[i] : __half();
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  float d[)") +
         std::to_string(regs) + R"(];
  for (int i = 0; i < )" +
         std::to_string(regs) + R"(; ++i) d[i] = 0.0f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const unsigned long long da = mt_smem_desc(reinterpret_cast<const char*>(sa) + 32 * s, 16, 1024);
    const unsigned long long db = mt_smem_desc(reinterpret_cast<const char*>(sb) + b_k_step * s, b_lbo, b_sbo);
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %)" +
         n_scale + R"(, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {)" +
         outs + "}, %" + n_desc_a + ", %" + n_desc_b + ", p, 1, 1, 0, " + (b_mn_major ? "1" : "0") +
         R"(;\n}\n"
                 : )" +
         acc + R"(
                 : "l"(da), "l"(db), "r"(1));
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  for (int j = 0; j < )" +
         std::to_string(kN / 8) + R"(; ++j) {
    const int row = 16 * w + l / 4, col = 8 * j + (l % 4) * 2;
    out[row * )" +
         std::to_string(kN) + R"( + col] = d[4 * j];
    out[row * )" +
         std::to_string(kN) + R"( + col + 1] = d[4 * j + 1];
    out[(row + 8) * )" +
         std::to_string(kN) + R"( + col] = d[4 * j + 2];
    out[(row + 8) * )" +
         std::to_string(kN) + R"( + col + 1] = d[4 * j + 3];
  }
}
)";
}

TEST(WgmmaSwizzleProbe, TheProbeKernelsCompileForSm90a) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  for (bool mn : {false, true}) {
    cuda::NvrtcResult r = nvrtc->compile(probe_source(mn), "wgmma_swizzle_probe.cu", "sm_90a");
    EXPECT_TRUE(r.ok) << r.log << "\n" << probe_source(mn);
    EXPECT_TRUE(cuda::Nvrtc::log_is_clean(r.log)) << r.log;
  }
}

TEST(WgmmaSwizzleProbe, OnAnSm90DeviceTheSwizzledLayoutsComputeTheProduct) {
  std::string why;
  std::optional<wgmma_probe::Sm90Device> device = wgmma_probe::sm90_device("wgmma", &why);
  if (!device) GTEST_SKIP() << why;
  cuda::Nvrtc* nvrtc = device->nvrtc;
  cuda::Context& context = *device->context;
  cuda::NvrtcResult k_src = nvrtc->compile(probe_source(false), "swizzle_k.cu", "sm_90a");
  cuda::NvrtcResult mn_src = nvrtc->compile(probe_source(true), "swizzle_mn.cu", "sm_90a");
  ASSERT_TRUE(k_src.ok && mn_src.ok) << k_src.log << mn_src.log;
  cuda::Module k_module(context, k_src.binary), mn_module(context, mn_src.binary);

  std::vector<float> a(kM * kK), b_k(kN * kK), b_mn(kK * kN);
  std::vector<double> want(kM * kN, 0.0);
  for (int m = 0; m < kM; ++m)
    for (int k = 0; k < kK; ++k)
      a[swizzled_index(m, k, 512, 0)] = wgmma_probe::a_value(m, k);
  for (int k = 0; k < kK; ++k)
    for (int n = 0; n < kN; ++n) {
      b_k[swizzled_index(n, k, 512, 0)] = wgmma_probe::b_value(k, n);
      b_mn[swizzled_index(k, n, 512, 4096)] = wgmma_probe::b_value(k, n);
    }
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n)
      for (int k = 0; k < kK; ++k)
        want[m * kN + n] +=
            static_cast<double>(wgmma_probe::a_value(m, k)) * wgmma_probe::b_value(k, n);

  cuda::DeviceBuffer da(context, a.size() * 2), db(context, b_k.size() * 2),
      dout(context, want.size() * 4);
  da.upload(wgmma_probe::to_f16(a));
  std::vector<bool> correct;
  for (const Case& c : kCases) {
    db.upload(wgmma_probe::to_f16(c.b_mn_major ? b_mn : b_k));
    dout.fill(0xff);
    unsigned lbo = c.b_lbo, sbo = c.b_sbo, step = c.b_k_step;
    cuda::Function f = (c.b_mn_major ? mn_module : k_module).function("wgmma_swizzle_probe");
    context.launch(f, {1, 1, 1}, {128, 1, 1},
                   {da.kernel_param(), db.kernel_param(), dout.kernel_param(), &lbo, &sbo, &step});
    context.synchronize();
    std::vector<float> got(want.size());
    dout.download(got);
    correct.push_back(wgmma_probe::report_exact("wgmma swizzle", c.name, got, want, kN));
  }
  EXPECT_TRUE(correct[0]) << kCases[0].name;
  EXPECT_TRUE(correct[1]) << kCases[1].name;
  EXPECT_FALSE(correct[2]) << "the exchanged MN-major reading computed the product too";
}

} // namespace
} // namespace mt
