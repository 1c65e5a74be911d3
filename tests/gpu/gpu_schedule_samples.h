// Shared by the GPU tests: every workload of the library (test sizes), its design spaces under
// the standard GPU rules with a device's limits, and a few random samples of each space that
// the postprocessors accept -- handed to a callback with the interpreter's reference result.
#pragma once

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/workload/library.h"
#include "std_rules_test_util.h"

namespace mt::gpu_test {

using namespace std_rules_test;

// MT_GPU_SAMPLES=n samples per design space (default 2), for hunting rare failures by hand.
inline int samples_per_space() {
  const char* s = std::getenv("MT_GPU_SAMPLES");
  return s ? std::max(1, std::atoi(s)) : 2;
}

struct Sampled {
  const std::string& spec;
  const Function& scheduled;
  const std::vector<NDArray>& reference;
  size_t space;
  int sample;
  std::string trace_json;
};

// Calls `f` for each accepted sample; returns the number of samples handed over.
// Workloads in f16 and bf16: device memory in the type, arithmetic in float rounded per
// operation (as the interpreter does); reductions reordered by the schedule differ by a few of
// the type's ulps, so they are compared with half_rtol.
inline std::vector<std::string> half_workload_specs() {
  return {"matmul(M=32,N=24,K=16,dtype=f16)", "dense(M=8,N=32,K=16,dtype=bf16)",
          "softmax(M=8,N=33,dtype=f16)", "layernorm(M=8,N=32,dtype=bf16)",
          "conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1,dtype=f16)"};
}
inline constexpr double kHalfRtol = 3e-2, kHalfAtol = 2e-2;

// `samples`: per design space (0: samples_per_space()); `specs`: the workloads (empty: the
// library's test sizes).
inline int for_each_gpu_sample(const TuneAttributes& attrs, size_t max_spaces,
                               const std::function<void(const Sampled&)>& f,
                               const std::function<void(const std::string&)>& after_workload = {},
                               int samples = 0, std::vector<std::string> specs = {}) {
  if (samples <= 0) samples = samples_per_space();
  if (specs.empty()) specs = test_workload_specs();
  ComponentSet set = gpu_set();
  set.attrs = attrs;
  Instances in = instantiate(set);
  int n = 0;
  for (const std::string& spec : specs) {
    SCOPED_TRACE(spec);
    Function func = make_workload(spec);
    std::vector<NDArray> reference = run(func);
    std::vector<std::shared_ptr<Schedule>> spaces = generate_design_spaces(func, in.rules, 1);
    EXPECT_FALSE(spaces.empty());
    if (spaces.size() > max_spaces) spaces.resize(max_spaces);
    for (size_t si = 0; si < spaces.size(); ++si)
      for (int k = 0; k < samples; ++k) {
        std::shared_ptr<Schedule> s;
        if (sample(func, spaces[si]->trace(), 300 + 31 * k + si, false, in.postprocs, &s) !=
            SampleOutcome::Ok)
          continue;
        ++n;
        f(Sampled{spec, s->func(), reference, si, k, s->trace().to_json()});
      }
    if (after_workload) after_workload(spec);
  }
  return n;
}

} // namespace mt::gpu_test
