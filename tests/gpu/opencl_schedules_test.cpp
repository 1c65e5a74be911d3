// Every workload of the library under random schedules of the standard GPU rules, built by the
// opencl plugin (the shared GPU code generator's OpenCL C) and run on the machine's OpenCL
// device -- PoCL on the CPU here, which runs work-groups with local memory and barriers -- and
// compared with the reference interpreter. Wrong thread binding, a missing barrier, a race on
// shared memory or a wrong cross-thread reduction show up as wrong results.
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/tuner/target_setup.h"
#include "gpu_schedule_samples.h"
#include "opencl_target.h"

namespace mt {
namespace {

using namespace std_rules_test;
using gpu_test::opencl;

using gpu_test::Tally;

// Runs `scheduled` through the opencl target; "" when it matches the reference.
std::string run_on_device(const Function& scheduled, const std::vector<NDArray>& reference,
                          Tally& t, double rtol = 1e-4, double atol = 1e-5) {
  return gpu_test::build_and_compare(*opencl().target, scheduled, reference, t, rtol, atol);
}

TEST(OpenClSchedules, EveryWorkloadUnderRandomGpuSchedulesMatchesTheInterpreter) {
  REQUIRE_OPENCL();
  Tally t, total;
  gpu_test::for_each_gpu_sample(
      opencl().attrs, 4,
      [&](const gpu_test::Sampled& s) {
        std::string diff = run_on_device(s.scheduled, s.reference, t);
        EXPECT_EQ(diff, "") << "space " << s.space << " sample " << s.sample << " trace "
                            << s.trace_json;
      },
      [&](const std::string& spec) {
        std::printf("[ opencl ] %-70s built %2d  correct %2d  unsupported %2d%s%s\n", spec.c_str(),
                    t.built, t.ok, t.unsupported, t.last_unsupported.empty() ? "" : "  last: ",
                    t.last_unsupported.substr(0, 600).c_str());
        // Most sampled schedules must run, or GPU tuning would starve.
        EXPECT_GT(t.ok, 0) << spec;
        total += t;
        t = Tally{};
      });
  std::printf("[ opencl ] total: built %d, correct %d, unsupported %d\n", total.built, total.ok,
              total.unsupported);
  EXPECT_GE(total.ok, 2 * total.unsupported);
}

TEST(OpenClSchedules, HalfPrecisionWorkloadsMatchTheInterpreter) {
  REQUIRE_OPENCL();
  Tally t;
  gpu_test::for_each_gpu_sample(
      opencl().attrs, 3,
      [&](const gpu_test::Sampled& s) {
        std::string diff =
            run_on_device(s.scheduled, s.reference, t, gpu_test::kHalfRtol, gpu_test::kHalfAtol);
        EXPECT_EQ(diff, "") << s.spec << " space " << s.space << " sample " << s.sample << " trace "
                            << s.trace_json;
      },
      {}, 2, gpu_test::half_workload_specs());
  std::printf("[ opencl ] f16/bf16: built %d, correct %d, unsupported %d\n", t.built, t.ok,
              t.unsupported);
  EXPECT_GE(t.ok, 10);
}

} // namespace
} // namespace mt
