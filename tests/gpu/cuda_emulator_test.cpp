// The generated CUDA C++ run on the CPU by the emulator (cuda_emulator/): the wgmma schedules
// with their cp.async pipelines, the TMA copies and the producer warpgroup (warp
// specialisation), against the reference interpreter -- the protocol between warpgroups that
// PoCL cannot run. And the emulator's own power: producer kernels broken on purpose (a consumer
// that does not wait for its tile, a producer that does not wait for a free slot, a parity
// flipped) are caught, and a TMA box lands where the 128-byte swizzle puts it.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "cuda_emulator/emulated_tensor_map.h"
#include "cuda_emulator/run_on_emulator.h"
#include "generated_source.h"
#include "gpu_schedule_samples.h"
#include "metatune/gpu_codegen/dialect.hpp"
#include "tensor_core_samples.h"

namespace mt {
namespace {

namespace E = mt::gpu_test::emulator;
namespace G = mt::gpu_codegen;

// MT_EMULATOR_SAMPLES=k multiplies the samples of every test here, for hunting rare failures by
// hand (1 by default).
int more_samples() {
  const char* more = std::getenv("MT_EMULATOR_SAMPLES");
  return more ? std::max(1, std::atoi(more)) : 1;
}

// `space`'s samples (2 a workload) run on the emulator under three seeds (orders of the
// threads and of the copies' landing) against the interpreter.
int check_on_emulator(const gpu_test::TensorCoreSpace& space, const char* label, E::Counts* counts,
                      int* register_moves = nullptr, int samples = 2) {
  E::RunOptions options;
  options.seeds = {1, 2, 3};
  samples *= more_samples();
  return gpu_test::for_each_tensor_core_sample(
      gpu_test::sm90_attrs(), samples,
      [&](const gpu_test::TensorCoreSample& s) {
        std::string source, diff;
        try {
          diff = E::run_and_compare(s.scheduled, s.reference, options, counts, &source);
        } catch (const std::exception& e) {
          diff = e.what();
        }
        EXPECT_EQ(diff, "") << label << " " << s.spec << "\ntrace " << s.trace_json << "\n"
                            << source;
        if (register_moves && source.find("setmaxnreg.inc") != std::string::npos) ++*register_moves;
      },
      space);
}

// Workloads of eight k-tiles of 64: the pipeline's slots are reused and the mbarriers' phases
// wrap around.
std::vector<std::string> long_k_specs() {
  return {"matmul(M=128,N=128,K=512,dtype=f16,out_dtype=f32)",
          "dense(M=64,N=128,K=512,dtype=bf16,out_dtype=f32)"};
}

// The CUDA C++ (or HIP C++) of every workload of the library under random schedules of the standard
// GPU rules (one sample a design space, three spaces a workload; f16 and bf16 workloads too), run
// on the emulator: what NVRTC only compiles in gpu_cuda_tests.
void check_random_schedules(bool hip) {
  TuneAttributes attrs = std_rules_test::gpu_set().attrs;
  int ran = 0, unsupported = 0;
  auto check = [&](const gpu_test::Sampled& s, double rtol, double atol) {
    E::RunOptions options;
    options.hip = hip;
    options.rtol = rtol;
    options.atol = atol;
    std::string source, diff;
    try {
      diff = E::run_and_compare(s.scheduled, s.reference, options, nullptr, &source);
    } catch (const G::UnsupportedError&) {
      ++unsupported;
      return;
    } catch (const std::exception& e) {
      diff = e.what();
    }
    EXPECT_EQ(diff, "") << s.spec << "\ntrace " << s.trace_json << "\n" << source;
    ++ran;
  };
  gpu_test::for_each_gpu_sample(
      attrs, 3, [&](const gpu_test::Sampled& s) { check(s, 1e-4, 1e-5); }, {}, more_samples());
  gpu_test::for_each_gpu_sample(
      attrs, 2,
      [&](const gpu_test::Sampled& s) { check(s, gpu_test::kHalfRtol, gpu_test::kHalfAtol); }, {},
      more_samples(), gpu_test::half_workload_specs());
  std::printf("[ emulator ] %s: %d random GPU schedules ran and were compared, %d unsupported\n",
              hip ? "HIP" : "CUDA", ran, unsupported);
  EXPECT_GE(ran, 40);
  EXPECT_LE(unsupported * 4, ran);
}

TEST(CudaEmulator, EveryWorkloadUnderRandomGpuSchedulesMatchesTheInterpreter) {
  check_random_schedules(false);
}

// The same schedules in the HIP dialect (the rocm target's source: CUDA's, without its
// asynchronous copies and wide moves), which clang only compiles in gpu_rocm_tests.
TEST(CudaEmulator, TheirHipSourceMatchesTheInterpreterToo) {
  check_random_schedules(true);
}

// The WMMA (16x16x16) tensor-core schedules: each thread holds a fragment's whole tile.
TEST(CudaEmulator, WmmaSchedulesMatchTheInterpreter) {
  E::Counts counts;
  int n = check_on_emulator(gpu_test::TensorCoreSpace{}, "wmma", &counts);
  std::printf("[ emulator ] %d WMMA samples, 3 orders each\n", n);
  EXPECT_GE(n, 8);
}

TEST(CudaEmulator, WgmmaSchedulesMatchTheInterpreter) {
  E::Counts counts;
  int n = check_on_emulator(gpu_test::warpgroup_space(), "wgmma", &counts);
  n += check_on_emulator(gpu_test::warpgroup_swizzle_space(), "swizzled", &counts);
  std::printf("[ emulator ] %d wgmma samples, 3 orders each: %llu wgmma issued a thread\n", n,
              static_cast<unsigned long long>(counts.wgmmas));
  EXPECT_GE(n, 16);
  EXPECT_GT(counts.wgmmas, 0u);
}

TEST(CudaEmulator, TmaAndProducerWarpgroupSchedulesMatchTheInterpreter) {
  E::Counts tma, producer;
  int n = 0, register_moves = 0;
  for (bool long_k : {false, true}) {
    gpu_test::TensorCoreSpace t = gpu_test::warpgroup_tma_space();
    gpu_test::TensorCoreSpace p = gpu_test::warpgroup_producer_space();
    if (long_k) t.specs = p.specs = long_k_specs();
    n += check_on_emulator(t, "tma", &tma);
    n += check_on_emulator(p, "producer", &producer, &register_moves);
  }
  // A 256-row matmul lets a block hold two consumer warpgroups (with the producer, three: the
  // registers move to the consumers), and more than one 64-row tile a warpgroup.
  gpu_test::TensorCoreSpace p = gpu_test::warpgroup_producer_space();
  p.specs = {"matmul(M=256,N=128,K=256,dtype=f16,out_dtype=f32)"};
  n += check_on_emulator(p, "producer", &producer, &register_moves, 8);
  // The bench's fastest shape class: m64n256k16 products (128 accumulator floats a thread).
  p.config = R"({"enabled": "always", "wgmma": "always", "wgmma_cols": [256],
                 "wgmma_swizzle": "always", "wgmma_tma": "always", "wgmma_producer": "always"})";
  p.specs = {"matmul(M=256,N=256,K=256,dtype=f16,out_dtype=f32)"};
  n += check_on_emulator(p, "producer n256", &producer, &register_moves, 3);
  std::printf("[ emulator ] %d samples, 3 orders each; TMA: %llu copies, up to %llu in flight; "
              "producer warpgroup: %llu copies, up to %llu in flight, %d with two consumer "
              "warpgroups or more\n",
              n, static_cast<unsigned long long>(tma.tma_copies),
              static_cast<unsigned long long>(tma.max_tma_in_flight),
              static_cast<unsigned long long>(producer.tma_copies),
              static_cast<unsigned long long>(producer.max_tma_in_flight), register_moves);
  EXPECT_GE(n, 24);
  EXPECT_GE(register_moves, 1);
  EXPECT_GT(tma.tma_copies, 0u);
  // The producer runs ahead of the consumers by more than one tile.
  EXPECT_GE(producer.max_tma_in_flight, 3u);
}

