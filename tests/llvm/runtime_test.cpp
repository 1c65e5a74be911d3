// The thread pool behind parallel loops, target detection/parsing, ahead-of-time output.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "metatune/llvm_cpu/runtime.hpp"
#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

TEST(LlvmRuntime, ParallelForRunsEveryIndexOnceIncludingNested) {
  const mt_llvm_runtime* rt = default_runtime();
  ASSERT_EQ(rt->version, MT_LLVM_RUNTIME_VERSION);
  struct Ctx {
    const mt_llvm_runtime* rt;
    std::vector<std::atomic<int>> hits;
  };
  Ctx ctx{rt, std::vector<std::atomic<int>>(1000)};
  rt->parallel_for(
      rt->self,
      [](int64_t i, void* c) {
        auto* x = static_cast<Ctx*>(c);
        // Nested call: must run (serially) instead of deadlocking.
        struct Inner {
          Ctx* x;
          int64_t base;
        } inner{x, i * 10};
        x->rt->parallel_for(
            x->rt->self,
            [](int64_t j, void* p) {
              auto* in = static_cast<Inner*>(p);
              in->x->hits[static_cast<size_t>(in->base + j)]++;
            },
            &inner, 10);
      },
      &ctx, 100);
  for (auto& h : ctx.hits)
    EXPECT_EQ(h.load(), 1);
}

TEST(LlvmRuntime, ParallelLoopWithClosureOfOuterVariables) {
  // for a (serial): for b (parallel): for c (parallel, nested): X[a, b, c] = a*100 + b*10 + c
  auto X = P::make_buffer("X", P::DType::i64(), {3, 7, 5});
  auto a = P::make_var("a"), b = P::make_var("b"), c = P::make_var("c");
  auto body =
      P::make_for(a, 3,
                  P::make_for(b, 7,
                              P::make_for(c, 5, P::make_store(X, {a, b, c}, a * 100 + b * 10 + c),
                                          P::ForKind::Parallel),
                              P::ForKind::Parallel));
  P::Program p{"nested_par", {X}, body};
  std::vector<int64_t> x(105, -1);
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    EXPECT_EQ(num_threads(), threads);
    std::fill(x.begin(), x.end(), -1);
    run(p, {x.data()});
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 7; ++j)
        for (int k = 0; k < 5; ++k)
          EXPECT_EQ(x[(i * 7 + j) * 5 + k], i * 100 + j * 10 + k);
  }
  set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

