// Matmul 1024^3 f32: a hand-written, GotoBLAS-style program tree (B packed into NR-wide panels,
// cache blocking, an MR x NR register tile held in a local accumulator, FMA, parallel over row
// blocks) compiled by the LLVM CPU target, timed against oneDNN's sgemm in the same process.
// It measures the ceiling of the code generator, not of the search.
//
//   bench_matmul_llvm [--size N] [--mr R] [--nr 16|32] [--kc K] [--mc M] [--repeats R]
//                     [--target STR] [--asm FILE] [--threads T] [--pack-a 0|1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>

#include "metatune/llvm_cpu/compiler.hpp"
#include "metatune/llvm_cpu/runtime.hpp"
#include "metatune/llvm_cpu/target.hpp"

namespace P = mt::sdk::program;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  int64_t n = 1024;
  int64_t mr = 0, nr = 0, kc = 512, mc = 96; // 0: from the target's vector width (below)
  int repeats = 20;
  bool pack_a = true; // pack each MC x KC block of A into MR-row panels
  int threads = 0;    // 0 = all hardware threads (oneDNN: set OMP_NUM_THREADS to match)
  std::string target;
  std::string asm_path; // write the generated assembly here
};

// C[M, N] = A[M, K] * B[K, N], all row-major, M = N = K = n.
//
//   allocate Bp[N/NR, K, NR]                       (packed B: a 16-wide panel is contiguous)
//   parallel for jp: for k: for j (vectorized): Bp[jp, k, j] = B[k, jp*NR + j]
//   parallel for mo in ceil(M/MC):                 (row blocks: A block stays in L2)
//     for kc in K/KC:                              (B micro-panel KC x NR stays in L1)
//       for jo in N/NR:
//         for mi in MC/MR:                         (+ a tail tile when MR does not divide)
//           allocate acc[MR, NR]                   (registers after SROA)
//           acc = kc == 0 ? 0 : C[rows, cols]
//           for k in KC: for ii in MR (unrolled): for j in NR (vectorized):
//             acc[ii, j] += A[row + ii, kc*KC + k] * Bp[jo, kc*KC + k, j]
//           C[rows, cols] = acc
P::Program build_matmul(const Config& c) {
  const int64_t n = c.n, MR = c.mr, NR = c.nr, KC = c.kc, MC = c.mc;
  auto A = P::make_buffer("A", P::DType::f32(), {n, n});
  auto B = P::make_buffer("B", P::DType::f32(), {n, n});
  auto C = P::make_buffer("C", P::DType::f32(), {n, n});
  auto Bp = P::make_buffer("Bp", P::DType::f32(), {n / NR, n, NR}, "global");

  auto jp = P::make_var("jp"), pk = P::make_var("pk"), pj = P::make_var("pj");
  auto pack = P::make_for(
      jp, n / NR,
      P::make_for(pk, n,
                  P::make_for(pj, NR,
                              P::make_store(Bp, {jp, pk, pj}, P::make_load(B, {pk, jp * NR + pj})),
                              P::ForKind::Vectorized)),
      P::ForKind::Parallel);

  auto mo = P::make_var("mo"), kc = P::make_var("kc"), jo = P::make_var("jo");
  // One MR' x NR tile at row `row0` (rows MR' = MR, or the tail).
  // A element (row0 + ii, kc*KC + k) of the tile: from A itself, or from the packed block.
  using ALoad = std::function<P::Expr(P::Expr ii, P::Expr k)>;
  auto tile = [&](P::Expr row0, int64_t rows, const ALoad& a_at) {
    auto acc = P::make_buffer("acc", P::DType::f32(), {rows, NR}, "local");
    auto ii = P::make_var("ii"), j = P::make_var("j"), k = P::make_var("k");
    auto ii2 = P::make_var("ii2"), j2 = P::make_var("j2"), ii3 = P::make_var("ii3"),
         j3 = P::make_var("j3");
    auto init = P::make_for(
        ii2, rows,
        P::make_for(
            j2, NR,
            P::make_if(P::eq(kc, 0), P::make_store(acc, {ii2, j2}, 0.0),
                       P::make_store(acc, {ii2, j2}, P::make_load(C, {row0 + ii2, jo * NR + j2}))),
            P::ForKind::Vectorized),
        P::ForKind::Unrolled);
    auto kk = kc * KC + k;
    auto update = P::make_for(
        k, KC,
        P::make_for(ii, rows,
                    P::make_for(j, NR,
                                P::make_store(acc, {ii, j},
                                              P::make_load(acc, {ii, j}) +
                                                  a_at(ii, k) * P::make_load(Bp, {jo, kk, j})),
                                P::ForKind::Vectorized),
                    P::ForKind::Unrolled));
    auto store = P::make_for(
        ii3, rows,
        P::make_for(j3, NR,
                    P::make_store(C, {row0 + ii3, jo * NR + j3}, P::make_load(acc, {ii3, j3})),
                    P::ForKind::Vectorized),
        P::ForKind::Unrolled);
    return P::make_allocate(acc, P::make_seq({init, update, store}));
  };

  // Row blocks: full blocks of MC rows, then what is left (a multiple of MR plus a tail).
  const int64_t full_blocks = n / MC;
  const int64_t rest = n - full_blocks * MC;
  auto block = [&](P::Expr row_base, int64_t rows) {
    auto mi = P::make_var("mi");
    const int64_t panels = rows / MR, tail = rows % MR;
    auto Ap = P::make_buffer("Ap", P::DType::f32(), {panels + (tail ? 1 : 0), KC, MR}, "local");
    auto a_at = [&](P::Expr panel) -> ALoad {
      if (c.pack_a) return [=](P::Expr ii, P::Expr k) { return P::make_load(Ap, {panel, k, ii}); };
      return [=](P::Expr ii, P::Expr k) {
        return P::make_load(A, {row_base + panel * MR + ii, kc * KC + k});
      };
    };
    std::vector<P::Stmt> parts;
    if (panels > 0)
      parts.push_back(P::make_for(mi, panels, tile(row_base + mi * MR, MR, a_at(mi))));
    if (tail) parts.push_back(tile(row_base + panels * MR, tail, a_at(P::int_imm(panels))));
    P::Stmt kc_body = P::make_for(jo, n / NR, P::make_seq(parts));
    if (!c.pack_a) return P::make_for(kc, n / KC, kc_body);
    // Ap[p, k, i] = A[row_base + p*MR + i, kc*KC + k]: the MR rows of a panel interleaved.
    auto pack_panel = [&](P::Expr p, int64_t r) {
      auto pk = P::make_var("apk"), pi = P::make_var("api");
      return P::make_for(
          pk, KC,
          P::make_for(pi, r,
                      P::make_store(Ap, {p, pk, pi},
                                    P::make_load(A, {row_base + p * MR + pi, kc * KC + pk})),
                      P::ForKind::Unrolled));
    };
    auto pm = P::make_var("apm");
    std::vector<P::Stmt> pack_parts;
    if (panels > 0) pack_parts.push_back(P::make_for(pm, panels, pack_panel(pm, MR)));
    if (tail) pack_parts.push_back(pack_panel(P::int_imm(panels), tail));
    return P::make_allocate(
        Ap, P::make_for(kc, n / KC, P::make_seq({P::make_seq(pack_parts), kc_body})));
  };
  // The short last block is one more parallel iteration, so no thread runs it alone.
  P::Stmt blocks = block(mo * MC, MC);
  if (rest) blocks = P::make_if(mo < full_blocks, blocks, block(mo * MC, rest));
  auto compute = P::make_for(mo, full_blocks + (rest ? 1 : 0), blocks, P::ForKind::Parallel);
  auto body = P::make_allocate(Bp, P::make_seq({pack, compute}));
  return {"matmul_llvm", {A, B, C}, body};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Timing {
  double wall = 0; // median seconds per call
  double cpu = 0;  // median process CPU seconds per call
};

// Times `a` and `b` alternately (a, b, a, b, ...) so that load from other processes affects
// both alike. Process CPU time is also recorded: on a busy machine it is the steadier measure
// of a single-threaded kernel (with several threads, OpenMP's spin-waiting inflates it).
template <typename A, typename B>
std::pair<Timing, Timing> time_interleaved(A&& a, B&& b, int repeats) {
  for (int i = 0; i < 3; ++i) {
    a();
    b();
  }
  std::vector<double> wa, wb, ca, cb;
  for (int i = 0; i < repeats; ++i) {
    double c0 = cpu_seconds();
    auto t0 = Clock::now();
    a();
    double c1 = cpu_seconds();
    auto t1 = Clock::now();
    b();
    double c2 = cpu_seconds();
    auto t2 = Clock::now();
    wa.push_back(std::chrono::duration<double>(t1 - t0).count());
    wb.push_back(std::chrono::duration<double>(t2 - t1).count());
    ca.push_back(c1 - c0);
    cb.push_back(c2 - c1);
  }
  return {{median(wa), median(ca)}, {median(wb), median(cb)}};
}

} // namespace

