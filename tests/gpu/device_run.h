// Building a schedule with a GPU target plugin and running it on the target's device against
// the reference interpreter's result: shared by the OpenCL tests (PoCL here) and the CUDA
// tests that run where a device is lent.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/plugin/plugin_error.h"
#include "std_rules_test_util.h"

namespace mt::gpu_test {

using namespace std_rules_test;

// Runs a built module on fresh arguments of `scheduled` (inputs random, outputs NaN) and
// compares every parameter with the reference; "" when all match, else which and why.
inline std::string run_and_compare(PluginModule& m, const Function& scheduled,
                                   const std::vector<NDArray>& reference, double rtol,
                                   double atol) {
  std::vector<NDArray> args = make_args(scheduled);
  std::vector<NDArray*> ptrs;
  for (auto& a : args)
    ptrs.push_back(&a);
  m.run(ptrs);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string why;
    if (!allclose(args[i], reference[i], rtol, atol, &why))
      return "param " + std::to_string(i) + ": " + why;
  }
  return {};
}

// What became of the schedules handed to build_and_compare.
struct Tally {
  int built = 0, ok = 0, unsupported = 0;
  std::string last_unsupported;

  Tally& operator+=(const Tally& o) {
    built += o.built;
    ok += o.ok;
    unsupported += o.unsupported;
    if (!o.last_unsupported.empty()) last_unsupported = o.last_unsupported;
    return *this;
  }
};

// Builds `scheduled` with `target` and runs it; "" when it matches the reference. A schedule
// the generator does not support counts as such (with its reason), not as a failure.
inline std::string build_and_compare(PluginTarget& target, const Function& scheduled,
                                     const std::vector<NDArray>& reference, Tally& t,
                                     double rtol = 1e-4, double atol = 1e-5) {
  std::unique_ptr<PluginModule> m;
  try {
    m = target.build(lower(scheduled));
  } catch (const PluginError& e) {
    if (e.status() == MT_ERROR_UNSUPPORTED) {
      ++t.unsupported;
      t.last_unsupported = e.what();
      return {};
    }
    return std::string("build failed: ") + e.what();
  }
  ++t.built;
  std::string diff = run_and_compare(*m, scheduled, reference, rtol, atol);
  if (diff.empty()) ++t.ok;
  return diff;
}

} // namespace mt::gpu_test
