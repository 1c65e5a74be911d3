// The GPU code generator on programs made for its corners: a serial host loop around a kernel
// (its variable becomes a kernel argument), an unscheduled program (one-thread kernels), and
// what it refuses with the reason -- a reduction across blocks, and threads handing data to
// each other under divergent control flow, where no barrier can be placed. The first two run
// on the OpenCL device (PoCL here) against the interpreter.
#include <nlohmann/json.hpp>

#include "core/plugin/plugin_error.h"
#include "core_to_program.h"
#include "gpu_schedule_samples.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "opencl_target.h"

namespace mt {
namespace {

namespace G = mt::gpu_codegen;
namespace P = mt::sdk::program;
using namespace std_rules_test;

std::string run_and_compare(PluginTarget& target, const Function& f, const Function& scheduled) {
  std::vector<NDArray> reference = run(f);
  std::vector<NDArray> args = make_args(scheduled);
  std::vector<NDArray*> ptrs;
  for (auto& a : args)
    ptrs.push_back(&a);
  target.build(lower(scheduled))->run(ptrs);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string why;
    if (!allclose(args[i], reference[i], 1e-4, 1e-5, &why)) return why;
  }
  return {};
}

TEST(GpuCodegen, ASerialLoopAboveTheBoundLoopsStaysOnTheHost) {
  REQUIRE_OPENCL();
  PluginTarget& target = *gpu_test::opencl().target;
  Function f = make_workload("elementwise(M=6,N=40,ops=add_relu)");
  Schedule sch(f);
  for (BlockRV b : sch.all_blocks()) {
    if (sch.name_of(b) == sch.name_of(sch.all_blocks().back())) continue;
    sch.compute_inline(b);
  }
  BlockRV b = sch.all_blocks().back();
  auto loops = sch.get_loops(b);
  auto j = sch.split(loops[1], {int64_t{-1}, int64_t{16}});
  sch.bind(j[0], "blockIdx.x");
  sch.bind(j[1], "threadIdx.x"); // 48 threads for 40 columns: guarded
  G::KernelPlan plan = G::plan_kernels(llvm_cpu::test::core_to_program(lower(sch.func())));
  ASSERT_EQ(plan.kernels.size(), 1u);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].kernel, -1); // a host loop over i
  EXPECT_EQ(plan.steps[0].extent, 6);
  EXPECT_EQ(plan.kernels[0].host_vars.size(), 1u);
  EXPECT_EQ(plan.kernels[0].dims.grid[0], 3);
  EXPECT_EQ(plan.kernels[0].dims.block[0], 16);
  EXPECT_EQ(run_and_compare(target, f, sch.func()), "");
}

TEST(GpuCodegen, AnUnscheduledProgramRunsAsOneThreadKernels) {
  REQUIRE_OPENCL();
  PluginTarget& target = *gpu_test::opencl().target;
  for (const char* spec : {"softmax(M=4,N=10)", "matmul(M=8,N=6,K=5)"}) {
    Function f = make_workload(spec);
    G::KernelPlan plan = G::plan_kernels(llvm_cpu::test::core_to_program(lower(f)));
    for (const auto& k : plan.kernels)
      EXPECT_EQ(k.dims.threads_per_block() * k.dims.grid[0] * k.dims.grid[1] * k.dims.grid[2], 1);
    EXPECT_EQ(run_and_compare(target, f, f), "") << spec;
  }
}

TEST(GpuCodegen, AReductionAcrossBlocksIsRefusedWithTheReason) {
  Function f = make_workload("norm(B=1,M=8,N=16)");
  Schedule sch(f);
  BlockRV sq = sch.all_blocks()[0];
  auto loops = sch.get_loops(sq);
  LoopRV r = sch.fuse({loops[1], loops[2]});
  auto parts = sch.split(r, {int64_t{-1}, int64_t{32}});
  sch.bind(parts[0], "blockIdx.x"); // the reduction spread over blocks
  sch.bind(parts[1], "threadIdx.x");
  P::Program p = llvm_cpu::test::core_to_program(lower(sch.func()));
  try {
    G::write_kernels(G::plan_kernels(p), *G::opencl_dialect());
    FAIL() << "written";
  } catch (const G::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("across the blocks of 'blockIdx.x'"), std::string::npos)
        << e.what();
  }
}

