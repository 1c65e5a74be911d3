// Every workload of the library, unscheduled and under random schedules, compiles with the LLVM
// target and matches core's reference interpreter (converted to the program tree by the test
// harness core_to_program, standing in for the plugin ABI's accessor walk).
#include <cctype>
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "core/ir/printer.h"
#include "core/ir/structural.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/runtime/arguments.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/random_schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"
#ifdef METATUNE_STD_RULES_PLUGIN
#include "core/tuner/reference_schedule.h" // metatune_tune is linked with the std rules
#endif
#include "core_to_program.h"
#include "metatune/llvm_cpu/compiler.hpp"
#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

constexpr int kSchedulesPerWorkload = 12;
constexpr double kRtol = 1e-4, kAtol = 1e-5;

std::vector<NDArray> make_args(const Function& f) {
  return make_arguments(f, {.seed = 1000, .lo = 0.1, .hi = 1.0});
}

std::vector<NDArray> interpret_ref(const Function& f) {
  auto args = make_args(f);
  interpret(f, pointers(args));
  return args;
}

// Compiles the lowered function with the LLVM target and runs it. Returns false (with the
// reason) when the code generator rejects the program (a vectorized reduction).
bool run_llvm(const Function& lowered, std::vector<NDArray>* out, std::string* rejected) {
  auto p = core_to_program(lowered);
  std::unique_ptr<JitKernel> k;
  try {
    k = jit_compile(p);
  } catch (const CodegenError& e) {
    std::string what = e.what();
    if (what.find("reduction") == std::string::npos) throw;
    *rejected = what;
    return false;
  }
  *out = make_args(lowered);
  std::vector<void*> ptrs;
  for (auto& a : *out)
    ptrs.push_back(a.data());
  EXPECT_EQ((*k)(ptrs.data()), 0);
  return true;
}

class LlvmWorkloads : public ::testing::TestWithParam<std::string> {};

TEST_P(LlvmWorkloads, RandomSchedulesMatchInterpreter) {
  Function f = make_workload(GetParam());
  std::vector<NDArray> ref = interpret_ref(f);
  auto outs = f.output_mask();
  int compiled = 0;
  for (int seed = 0; seed <= kSchedulesPerWorkload; ++seed) {
    Schedule sch(f, static_cast<uint64_t>(seed + 1));
    if (seed > 0) apply_random_primitives(sch, 10); // seed 0: the unscheduled function
    Function lowered = lower(sch.func());
    std::vector<NDArray> got;
    std::string rejected;
    bool ok = false;
    try {
      ok = run_llvm(lowered, &got, &rejected);
    } catch (const std::exception& e) {
      FAIL() << "seed " << seed << ": " << e.what() << "\ntrace: " << sch.trace().to_json() << "\n"
             << print(lowered);
    }
    if (!ok) continue;
    ++compiled;
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!outs[i]) continue;
      std::string why;
      ASSERT_TRUE(allclose(got[i], ref[i], kRtol, kAtol, &why))
          << "seed " << seed << ", output " << f.params[i]->name << ": " << why
          << "\ntrace: " << sch.trace().to_json() << "\n"
          << print(lowered);
    }
  }
  EXPECT_GT(compiled, kSchedulesPerWorkload / 2) << "most schedules were rejected";
}

#ifdef METATUNE_STD_RULES_PLUGIN
// `sch` of `f` built by the LLVM target: the interpreter's results.
void expect_schedule_matches_interpreter(const Function& f, const Schedule& sch) {
  std::vector<NDArray> ref = interpret_ref(f);
  auto outs = f.output_mask();
  Function lowered = lower(sch.func());
  std::vector<NDArray> got;
  std::string rejected;
  ASSERT_TRUE(run_llvm(lowered, &got, &rejected)) << rejected;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!outs[i]) continue;
    std::string why;
    ASSERT_TRUE(allclose(got[i], ref[i], kRtol, kAtol, &why))
        << "output " << f.params[i]->name << ": " << why << "\ntrace: " << sch.trace().to_json()
        << "\n"
        << print(lowered);
  }
}

