// Every workload of the library, unscheduled and under random schedules, compiles with the LLVM
// target and matches core's reference interpreter (converted to the program tree by the test
// harness core_to_program, standing in for the plugin ABI's accessor walk).
#include <cctype>
#include <cmath>

#include <gtest/gtest.h>

#include "core/ir/printer.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/runtime/arguments.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/random_schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"
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

INSTANTIATE_TEST_SUITE_P(Library, LlvmWorkloads, ::testing::ValuesIn(test_workload_specs()),
                         name_of);

} // namespace
} // namespace mt::llvm_cpu::test