TEST(GpuCodegen, HandingDataBetweenThreadsUnderADivergentBranchIsRefused) {
  // for b in 1 (blockIdx.x): for t in 4 (threadIdx.x): if t < 2: S[t] = A[t]; out[t] = S[3 - t]
  auto A = P::make_buffer("A", P::DType::f32(), {4});
  auto out = P::make_buffer("out", P::DType::f32(), {4});
  auto S = P::make_buffer("S", P::DType::f32(), {4}, "shared");
  P::Expr b = P::make_var("b"), t = P::make_var("t");
  P::Stmt body = P::make_seq({P::make_store(S, {t}, P::make_load(A, {t})),
                              P::make_store(out, {t}, P::make_load(S, {3 - t}))});
  P::Stmt k =
      P::make_for(b, 1,
                  P::make_allocate(S, P::make_for(t, 4, P::make_if(t < 2, body),
                                                  P::ForKind::ThreadBinding, {}, "threadIdx.x")),
                  P::ForKind::ThreadBinding, {}, "blockIdx.x");
  P::Program p{"handoff", {A, out}, k};
  try {
    G::write_kernels(G::plan_kernels(p), *G::cuda_dialect());
    FAIL() << "written";
  } catch (const G::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("divergent control flow"), std::string::npos) << e.what();
  }
  // Without the branch the barrier has its place, between the store and the load.
  P::Stmt uniform = P::make_for(
      b, 1,
      P::make_allocate(S, P::make_for(t, 4, body, P::ForKind::ThreadBinding, {}, "threadIdx.x")),
      P::ForKind::ThreadBinding, {}, "blockIdx.x");
  std::string code =
      G::write_kernels(G::plan_kernels({"handoff", {A, out}, uniform}), *G::cuda_dialect()).code;
  size_t store = code.find("S[t] = A[t]"), sync = code.find("__syncthreads();"),
         load = code.find("out[t] = S[");
  ASSERT_NE(sync, std::string::npos) << code;
  EXPECT_LT(store, sync) << code;
  EXPECT_LT(sync, load) << code;
}

P::Stmt thread_for(P::Expr v, int64_t n, P::Stmt body, const char* tag) {
  return P::make_for(std::move(v), n, std::move(body), P::ForKind::ThreadBinding, {}, tag);
}

// The reason the generator gives for `p`, or "" if it writes it.
std::string refusal(const P::Program& p) {
  try {
    G::write_kernels(G::plan_kernels(p), *G::opencl_dialect());
    return {};
  } catch (const G::UnsupportedError& e) {
    return e.what();
  }
}

// Shapes the standard rules do not make today but the schedule language allows, where running
// the loops in parallel would not compute what the serial program does: refused, with why.
TEST(GpuCodegen, ProgramsThatThreadsCannotRunAsWrittenAreRefusedWithTheReason) {
  auto A = P::make_buffer("A", P::DType::f32(), {16});
  auto out = P::make_buffer("out", P::DType::f32(), {16});
  auto X = P::make_buffer("X", P::DType::f32(), {2});
  P::Expr b = P::make_var("b"), t = P::make_var("t"), t2 = P::make_var("t2");
  // Nested loops of one tag whose inner body uses the outer variable (they share the index).
  P::Stmt nested = thread_for(
      b, 1,
      thread_for(t, 4,
                 thread_for(t2, 4, P::make_store(out, {t * 4 + t2}, P::make_load(A, {t * 4 + t2})),
                            "threadIdx.x"),
                 "threadIdx.x"),
      "blockIdx.x");
  EXPECT_NE(refusal({"nested", {A, out}, nested}).find("nested under another"), std::string::npos);
  // A reduction across threads whose result is read inside the loop that reduces it.
  P::Stmt red = P::make_seq({P::make_if(eq(t2, 0), P::make_store(X, {0}, 0.0)),
                             P::make_store(X, {0}, P::make_load(X, {0}) + P::make_load(A, {t2}))});
  P::Stmt read_inside = thread_for(
      b, 1,
      thread_for(
          t, 8,
          P::make_seq({thread_for(t2, 8, red, "threadIdx.x"),
                       P::make_store(out, {t}, P::make_load(A, {t}) / P::make_load(X, {0}))}),
          "threadIdx.x"),
      "blockIdx.x");
  EXPECT_NE(refusal({"xrread", {A, out, X}, read_inside}).find("is read inside the loop"),
            std::string::npos);
  // An update outside the thread loops of the block: every thread would apply it.
  P::Stmt rmw = thread_for(
      b, 2,
      P::make_seq({thread_for(t, 4, P::make_store(out, {b * 4 + t}, P::make_load(A, {b * 4 + t})),
                              "threadIdx.x"),
                   P::make_store(X, {b}, P::make_load(X, {b}) + 1.0)}),
      "blockIdx.x");
  EXPECT_NE(refusal({"rmw", {A, out, X}, rmw}).find("outside every loop bound to threadIdx.x"),
            std::string::npos);
  // A per-thread array written by one thread loop and read at another thread's index.
  auto L = P::make_buffer("L", P::DType::f32(), {8}, "local");
  P::Stmt handoff = thread_for(
      b, 1,
      P::make_allocate(
          L,
          P::make_seq({thread_for(t, 8, P::make_store(L, {t}, P::make_load(A, {t})), "threadIdx.x"),
                       thread_for(t2, 8, P::make_store(out, {t2}, P::make_load(L, {7 - t2})),
                                  "threadIdx.x")})),
      "blockIdx.x");
  EXPECT_NE(refusal({"handoff", {A, out}, handoff}).find("its threads would share it"),
            std::string::npos);
}