// A pool worker the OS does not run (here: held in a signal handler; in a model: its core taken
// by oneDNN's spinning OpenMP threads) must not hold the caller up: the caller claims every
// chunk itself and returns. A static range per thread waited for the worker's range forever.
std::atomic<bool> g_hold_worker{false};
std::atomic<bool> g_worker_held{false};
void hold_this_thread(int) {
  g_worker_held.store(true);
  while (g_hold_worker.load()) {
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  g_worker_held.store(false);
}

TEST(LlvmRuntime, AWorkerThatCannotRunDoesNotHoldTheCallerUp) {
  set_num_threads(2);
  const mt_llvm_runtime* rt = default_runtime();
  struct Seen {
    pthread_t caller;
    std::mutex m;
    std::vector<pthread_t> others;
    std::vector<std::atomic<int>> hits;
  };
  Seen seen{pthread_self(), {}, {}, std::vector<std::atomic<int>>(64)};
  auto record = [](int64_t i, void* c) {
    auto* s = static_cast<Seen*>(c);
    s->hits[static_cast<size_t>(i)]++;
    if (!pthread_equal(pthread_self(), s->caller)) {
      std::lock_guard<std::mutex> lk(s->m);
      s->others.push_back(pthread_self());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200)); // time for the worker to join
  };
  // Find the worker: it takes part in a job of slow iterations.
  for (int tries = 0; tries < 50 && seen.others.empty(); ++tries)
    rt->parallel_for(rt->self, record, &seen, 64);
  ASSERT_FALSE(seen.others.empty()) << "the pool's worker never ran a chunk";
  const pthread_t worker = seen.others.front();

  struct sigaction sa {};
  sa.sa_handler = hold_this_thread;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
  g_hold_worker.store(true);
  ASSERT_EQ(pthread_kill(worker, SIGUSR1), 0);
  for (int i = 0; i < 5000 && !g_worker_held.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(g_worker_held.load());

  for (auto& h : seen.hits)
    h = 0;
  seen.others.clear();
  auto job = std::async(std::launch::async, [&] {
    seen.caller = pthread_self();
    rt->parallel_for(rt->self, record, &seen, 64);
  });
  const bool returned = job.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  g_hold_worker.store(false); // let the worker go, and a caller stuck on it with it
  job.wait();
  EXPECT_TRUE(returned) << "parallel_for waited for a worker that could not run";
  for (auto& h : seen.hits)
    EXPECT_EQ(h.load(), 1);
  EXPECT_TRUE(seen.others.empty()) << "the held worker ran a chunk";
  set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(LlvmRuntime, KernelsCompileConcurrently) {
  // The builder compiles candidates on several threads at once: each compilation has its own
  // LLVM context, target machine and JIT.
  auto make = [](int64_t scale) {
    auto A = P::make_buffer("A", P::DType::f32(), {64});
    auto v = P::make_var("v");
    return P::Program{
        "scale" + std::to_string(scale),
        {A},
        P::make_for(v, 64, P::make_store(A, {v}, P::make_load(A, {v}) * static_cast<double>(scale)),
                    P::ForKind::Vectorized)};
  };
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 3; ++r) {
        auto k = jit_compile(make(t + 2));
        std::vector<float> a(64, 1.f);
        void* args[] = {a.data()};
        if ((*k)(args) == 0 && a[63] == static_cast<float>(t + 2)) ++ok[t];
      }
    });
  for (auto& th : threads)
    th.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(ok[t], 3) << "thread " << t;
}