// The first sample of `space` on a long-k matmul (more k-tiles than slots) whose CUDA source
// holds `marker`.
struct Sample {
  std::optional<Function> func;
  std::vector<NDArray> reference;
};
Sample first_sample(gpu_test::TensorCoreSpace space, const std::string& marker) {
  space.specs = {long_k_specs()[0]};
  Sample out;
  gpu_test::for_each_tensor_core_sample(
      gpu_test::sm90_attrs(), 4,
      [&](const gpu_test::TensorCoreSample& s) {
        if (out.func) return;
        std::string src = gpu_test::generated_source(s.scheduled, *G::cuda_dialect());
        if (src.find(marker) == std::string::npos) return;
        out.func = s.scheduled;
        out.reference = s.reference;
      },
      space);
  return out;
}

// Replaces every `from` in `s` by `to`; the count in *n.
std::string replace_all(std::string s, const std::string& from, const std::string& to, int* n) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
    ++*n;
  }
  return s;
}

// What the emulator says of the sample with `edit` applied to its source.
std::string broken_run(const Sample& s, const std::string& from, const std::string& to) {
  E::RunOptions options;
  options.seeds = {1, 2, 3, 4};
  int n = 0;
  options.edit = [&](const std::string& code) {
    // A wait that does nothing, for the edits to call instead of the real ones.
    std::string skip = "static inline void mt_skip(unsigned long long*, unsigned) {}\n";
    std::string c = replace_all(code, from, to, &n);
    return replace_all(c, "extern \"C\" __global__", skip + "extern \"C\" __global__", &n);
  };
  std::string source;
  std::string diff = E::run_and_compare(*s.func, s.reference, options, nullptr, &source);
  EXPECT_GE(n, 2) << "the edit found nothing to change: " << from << "\n" << source;
  return diff;
}

