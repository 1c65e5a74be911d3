// bench_register_tile: GFLOPS of an R x V register tile on one core, operands in L1. Each
// step broadcasts R floats of A and loads V vectors of B, then issues R x V FMAs into
// accumulators held in registers -- the inner loop of a matmul or of a convolution vectorised
// over its output channels. Measures which tile shapes the FMA units can be kept busy with,
// the ceiling of what MultiLevelTiling's register-tile spaces can reach (docs/std_rules.md):
// a kernel whose micro-kernel runs well below this in place loses the rest to memory, loop
// overhead or code generation, not to its tile shape.
//
// Built with -O3 so that the accumulator arrays are unrolled into registers (at -O2 GCC keeps
// them in memory and every shape measures the stack instead).
//
// On a CPU with AVX-512 the shapes are measured again with 16-float vectors (32 registers:
// tiles up to R x V + V + 1 = 32), the tiles MultiLevelTiling offers on such targets.
//
// Usage: bench_register_tile [--seconds S]   (prints one line per shape, best of 5 rounds)
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kSteps = 256; // per call: A is kSteps x R, B kSteps x V vectors (L1-resident)

template <int R, int V>
__attribute__((noinline)) void tile(const float* a, const float* b, float* c) {
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      acc[r][v] = _mm256_setzero_ps();
  for (int k = 0; k < kSteps; ++k) {
    __m256 bv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      bv[v] = _mm256_load_ps(b + (k * V + v) * 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m256 av = _mm256_broadcast_ss(a + k * R + r);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v)
        acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      _mm256_store_ps(c + (r * V + v) * 8, acc[r][v]);
}

// The same tile with 16-float vectors; compiled for AVX-512 only here, called only where the
// CPU has it.
template <int R, int V>
__attribute__((noinline, target("avx512f"))) void tile512(const float* a, const float* b,
                                                          float* c) {
  __m512 acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      acc[r][v] = _mm512_setzero_ps();
  for (int k = 0; k < kSteps; ++k) {
    __m512 bv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      bv[v] = _mm512_load_ps(b + (k * V + v) * 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      __m512 av = _mm512_set1_ps(a[k * R + r]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v)
        acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      _mm512_store_ps(c + (r * V + v) * 16, acc[r][v]);
}

// One shape: GFLOPS, the best of 5 rounds of about `seconds` / 5 each; checks one output
// against a double-precision sum so that the compiler cannot drop the work.
template <int R, int V, int W> void measure(double seconds) {
  alignas(64) static float a[kSteps * 16], b[kSteps * 4 * 16], c[16 * 4 * 16];
  for (int i = 0; i < kSteps * R; ++i)
    a[i] = static_cast<float>((i % 7) + 1) / 64.0f;
  for (int i = 0; i < kSteps * V * W; ++i)
    b[i] = static_cast<float>((i % 5) + 1) / 64.0f;
  double expect = 0;
  for (int k = 0; k < kSteps; ++k)
    expect += static_cast<double>(a[k * R]) * b[k * V * W];
  const double flops_per_call = 2.0 * R * V * W * kSteps;
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    int64_t calls = 0;
    auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds / 5) {
      for (int i = 0; i < 1000; ++i) {
        if constexpr (W == 16)
          tile512<R, V>(a, b, c);
        else
          tile<R, V>(a, b, c);
      }
      calls += 1000;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    best = std::max(best, flops_per_call * static_cast<double>(calls) / elapsed / 1e9);
  }
  bool ok = std::abs(c[0] - expect) <= 1e-3 * std::abs(expect);
  std::printf("%d x %d  accumulators %2d  broadcasts/FMA %.2f  loads/FMA %.2f  %6.1f GFLOPS%s\n", R,
              V, R * V, 1.0 / V, 1.0 / R, best, ok ? "" : "  WRONG RESULT");
}

template <int R, int V, int W = 8> struct Shape {
  static void run(double seconds) { measure<R, V, W>(seconds); }
};
template <int R, int V> using Shape512 = Shape<R, V, 16>;

// Each shape in turn, in the order given.
template <class... Shapes> void measure_all(double seconds) {
  (Shapes::run(seconds), ...);
}

} // namespace

int main(int argc, char** argv) {
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
      return 2;
    }
  }
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("this CPU lacks AVX2 + FMA; nothing to measure\n");
    return 0;
  }
  std::printf("R x V register tiles (R broadcast rows, V vectors of 8 floats), one core, L1:\n");
  measure_all<Shape<8, 1>, Shape<7, 1>, Shape<4, 1>, Shape<2, 2>, Shape<3, 2>, Shape<4, 2>,
              Shape<5, 2>, Shape<6, 2>, Shape<7, 2>, Shape<2, 4>, Shape<3, 4>, Shape<4, 3>>(
      seconds);
  if (!__builtin_cpu_supports("avx512f")) return 0;
  std::printf("\nR x V register tiles with AVX-512 (V vectors of 16 floats), one core, L1:\n");
  measure_all<Shape512<4, 1>, Shape512<8, 1>, Shape512<4, 2>, Shape512<6, 2>, Shape512<8, 2>,
              Shape512<12, 2>, Shape512<14, 2>, Shape512<4, 3>, Shape512<6, 3>, Shape512<8, 3>,
              Shape512<4, 4>, Shape512<6, 4>>(seconds);
  return 0;
}