TEST(LlvmTarget, HostFeaturesAreDetectedByFeature) {
  Target t = host_target();
  EXPECT_FALSE(t.triple.empty());
  EXPECT_FALSE(t.cpu.empty());
  EXPECT_NE(t.cpu, "generic"); // replaced by an x86-64 level when LLVM does not know the CPU
#if defined(__x86_64__)
  EXPECT_TRUE(t.has("sse2"));
  EXPECT_EQ(t.has("avx2"), static_cast<bool>(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(t.has("avx512f"), static_cast<bool>(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(t.vector_bits(), __builtin_cpu_supports("avx512f") ? 512
                             : __builtin_cpu_supports("avx2")  ? 256
                                                               : 128);
#endif
  // The string form parses back to the same target.
  Target back = parse_target(t.str());
  EXPECT_EQ(back.triple, t.triple);
  EXPECT_EQ(back.cpu, t.cpu);
  EXPECT_EQ(back.features, t.features);
}

TEST(LlvmTarget, TargetStringOverridesDetection) {
  Target t = parse_target("llvm -mcpu=skylake -mattr=+avx2,+fma,-avx512f");
  EXPECT_EQ(t.cpu, "skylake");
  EXPECT_TRUE(t.has("avx2"));
  EXPECT_FALSE(t.has("avx512f"));
  EXPECT_EQ(t.vector_bits(), 256);
  EXPECT_EQ(parse_target("llvm").cpu, host_target().cpu);
  EXPECT_THROW(parse_target("cuda -arch=sm_90"), std::invalid_argument);
  EXPECT_THROW(parse_target("llvm -mattr=avx2"), std::invalid_argument);
  EXPECT_THROW(parse_target("llvm -O3"), std::invalid_argument);
}

TEST(LlvmTarget, OverrideChangesTheGeneratedCode) {
  // 16-wide f32 vector add: SSE-only code uses xmm registers, AVX2 code ymm.
  auto A = P::make_buffer("A", P::DType::f32(), {16});
  auto v = P::make_var("v");
  P::Program p{"vadd",
               {A},
               P::make_for(v, 16, P::make_store(A, {v}, P::make_load(A, {v}) + 1.0),
                           P::ForKind::Vectorized)};
  CompileOptions sse;
  sse.target = "llvm -mcpu=x86-64 -mattr=+sse2";
  std::string asm_sse = emit_assembly(p, sse);
  EXPECT_NE(asm_sse.find("xmm"), std::string::npos);
  EXPECT_EQ(asm_sse.find("ymm"), std::string::npos);
  CompileOptions avx;
  avx.target = "llvm -mcpu=x86-64-v3";
  EXPECT_NE(emit_assembly(p, avx).find("ymm"), std::string::npos);
  // AVX-512 (implied by the CPU name, not listed): one zmm register holds all 16 lanes.
  Target zen4 = parse_target("llvm -mcpu=znver4");
  EXPECT_TRUE(zen4.has("avx512f"));
  EXPECT_TRUE(zen4.has("avx512vnni"));
  EXPECT_EQ(zen4.vector_bits(), 512);
  CompileOptions avx512;
  avx512.target = "llvm -mcpu=znver4";
  EXPECT_NE(emit_assembly(p, avx512).find("zmm"), std::string::npos);
  // Generated for an explicit target, the kernel still runs here (SSE2 is baseline x86-64).
  auto k = jit_compile(p, sse);
  std::vector<float> a(16, 1.f);
  void* args[] = {a.data()};
  ASSERT_EQ((*k)(args), 0);
  for (float x : a)
    EXPECT_EQ(x, 2.f);
}

TEST(LlvmAot, SharedLibraryRunsWithoutTheJit) {
  const int n = 24, m = 16, kk = 8;
  auto A = P::make_buffer("A", P::DType::f32(), {n, kk});
  auto B = P::make_buffer("B", P::DType::f32(), {kk, m});
  auto C = P::make_buffer("C", P::DType::f32(), {n, m});
  auto i = P::make_var("i"), j = P::make_var("j"), k = P::make_var("k");
  auto body = P::make_for(
      i, n,
      P::make_for(j, m,
                  P::make_seq({P::make_store(C, {i, j}, 0.0),
                               P::make_for(k, kk,
                                           P::make_store(C, {i, j},
                                                         P::make_load(C, {i, j}) +
                                                             P::make_load(A, {i, k}) *
                                                                 P::make_load(B, {k, j})))})),
      P::ForKind::Parallel);
  P::Program p{"aot matmul", {A, B, C}, body};
  auto dir = std::filesystem::temp_directory_path() / ("mt_llvm_aot_" + std::to_string(::getpid()));
  AotArtifacts art = compile_aot(p, dir.string(), "mm");
  ASSERT_TRUE(std::filesystem::exists(art.object_path));
  ASSERT_FALSE(art.shared_lib_path.empty()) << "no system linker (cc) found";

  std::ifstream jf(art.descriptor_path);
  nlohmann::json d = nlohmann::json::parse(jf);
  EXPECT_EQ(d["symbol"], "aot_matmul");
  ASSERT_EQ(d["params"].size(), 3u);
  EXPECT_EQ(d["params"][0]["name"], "A");
  EXPECT_EQ(d["params"][0]["dtype"], "f32");
  EXPECT_EQ(d["params"][0]["shape"], nlohmann::json({n, kk}));
  EXPECT_EQ(d["params"][0]["output"], false);
  EXPECT_EQ(d["params"][2]["output"], true);

  void* lib = dlopen(art.shared_lib_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto fn = reinterpret_cast<mt_llvm_kernel_fn>(dlsym(lib, d["symbol"].get<std::string>().c_str()));
  ASSERT_NE(fn, nullptr);
  auto a = random_floats(n * kk, 50), b = random_floats(kk * m, 51);
  std::vector<float> c(n * m), c2(n * m), want(n * m, 0.f);
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < kk; ++q)
      for (int s = 0; s < m; ++s)
        want[r * m + s] += a[r * kk + q] * b[q * m + s];
  void* args[] = {a.data(), b.data(), c.data()};
  ASSERT_EQ(fn(args, nullptr), 0); // no runtime: serial
  expect_close(c, want, 1e-5, 1e-6);
  void* args2[] = {a.data(), b.data(), c2.data()};
  ASSERT_EQ(fn(args2, default_runtime()), 0);
  expect_close(c2, want, 1e-5, 1e-6);
  dlclose(lib);
  std::filesystem::remove_all(dir);
}

// Several kernels in one library (a model's, as export_library writes it): each under its
// symbol, described in order, callable with and without the runtime.
TEST(LlvmAot, ExportedLibraryHoldsEveryKernel) {
  const int n = 40, m = 8, kk = 4;
  auto X = P::make_buffer("X", P::DType::f32(), {n});
  auto Y = P::make_buffer("Y", P::DType::f32(), {n});
  auto i = P::make_var("i");
  P::Program add{
      "add one",
      {X, Y},
      P::make_for(i, n, P::make_store(Y, {i}, P::make_load(X, {i}) + 1.0), P::ForKind::Parallel)};
  auto A = P::make_buffer("A", P::DType::f32(), {n, kk});
  auto B = P::make_buffer("B", P::DType::f32(), {kk, m});
  auto C = P::make_buffer("C", P::DType::f32(), {n, m});
  auto r = P::make_var("r"), j = P::make_var("j"), k = P::make_var("k");
  P::Program mm{
      "mm",
      {A, B, C},
      P::make_for(
          r, n,
          P::make_for(j, m,
                      P::make_seq({P::make_store(C, {r, j}, 0.0),
                                   P::make_for(k, kk,
                                               P::make_store(C, {r, j},
                                                             P::make_load(C, {r, j}) +
                                                                 P::make_load(A, {r, k}) *
                                                                     P::make_load(B, {k, j})))})),
          P::ForKind::Parallel)};
  auto dir =
      std::filesystem::temp_directory_path() / ("mt_llvm_export_" + std::to_string(::getpid()));
  std::string so = (dir / "kernels.so").string();
  EXPECT_THROW(export_kernel_library({add, mm}, {"k", "k"}, so), CodegenError);
  nlohmann::json d = nlohmann::json::parse(export_kernel_library({add, mm}, {"k_add", "k_mm"}, so));
  EXPECT_EQ(d["format"], "metatune-kernel-library");
  EXPECT_EQ(d["abi"], "mt_llvm_kernel");
  EXPECT_EQ(d["runtime"]["kind"], "mt_llvm_runtime");
  EXPECT_EQ(d["runtime"]["version"], MT_LLVM_RUNTIME_VERSION);
  ASSERT_EQ(d["kernels"].size(), 2u);
  EXPECT_EQ(d["kernels"][0]["symbol"], "k_add");
  EXPECT_EQ(d["kernels"][1]["symbol"], "k_mm");
  ASSERT_EQ(d["kernels"][1]["params"].size(), 3u);
  EXPECT_EQ(d["kernels"][1]["params"][2]["bytes"], n * m * 4);
  EXPECT_EQ(d["kernels"][1]["params"][2]["output"], true);
  // The object files are gone; only the library stays.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);

  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto f_add = reinterpret_cast<mt_llvm_kernel_fn>(dlsym(lib, "k_add"));
  auto f_mm = reinterpret_cast<mt_llvm_kernel_fn>(dlsym(lib, "k_mm"));
  ASSERT_NE(f_add, nullptr);
  ASSERT_NE(f_mm, nullptr);
  auto x = random_floats(n, 60), a = random_floats(n * kk, 61), b = random_floats(kk * m, 62);
  std::vector<float> y(n), c(n * m), want_y(n), want_c(n * m, 0.f);
  for (int q = 0; q < n; ++q)
    want_y[q] = static_cast<float>(static_cast<double>(x[q]) + 1.0);
  for (int p = 0; p < n; ++p)
    for (int q = 0; q < kk; ++q)
      for (int s = 0; s < m; ++s)
        want_c[p * m + s] += a[p * kk + q] * b[q * m + s];
  void* add_args[] = {x.data(), y.data()};
  void* mm_args[] = {a.data(), b.data(), c.data()};
  ASSERT_EQ(f_add(add_args, default_runtime()), 0);
  ASSERT_EQ(f_mm(mm_args, nullptr), 0);
  expect_close(y, want_y, 1e-6, 1e-6);
  expect_close(c, want_c, 1e-5, 1e-6);
  dlclose(lib);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace mt::llvm_cpu::test
