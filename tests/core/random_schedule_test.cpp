// The foundation's main property: for every workload of the library, random sequences of
// schedule primitives (with random samples) compute the same result as the unscheduled
// function in the reference interpreter, and their traces replay to equal functions.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ir/printer.h"
#include "core/ir/structural.h"
#include "core/lower/interpreter.h"
#include "core/runtime/arguments.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/random_schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"

namespace mt {
namespace {

constexpr int kSchedulesPerWorkload = 200;
// f32 results of reordered reductions (rfactor, split reductions) differ in rounding only.
constexpr double kRtol = 1e-4, kAtol = 1e-5;

std::vector<NDArray> run(const Function& f) {
  std::vector<NDArray> args = make_arguments(f, {.seed = 1000, .lo = 0.1, .hi = 1.0});
  interpret(f, pointers(args));
  return args;
}

class RandomSchedules : public ::testing::TestWithParam<std::string> {};

TEST_P(RandomSchedules, MatchUnscheduledAndReplay) {
  Function f = make_workload(GetParam());
  std::vector<NDArray> ref = run(f);
  auto outs = f.output_mask();
  int applied = 0;
  for (int seed = 1; seed <= kSchedulesPerWorkload; ++seed) {
    Schedule sch(f, static_cast<uint64_t>(seed));
    RandomScheduleStats st = apply_random_primitives(sch, 10);
    applied += st.applied;
    std::vector<NDArray> got;
    try {
      got = run(sch.func());
    } catch (const std::exception& e) {
      FAIL() << "seed " << seed << ": " << e.what() << "\ntrace: " << sch.trace().to_json()
             << "\n" << print(sch.func());
    }
    for (size_t i = 0; i < ref.size(); ++i) {
      if (!outs[i]) continue;
      std::string why;
      ASSERT_TRUE(allclose(got[i], ref[i], kRtol, kAtol, &why))
          << "seed " << seed << ", output " << f.params[i]->name << ": " << why
          << "\ntrace: " << sch.trace().to_json() << "\n" << print(sch.func());
    }
    // Every 10th schedule: the JSON trace replays to a structurally equal function.
    if (seed % 10 == 0) {
      Trace t = Trace::from_json(sch.trace().to_json());
      Schedule re(f, 12345);
      t.apply_to(re, true);
      ASSERT_TRUE(structural_equal(re.func(), sch.func())) << "seed " << seed;
      Schedule re2(f, 777);
      t.simplified().apply_to(re2, true);
      ASSERT_TRUE(structural_equal(re2.func(), sch.func())) << "seed " << seed << " (simplified)";
    }
  }
  // The generator must actually transform things, not be refused every time.
  EXPECT_GT(applied, kSchedulesPerWorkload * 3) << "too few primitives applied";
}

std::string name_of(const ::testing::TestParamInfo<std::string>& info) {
  std::string n;
  for (char c : info.param) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  while (!n.empty() && n.back() == '_') n.pop_back();
  return n;
}

INSTANTIATE_TEST_SUITE_P(Library, RandomSchedules, ::testing::ValuesIn(test_workload_specs()),
                         name_of);

} // namespace
} // namespace mt
