// Matmul f32 scheduled by a hand-written trace: the schedule primitives a search sample of
// MultiLevelTiling + ParallelVectorizeUnroll could produce (tiling, reorder, parallel outer
// loop, MR x NR register tile with the vectorized lanes innermost, unrolled rows), built by
// the LLVM CPU target plugin and timed against oneDNN's sgemm in the same run, interleaved.
// It shows how close the schedule space (not the search) gets to the vendor library.
//
//   bench_matmul_trace [--size N] [--mr 6] [--nr 16] [--kc 256] [--mc 516] [--repeats R]
//                      [--print-trace] [--print-lowered] [--variant 0|1|2]
//
// Defaults (the figure in the README): 6 x 16 register tile, variant 2 (accumulator via
// cache_write + reverse_compute_at, B panel packed via cache_read), one 516-row block per
// core. 1024 rows are not a multiple of 6: the split is imperfect (1032 rows), the
// accumulator follows the guarded tile, and lowering partitions the guard out of all full
// tiles (core/lower/partition_loops.cpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "core/ir/printer.h"
#include "core/lower/lower.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"

using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  int64_t n = 1024, mr = 6, nr = 16, kc = 256, mc = 516;
  int repeats = 10;
  bool print_trace = false;
  bool print_lowered = false;
  int variant = 2;
};

// i -> [i0 parallel row blocks, i1 MR tiles, i2 MR rows]; j -> [j0 panels, j1 NR lanes];
// k -> [k0 KC blocks, k1]; order i0 j0 k0 i1 k1 i2 j1: the C tile of (i1, j0) stays in
// registers over k1, a KC x NR panel of B stays in L1 over i1.
mt::Schedule schedule(const mt::Function& f, const Config& c) {
  mt::Schedule s(f, 1);
  mt::BlockRV b = s.get_block("matmul");
  auto loops = s.get_loops(b);
  int64_t m_tiles = c.mc / c.mr;
  auto is = s.split(loops[0], {(c.n + c.mc - 1) / c.mc, m_tiles, c.mr});
  auto js = s.split(loops[1], {c.n / c.nr, c.nr});
  auto ks = s.split(loops[2], {c.n / c.kc, c.kc});
  if (c.variant == 0) {
    s.reorder({is[0], js[0], ks[0], is[1], ks[1], is[2], js[1]});
  } else {
    // Register tile: the MR x NR accumulator of (i1, j0) lives under all reduction loops.
    s.reorder({is[0], js[0], is[1], ks[0], ks[1], is[2], js[1]});
  }
  s.parallel(is[0]);
  s.unroll(is[2]);
  s.vectorize(js[1]);
  if (c.variant >= 1) {
    mt::BlockRV acc = s.cache_write(b, 0, "local");
    s.reverse_compute_at(acc, is[1]);
  }
  if (c.variant >= 2) {
    mt::BlockRV bp = s.cache_read(b, 1, "global");
    s.compute_at(bp, js[0]);
  }
  s.decompose_reduction(b, c.variant == 0 ? ks[0] : ks[0]);
  return s;
}

double time_calls(const std::function<void()>& fn, double min_seconds) {
  int calls = 0;
  auto t0 = Clock::now();
  double el = 0;
  do {
    fn();
    ++calls;
    el = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (el < min_seconds);
  return el / calls;
}

} // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--size") c.n = std::atoll(next().c_str());
    else if (k == "--mr") c.mr = std::atoll(next().c_str());
    else if (k == "--nr") c.nr = std::atoll(next().c_str());
    else if (k == "--kc") c.kc = std::atoll(next().c_str());
    else if (k == "--mc") c.mc = std::atoll(next().c_str());
    else if (k == "--repeats") c.repeats = std::atoi(next().c_str());
    else if (k == "--print-trace") c.print_trace = true;
    else if (k == "--print-lowered") c.print_lowered = true;
    else if (k == "--variant") c.variant = std::atoi(next().c_str());
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::string spec = "matmul(M=" + std::to_string(c.n) + ",N=" + std::to_string(c.n) +
                     ",K=" + std::to_string(c.n) + ")";
  mt::Function f = mt::make_workload(spec);
  mt::Schedule s = schedule(f, c);
  if (c.print_trace) std::printf("%s\n%s\n", s.trace().to_json().c_str(), mt::print(s.func()).c_str());

  if (c.print_lowered) std::printf("%s\n", mt::print(mt::lower(s.func(), mt::LowerOptions{.partition_loops = true})).c_str());
  mt::PluginHost host;
  host.discover();
  auto target = host.create_target("llvm.cpu");
  auto t0 = Clock::now();
  auto module = target->build(s.func());
  double compile_s = std::chrono::duration<double>(Clock::now() - t0).count();

  mt::NDArray A(mt::DType::f32(), {c.n, c.n}), B(mt::DType::f32(), {c.n, c.n}),
      C(mt::DType::f32(), {c.n, c.n}), C2(mt::DType::f32(), {c.n, c.n});
  A.fill_random(1);
  B.fill_random(2);
  module->run({&A, &B, &C});
  const int n = static_cast<int>(c.n);
  auto* a = static_cast<const float*>(A.data());
  auto* bb = static_cast<const float*>(B.data());
  auto* c2 = static_cast<float*>(C2.data());
  dnnl_sgemm('N', 'N', n, n, n, 1.f, a, n, bb, n, 0.f, c2, n);
  std::string why;
  if (!mt::allclose(C, C2, 1e-3, 1e-3, &why)) {
    std::fprintf(stderr, "metatune result differs from oneDNN: %s\n", why.c_str());
    return 1;
  }
  // Interleaved repeats, medians: both see the same machine load.
  std::vector<double> tm, td;
  for (int r = 0; r < c.repeats; ++r) {
    tm.push_back(module->time({&A, &B, &C}, 1, 0.1)[0]);
    td.push_back(time_calls([&] { dnnl_sgemm('N', 'N', n, n, n, 1.f, a, n, bb, n, 0.f, c2, n); },
                            0.1));
  }
  std::sort(tm.begin(), tm.end());
  std::sort(td.begin(), td.end());
  double flops = 2.0 * c.n * c.n * c.n;
  double gm = flops / tm[tm.size() / 2] * 1e-9, gd = flops / td[td.size() / 2] * 1e-9;
  std::printf("%s f32: metatune %.1f GFLOPS, oneDNN %.1f GFLOPS, ratio %.2f (compile %.2f s; "
              "mr %lld nr %lld kc %lld mc %lld)\n",
              spec.c_str(), gm, gd, gm / gd, compile_s, (long long)c.mr, (long long)c.nr,
              (long long)c.kc, (long long)c.mc);
  return 0;
}