int main(int argc, char** argv) {
  // oneDNN's OpenMP threads spin for milliseconds after each call by default and take the
  // cores from the llvm kernel timed next (measured on a 2-vCPU Sapphire Rapids VM: the llvm
  // kernel at 111 GFLOPS instead of 164-180). libgomp reads the policy when it is loaded, which
  // for this binary is before main: set it and start again, unless the caller chose one.
  if (!std::getenv("OMP_WAIT_POLICY")) {
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    ::execv("/proc/self/exe", argv);
    std::perror("bench_matmul_llvm: re-exec with OMP_WAIT_POLICY=PASSIVE"); // and go on
  }
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--size")
      c.n = std::atoll(v.c_str());
    else if (k == "--mr")
      c.mr = std::atoll(v.c_str());
    else if (k == "--nr")
      c.nr = std::atoll(v.c_str());
    else if (k == "--kc")
      c.kc = std::atoll(v.c_str());
    else if (k == "--mc")
      c.mc = std::atoll(v.c_str());
    else if (k == "--repeats")
      c.repeats = std::atoi(v.c_str());
    else if (k == "--target")
      c.target = v;
    else if (k == "--threads")
      c.threads = std::atoi(v.c_str());
    else if (k == "--pack-a")
      c.pack_a = std::atoi(v.c_str()) != 0;
    else if (k == "--asm")
      c.asm_path = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  // The register tile the target's registers hold: 6 x 2 vectors of 8 with 16 AVX2 registers,
  // 12 x 2 vectors of 16 with 32 AVX-512 ones (measured on Sapphire Rapids: 12x32 at 0.81-0.86
  // of oneDNN, 6x16 at 0.57-0.58).
  const bool wide = mt::llvm_cpu::parse_target(c.target).vector_bits() >= 512;
  if (c.mr == 0) c.mr = wide ? 12 : 6;
  if (c.nr == 0) c.nr = wide ? 32 : 16;
  if (c.n % c.nr != 0 || c.n % c.kc != 0) {
    std::fprintf(stderr, "--size must be a multiple of --nr and --kc\n");
    return 2;
  }
  if (c.threads > 0) mt::llvm_cpu::set_num_threads(c.threads);
  const int64_t n = c.n;
  std::vector<float> a(n * n), b(n * n), c1(n * n), c2(n * n);
  uint32_t s = 12345;
  for (auto* v : {&a, &b})
    for (auto& x : *v) {
      s = s * 1664525u + 1013904223u;
      x = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.5f;
    }

  P::Program prog = build_matmul(c);
  mt::llvm_cpu::CompileOptions opts;
  opts.target = c.target;
  if (!c.asm_path.empty()) {
    std::string text = mt::llvm_cpu::emit_assembly(prog, opts);
    if (FILE* f = std::fopen(c.asm_path.c_str(), "w")) {
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
  }
  std::vector<double> compile_s;
  std::unique_ptr<mt::llvm_cpu::JitKernel> kernel;
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    kernel = mt::llvm_cpu::jit_compile(prog, opts);
    compile_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  void* args[] = {a.data(), b.data(), c1.data()};
  auto [t_llvm, t_dnnl] = time_interleaved(
      [&] { (*kernel)(args); },
      [&] { dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c2.data(), n); },
      c.repeats);
  double max_err = 0;
  for (int64_t i = 0; i < n * n; ++i)
    max_err = std::max(max_err, static_cast<double>(std::fabs(c1[i] - c2[i])));
  double flops = 2.0 * n * n * n;
  double g_llvm = flops / t_llvm.wall * 1e-9, g_dnnl = flops / t_dnnl.wall * 1e-9;
  std::printf("matmul %lldx%lldx%lld f32, %d threads, target %s\n", (long long)n, (long long)n,
              (long long)n, mt::llvm_cpu::num_threads(), kernel->target().str().c_str());
  std::printf("  tile MR=%lld NR=%lld KC=%lld MC=%lld, A %s\n", (long long)c.mr, (long long)c.nr,
              (long long)c.kc, (long long)c.mc, c.pack_a ? "packed" : "in place");
  std::printf("  llvm   : %8.3f ms  %7.1f GFLOPS\n", t_llvm.wall * 1e3, g_llvm);
  std::printf("  oneDNN : %8.3f ms  %7.1f GFLOPS\n", t_dnnl.wall * 1e3, g_dnnl);
  std::printf("  ratio llvm/oneDNN = %.3f (wall clock)\n", g_llvm / g_dnnl);
  if (mt::llvm_cpu::num_threads() == 1)
    std::printf("  single thread, per CPU second: llvm %.1f, oneDNN %.1f GFLOPS, ratio %.3f\n",
                flops / t_llvm.cpu * 1e-9, flops / t_dnnl.cpu * 1e-9, t_dnnl.cpu / t_llvm.cpu);
  std::printf("  median compile time = %.1f ms\n", median(compile_s) * 1e3);
  std::printf("  max |llvm - oneDNN| = %.3g\n", max_err);
  return max_err < 1e-2 ? 0 : 1;
}
