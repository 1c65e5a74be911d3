// Hopper's warpgroup MMA (wgmma.mma_async, sm_90a) probed before the generator emits it.
// cuBLAS reaches 630 TFLOPS on an H200 with it, and the WMMA kernels, which compile to
// mma.sync, reach 300. The shared-memory descriptors and the accumulator layout it needs can
// only be checked on a device.
// Here: one warpgroup computes D = A x B for m64n64k16 from shared memory laid out in core
// matrices (8 rows of 16 bytes, no swizzle). The descriptors encode where the next core matrix
// is along each dimension (leading and stride byte offsets). A takes the K-major layout; B the
// K-major one (B^T, a dense layer's weight) and the MN-major one (tnspB, matmul's B[k, n]).
// Each layout is also run with the two offsets exchanged, so that a failure says whether the
// device reads them the other way round. Without a device the kernels are only
// compiled for sm_90a (NVRTC runs ptxas, which checks the instructions and operands);
// with one they run, and the products of small integers, exact in f16 and f32, are compared
// with a double-precision product.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_driver.h"
#include "nvrtc_compiler.h"
#include "wgmma_probe_support.h"

namespace mt {
namespace {

constexpr int kM = 64, kN = 64, kK = 16;

// How an operand's tile sits in shared memory: element (row, k) of a K-major operand (row = m
// of A, n of B), or (k, n) of an MN-major B, at the half index below; the descriptor's offsets
// in bytes.
struct Layout {
  const char* name;
  bool mn_major;
  unsigned lbo, sbo;
  bool exchanged; // the offsets against the manual's reading (A's too, for a K-major B)
};

// K-major: a core matrix is 8 rows (m or n) of 8 consecutive k; the next along k is 128 bytes
// on, the next 8 rows 256 bytes on (k16 holds two core matrices).
int k_major_index(int row, int k) {
  return (row / 8) * 128 + (k / 8) * 64 + (row % 8) * 8 + k % 8;
}
// MN-major B: a core matrix is 8 k of 8 consecutive n; the next along n 128 bytes on, the next
// 8 k 1024 bytes on (64 n hold eight core matrices).
int mn_major_index(int k, int n) {
  return (k / 8) * 512 + (n / 8) * 64 + (k % 8) * 8 + n % 8;
}

// The PTX manual's reading ("Leading/Stride dimension byte offset", shared memory matrix
// layout of wgmma): K-major, no swizzle: LBO from the first column to the second of the 8x2
// tile of core matrices (along k), SBO from the first 8 rows to the next 8 (along m or n).
// MN-major, interleave: LBO from the first 8 columns to the next 8 (8 k: along k), SBO from the
// first row to the next (one 16-byte row of 8 n: along n).
const Layout kA{"A K-major, LBO 128 (along k), SBO 256 (along m)", false, 128, 256, false};
const Layout kLayoutsB[] = {
    {"B K-major, LBO 128 (along k), SBO 256 (along n)", false, 128, 256, false},
    {"B and A K-major, LBO and SBO exchanged", false, 256, 128, true},
    {"B MN-major, LBO 1024 (along k), SBO 128 (along n)", true, 1024, 128, false},
    {"B MN-major, LBO and SBO exchanged", true, 128, 1024, true},
};

// The probe kernel, with B's transpose flag (an immediate of the instruction).
std::string probe_source(bool b_mn_major) {
  std::string outs, acc;
  for (int i = 0; i < 32; ++i) {
    outs += (i ? ", %" : "%") + std::to_string(i);
    acc += std::string(i ? ", " : "") + "\"+f\"(d[" + std::to_string(i) + "])";
  }
  return std::string(R"(#include <cuda_fp16.h>
static __device__ unsigned long long mt_smem_desc(const void* p, unsigned lbo, unsigned sbo) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32);
}
extern "C" __global__ void __launch_bounds__(128)
wgmma_probe(const __half* a, const __half* b, float* out, unsigned a_lbo, unsigned a_sbo,
            unsigned b_lbo, unsigned b_sbo) {
  // Room beyond the tiles (zeros) for the exchanged readings to stay inside the block's
  // shared memory: a wrong one computes a wrong product instead of faulting.
  __shared__ __align__(128) __half sa[4 * 64 * 16];
  __shared__ __align__(128) __half sb[8 * 16 * 64];
  for (int i = threadIdx.x; i < 4 * 64 * 16; i += 128) sa[i] = i < 64 * 16 ? a[i] : __half();
  for (int i = threadIdx.x; i < 8 * 16 * 64; i += 128) sb[i] = i < 16 * 64 ? b[i] : __half();
  __syncthreads();
  // Written by ordinary stores, read by the asynchronous proxy.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  const unsigned long long da = mt_smem_desc(sa, a_lbo, a_sbo), db = mt_smem_desc(sb, b_lbo, b_sbo);
  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.0f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {)") +
         outs + "}, %32, %33, p, 1, 1, 0, " + (b_mn_major ? "1" : "0") + R"(;\n}\n"
               : )" +
         acc + R"(
               : "l"(da), "l"(db), "r"(1));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  // The accumulator: warp w holds rows 16w to 16w+15; per 8 columns j, a lane's four values
  // are (row, 2 columns) and (row + 8, the same 2), as mma.sync's m16n8 accumulator.
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  for (int j = 0; j < 8; ++j) {
    const int row = 16 * w + l / 4, col = 8 * j + (l % 4) * 2;
    out[row * 64 + col] = d[4 * j];
    out[row * 64 + col + 1] = d[4 * j + 1];
    out[(row + 8) * 64 + col] = d[4 * j + 2];
    out[(row + 8) * 64 + col + 1] = d[4 * j + 3];
  }
}
)";
}