TEST(CudaEmulator, CatchesProducerKernelsBrokenOnPurpose) {
  Sample s = first_sample(gpu_test::warpgroup_producer_space(), "// producer");
  ASSERT_TRUE(s.func.has_value()) << "no producer-warpgroup sample";
  E::RunOptions options;
  options.seeds = {1, 2};
  std::string source;
  ASSERT_EQ(E::run_and_compare(*s.func, s.reference, options, nullptr, &source), "") << source;

  // Consumers that multiply before their tile has landed read a slot TMA writes meanwhile.
  std::string no_full_wait = broken_run(s, "  mt_tma_wait(&", "  mt_skip(&");
  EXPECT_NE(no_full_wait, "");
  std::printf("[ emulator ] consumer not waiting for its tile: %s\n", no_full_wait.c_str());

  // A producer that refills a slot without waiting for the consumers' release overwrites tiles
  // whose products are in flight.
  std::string no_empty_wait = broken_run(s, "mt_tma_wait_free(&", "mt_skip(&");
  EXPECT_NE(no_empty_wait, "");
  std::printf("[ emulator ] producer not waiting for a free slot: %s\n", no_empty_wait.c_str());

  // The empty mbarriers' parity flipped: the first wait is for a phase nobody completes.
  std::string flipped = broken_run(s, ") ^ 1));", ") ^ 0)); mt_skip(nullptr, 0);");
  EXPECT_NE(flipped.find("deadlock"), std::string::npos) << flipped;
  std::printf("[ emulator ] empty barrier's parity flipped: %s\n", flipped.substr(0, 300).c_str());
}

// A pipelined wgmma kernel whose tiles come by cp.async, without the fence that makes the
// threads' copies visible to wgmma's (asynchronous-proxy) reads.
TEST(CudaEmulator, CatchesAMissingProxyFenceBeforeWgmma) {
  Sample s = first_sample(gpu_test::warpgroup_swizzle_space(), "fence.proxy.async");
  ASSERT_TRUE(s.func.has_value()) << "no cp.async wgmma sample";
  std::string unfenced = broken_run(s, "fence.proxy.async.shared::cta;", "");
  EXPECT_NE(unfenced.find("has not made visible with fence.proxy.async"), std::string::npos)
      << unfenced;
  std::printf("[ emulator ] no proxy fence: %s\n", unfenced.c_str());
}

// A TMA box of 8 x 64 f16 through the dialect's own helpers: element (r, c) lands at chunk
// (c / 8) ^ (r % 8) of row r, and a 16-row box at an out-of-bounds origin is zero-filled.
TEST(CudaEmulator, TmaBoxLandsWhereTheSwizzleSaysAndOutsideIsZero) {
  std::unique_ptr<G::Dialect> d = G::cuda_dialect();
  std::string src =
      d->prologue() + d->f16_prologue() + d->tma_prologue({2}) +
      R"(extern "C" __global__ void __launch_bounds__(32) box(unsigned short* __restrict__ out, const int c0, const int c1, const __grid_constant__ mt_tensor_map map) {
  __shared__ __align__(8) unsigned long long bar[1];
  extern __shared__ __align__(1024) unsigned char pool[];
  unsigned short* const tile = reinterpret_cast<unsigned short*>(pool + 0);
  if (threadIdx.x == 0) { mt_tma_init(&bar[0], 1u); mt_tma_init_fence(); }
  __syncthreads();
  if (threadIdx.x == 0) { mt_tma_expect(&bar[0], 2048u); mt_tma_load_2d(tile, &map, c0, c1, &bar[0]); }
  mt_tma_wait(&bar[0], 0u);
  for (int i = threadIdx.x; i < 1024; i += 32) out[i] = tile[i];
}
)";
  E::EmulatedModule m(src);
  // A 32 x 128 tensor of f16 whose element (r, c) holds r * 128 + c.
  std::vector<unsigned short> tensor(32 * 128), out(1024);
  for (size_t i = 0; i < tensor.size(); ++i)
    tensor[i] = static_cast<unsigned short>(i);
  mt_emu::EmulatedTensorMap map;
  map.base = reinterpret_cast<const unsigned char*>(tensor.data());
  map.rank = 2;
  map.swizzle_bytes = 128;
  map.dims[0] = 128;
  map.dims[1] = 32;
  map.strides[1] = 256;
  map.box[0] = 64;
  map.box[1] = 16;
  std::array<uint64_t, 16> map_bytes{};
  std::memcpy(map_bytes.data(), &map, sizeof map);
  G::LaunchDims dims;
  dims.block[0] = 32;
  for (int origin_row : {8, 24}) {
    void* out_ptr = out.data();
    int c0 = 64, c1 = origin_row;
    void* params[] = {&out_ptr, &c0, &c1, map_bytes.data()};
    ASSERT_EQ(m.launch("box", dims, 4096, params, 1), "");
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 64; ++c) {
        const int at = r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8;
        const int row = origin_row + r;
        const unsigned short want = row < 32 ? static_cast<unsigned short>(row * 128 + 64 + c) : 0;
        ASSERT_EQ(out[static_cast<size_t>(at)], want)
            << "origin " << origin_row << " r " << r << " c " << c;
      }
  }
}

} // namespace
} // namespace mt