// Virtual threads interleave only where that is the serial program's meaning: an update that
// does not use the virtual thread runs once per virtual thread, so the loop stays a loop.
TEST(GpuCodegen, AVirtualThreadLoopThatCannotInterleaveStaysALoop) {
  auto X = P::make_buffer("X", P::DType::f32(), {1});
  P::Expr b = P::make_var("b"), v = P::make_var("v");
  P::Stmt body = thread_for(
      b, 1, thread_for(v, 2, P::make_store(X, {0}, P::make_load(X, {0}) + 1.0), "vthread"),
      "blockIdx.x");
  std::string code =
      G::write_kernels(G::plan_kernels({"vonce", {X}, body}), *G::opencl_dialect()).code;
  EXPECT_NE(code.find("for (int v = 0; v < 2; ++v)"), std::string::npos) << code;
}

// Virtual threads are injected, not looped: the shared tiles are fetched once per k-tile for
// all of them and each keeps its own accumulators (one array, a copy per virtual thread).
TEST(GpuCodegen, VirtualThreadsShareTheFetchAndKeepTheirOwnAccumulators) {
  REQUIRE_OPENCL();
  PluginTarget& target = *gpu_test::opencl().target;
  Function f = make_workload("matmul(M=64,N=64,K=64)");
  ComponentSet set = gpu_set();
  Instances in = instantiate(set);
  auto spaces = generate_design_spaces(f, in.rules, 1);
  ASSERT_FALSE(spaces.empty());
  int checked = 0;
  for (uint64_t seed = 1; seed < 40 && checked < 2; ++seed) {
    std::shared_ptr<Schedule> s;
    if (sample(f, spaces[0]->trace(), seed, false, in.postprocs, &s) != SampleOutcome::Ok) continue;
    P::Program p = llvm_cpu::test::core_to_program(lower(s->func()));
    // The vthread loop and the accumulator allocated under it.
    int64_t vthreads = 0, accumulator = 0;
    P::visit_stmts(p.body, [&](const P::Stmt& x) {
      if (x->kind == P::StmtKind::For && x->thread_tag.rfind("vthread", 0) == 0)
        vthreads = x->extent;
      if (vthreads > 1 && x->kind == P::StmtKind::Allocate && x->buffer->scope == "local")
        accumulator = x->buffer->num_elements();
      return true;
    });
    if (vthreads < 2 || accumulator == 0) continue;
    std::string code = G::write_kernels(G::plan_kernels(p), *G::cuda_dialect()).code;
    EXPECT_NE(code.find("[" + std::to_string(vthreads * accumulator) + "];"), std::string::npos)
        << vthreads << " x " << accumulator << "\n"
        << code;
    EXPECT_EQ(run_and_compare(target, f, s->func()), "") << s->trace().to_json();
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no sample with virtual threads";
}

} // namespace
} // namespace mt