// The schedule a GPU run computes its reference results with on the CPU: the same results as
// the interpreter for every workload.
TEST_P(LlvmWorkloads, ReferenceScheduleMatchesInterpreter) {
  Function f = make_workload(GetParam());
  expect_schedule_matches_interpreter(f, *reference_schedule(f));
}

// The schedule of kernel selection's fallbacks (a task without record or library kernel):
// the same results as the interpreter for every workload.
TEST_P(LlvmWorkloads, SpatialLoopsParallelMatchesInterpreter) {
  Function f = make_workload(GetParam());
  expect_schedule_matches_interpreter(f, *spatial_loops_parallel(f));
}
#endif

INSTANTIATE_TEST_SUITE_P(Library, LlvmWorkloads, ::testing::ValuesIn(test_workload_specs()),
                         name_of);

} // namespace
} // namespace mt::llvm_cpu::test

#ifdef METATUNE_STD_RULES_PLUGIN
namespace mt::llvm_cpu::test {
namespace {

// Which loop is innermost over the reduction block's update, by name, in the scheduled program.
std::string innermost_loop_over(const Function& f, const std::string& block) {
  std::string name;
  std::vector<const ForNode*> stack;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (s->kind == StmtKind::For) {
      stack.push_back(as<ForNode>(s));
      walk(as<ForNode>(s)->body);
      stack.pop_back();
      return;
    }
    if (s->kind == StmtKind::BlockRealize && as<BlockRealizeNode>(s)->block->name == block &&
        !stack.empty())
      name = stack.back()->loop_var->name;
    for (const Stmt& c : children(s))
      walk(c);
  };
  walk(f.body);
  return name;
}

// matmul walks B[k, j] down its columns with k innermost: the reduction moves out, j is the
// innermost loop of the update. dense's weight[j, k] is walked along its rows already: kept.
TEST(ReferenceSchedule, MovesTheReductionOutOnlyWhereRowsAreWalked) {
  Function mm = make_workload("matmul(M=32,N=48,K=16)");
  std::shared_ptr<Schedule> a = reference_schedule(mm);
  const std::string block = a->name_of(a->all_blocks().back());
  EXPECT_EQ(innermost_loop_over(mm, block), "k");
  EXPECT_NE(innermost_loop_over(a->func(), block), "k") << print(a->func());
  EXPECT_NE(a->trace().to_json().find("decompose_reduction"), std::string::npos);

  Function dense = make_workload("dense(M=32,N=48,K=16,bias=0,act=none)");
  std::shared_ptr<Schedule> b = reference_schedule(dense);
  EXPECT_EQ(b->trace().to_json().find("reorder"), std::string::npos) << b->trace().to_json();
  EXPECT_TRUE(structural_equal(b->func(), outer_loops_parallel(dense, 0)->func()));
}

// A batch of 1 outermost: the leading spatial loops are fused into one parallel loop, the
// innermost left alone; a reduction's spatial loops likewise, its reduction loops untouched.
TEST(SpatialLoopsParallel, FusesTheLeadingSpatialLoops) {
  Function bmm = make_workload("batch_matmul(B=1,M=8,N=16,K=4)");
  std::shared_ptr<Schedule> a = spatial_loops_parallel(bmm);
  const std::string t = a->trace().to_json();
  EXPECT_NE(t.find("\"fuse\""), std::string::npos) << t;
  EXPECT_NE(t.find("\"parallel\""), std::string::npos) << t;
  const std::string block = a->name_of(a->all_blocks().back());
  EXPECT_EQ(innermost_loop_over(a->func(), block), innermost_loop_over(bmm, block));
}

} // namespace
} // namespace mt::llvm_cpu::test
#endif