// Small integers: every product and sum is exact in f16 inputs and f32 sums.
struct Compiled {
  cuda::NvrtcResult k_major, mn_major;
};

Compiled compile_probes(cuda::Nvrtc& nvrtc) {
  return {nvrtc.compile(probe_source(false), "wgmma_probe_k.cu", "sm_90a"),
          nvrtc.compile(probe_source(true), "wgmma_probe_mn.cu", "sm_90a")};
}

TEST(WgmmaProbe, TheProbeKernelsCompileForSm90a) {
  std::string why;
  cuda::Nvrtc* nvrtc = cuda::Nvrtc::get(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  Compiled c = compile_probes(*nvrtc);
  EXPECT_TRUE(c.k_major.ok) << c.k_major.log << "\n" << probe_source(false);
  EXPECT_TRUE(c.mn_major.ok) << c.mn_major.log;
  EXPECT_TRUE(cuda::Nvrtc::log_is_clean(c.k_major.log)) << c.k_major.log;
  EXPECT_TRUE(cuda::Nvrtc::log_is_clean(c.mn_major.log)) << c.mn_major.log;
}

TEST(WgmmaProbe, OnAnSm90DeviceTheManualsReadingOfEachLayoutComputesTheProduct) {
  std::string why;
  std::optional<wgmma_probe::Sm90Device> device = wgmma_probe::sm90_device("wgmma", &why);
  if (!device) GTEST_SKIP() << why;
  cuda::Nvrtc* nvrtc = device->nvrtc;
  cuda::Context& context = *device->context;
  Compiled c = compile_probes(*nvrtc);
  ASSERT_TRUE(c.k_major.ok && c.mn_major.ok) << c.k_major.log << c.mn_major.log;
  cuda::Module k_module(context, c.k_major.binary), mn_module(context, c.mn_major.binary);

  std::vector<float> a(kM * kK), b_k(kN * kK), b_mn(kK * kN);
  std::vector<double> want(kM * kN, 0.0);
  for (int m = 0; m < kM; ++m)
    for (int k = 0; k < kK; ++k)
      a[k_major_index(m, k)] = wgmma_probe::a_value(m, k);
  for (int k = 0; k < kK; ++k)
    for (int n = 0; n < kN; ++n) {
      b_k[k_major_index(n, k)] = wgmma_probe::b_value(k, n);
      b_mn[mn_major_index(k, n)] = wgmma_probe::b_value(k, n);
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
  for (const Layout& lb : kLayoutsB) {
    db.upload(wgmma_probe::to_f16(lb.mn_major ? b_mn : b_k));
    dout.fill(0xff); // NaN: a value the kernel did not write shows
    unsigned a_lbo = kA.lbo, a_sbo = kA.sbo, b_lbo = lb.lbo, b_sbo = lb.sbo;
    // Exchanged for a K-major B, A's are exchanged too: one run tells whether the device
    // reads both roles the other way round.
    if (lb.exchanged && !lb.mn_major) std::swap(a_lbo, a_sbo);
    cuda::Function f = (lb.mn_major ? mn_module : k_module).function("wgmma_probe");
    context.launch(f, {1, 1, 1}, {128, 1, 1},
                   {da.kernel_param(), db.kernel_param(), dout.kernel_param(), &a_lbo, &a_sbo,
                    &b_lbo, &b_sbo});
    context.synchronize();
    std::vector<float> got(want.size());
    dout.download(got);
    correct.push_back(wgmma_probe::report_exact("wgmma", lb.name, got, want, kN));
  }
  // The manual's reading of each layout is the one the generator is to use.
  EXPECT_TRUE(correct[0]) << kLayoutsB[0].name;
  EXPECT_TRUE(correct[2]) << kLayoutsB[2].name;
  EXPECT_FALSE(correct[1] || correct[3]) << "an exchanged reading computed the product too";
}

} // namespace
} // namespace mt
