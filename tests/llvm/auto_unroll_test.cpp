// Lowering's automatic unrolling through the LLVM target: the unroll depth of a schedule
// changes the emitted IR -- explicitly unrolled loops are expanded by the code generator,
// loops unrolled by hint carry llvm.loop.unroll.full and LLVM's unroller expands them -- and
// every variant, and random schedules with random unroll requests, compute what the reference
// interpreter (or a double-precision matmul) computes.
#include <cctype>
#include <set>

#include <gtest/gtest.h>

#include "core/ir/printer.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/runtime/arguments.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/random_schedule.h"
#include "core/workload/library.h"
#include "../core/tiled_matmul_schedule.h"
#include "core_to_program.h"
#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

using unroll_test::kExplicit;
using unroll_test::kMaxStep;
using unroll_test::tiled_matmul;

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}


void expect_matmul(const P::Program& p) {
  std::vector<float> a = random_floats(64 * 64, 1), b = random_floats(64 * 64, 2);
  std::vector<float> c(64 * 64, NAN), want(64 * 64);
  for (int x = 0; x < 64; ++x)
    for (int y = 0; y < 64; ++y) {
      double acc = 0;
      for (int z = 0; z < 64; ++z)
        acc += double(a[x * 64 + z]) * double(b[z * 64 + y]);
      want[x * 64 + y] = static_cast<float>(acc);
    }
  run(p, {a.data(), b.data(), c.data()});
  expect_close(c, want, 1e-4, 1e-4);
}

// Explicit: the generated IR holds one vector store per unrolled copy (2 without unrolling,
// then 8 + 8, 8 + 32, 8 + 512).
TEST(LlvmAutoUnroll, ExplicitDepthExpandsTheLoopsInTheIR) {
  std::set<std::string> irs;
  for (auto [depth, stores] : {std::pair<int64_t, size_t>{0, 2}, {16, 16}, {64, 40}, {512, 520}}) {
    SCOPED_TRACE("depth " + std::to_string(depth));
    P::Program p = core_to_program(lower(tiled_matmul(depth, 1)));
    std::string ir = emit_ir(p, {}, false);
    EXPECT_EQ(occurrences(ir, "store <16 x float>"), stores);
    EXPECT_EQ(occurrences(ir, "!llvm.loop"), 0u);
    irs.insert(ir);
    expect_matmul(p);
  }
  EXPECT_EQ(irs.size(), 4u);
}

// By hint: the loops stay loops with llvm.loop.unroll.full on their latch (2, 3, 4 of them),
// and after LLVM's pipeline none of them is left.
TEST(LlvmAutoUnroll, HintBecomesUnrollMetadataThatLlvmHonours) {
  std::set<std::string> irs;
  for (auto [depth, loops] : {std::pair<int64_t, size_t>{0, 0}, {16, 2}, {64, 3}, {512, 4}}) {
    SCOPED_TRACE("depth " + std::to_string(depth));
    P::Program p = core_to_program(lower(tiled_matmul(depth, 0)));
    std::string ir = emit_ir(p, {}, false);
    EXPECT_EQ(occurrences(ir, "store <16 x float>"), 2u);
    EXPECT_EQ(occurrences(ir, "!llvm.loop !"), loops);
    EXPECT_EQ(occurrences(ir, "llvm.loop.unroll.full"), loops ? 1u : 0u);
    EXPECT_EQ(occurrences(emit_ir(p), "llvm.loop.unroll.full"), 0u) << "a hinted loop stayed";
    irs.insert(ir);
    expect_matmul(p);
  }
  EXPECT_EQ(irs.size(), 4u);
}

// Random schedules of every library workload with a random unroll request on the outermost
// loop of every block: compiled by the LLVM target, the same results as the interpreter.
class LlvmAutoUnrollWorkloads : public ::testing::TestWithParam<std::string> {};

TEST_P(LlvmAutoUnrollWorkloads, RandomRequestsMatchInterpreter) {
  constexpr int kSchedules = 3;
  Function f = make_workload(GetParam());
  auto make_args = [](const Function& g) {
    return make_arguments(g, {.seed = 1000, .lo = 0.1, .hi = 1.0});
  };
  std::vector<NDArray> ref = make_args(f);
  interpret(f, pointers(ref));
  std::vector<bool> outs = f.output_mask();
  int compiled = 0;
  for (int seed = 1; seed <= kSchedules; ++seed) {
    Schedule sch(f, static_cast<uint64_t>(seed + 100));
    apply_random_primitives(sch, 8);
    for (BlockRV b : sch.all_blocks()) {
      std::vector<LoopRV> loops = sch.get_loops(b);
      if (loops.empty()) continue;
      static const int64_t depths[] = {16, 64, 512};
      sch.annotate(loops.front(), kMaxStep, AnnValue(depths[sch.rng().uniform_int(0, 3)]));
      sch.annotate(loops.front(), kExplicit, AnnValue(sch.rng().uniform_int(0, 2)));
    }
    Function lowered = lower(sch.func());
    std::unique_ptr<JitKernel> k;
    try {
      k = jit_compile(core_to_program(lowered));
    } catch (const CodegenError& e) {
      // A vectorized reduction is refused whatever the unrolling.
      ASSERT_NE(std::string(e.what()).find("reduction"), std::string::npos) << e.what() << "\n"
                                                                            << print(lowered);
      continue;
    }
    ++compiled;
    std::vector<NDArray> got = make_args(lowered);
    std::vector<void*> ptrs;
    for (NDArray& a : got)
      ptrs.push_back(a.data());
    ASSERT_EQ((*k)(ptrs.data()), 0);
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!outs[i]) continue;
      std::string why;
      ASSERT_TRUE(allclose(got[i], ref[i], 1e-4, 1e-5, &why))
          << "seed " << seed << ", output " << f.params[i]->name << ": " << why << "\n"
          << print(lowered);
    }
  }
  EXPECT_GT(compiled, 0);
}

INSTANTIATE_TEST_SUITE_P(Library, LlvmAutoUnrollWorkloads,
                         ::testing::ValuesIn(test_workload_specs()), name_of);

} // namespace
} // namespace mt::llvm_cpu::test
