// Arguments of a function for the tests that run kernels through the host (llvm, oneDNN):
// random inputs and NaN outputs (so that an element never written shows), and the pointers
// PluginModule::run and the interpreter take.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/ir/function.h"
#include "core/runtime/ndarray.h"

namespace mt::test_args {

// Inputs uniform in [lo, hi) (integers: small values in it), seeded per param from `seed`;
// outputs NaN (integer outputs 77).
inline std::vector<NDArray> make_args(const Function& f, uint64_t seed = 7, double lo = -1,
                                      double hi = 1) {
  std::vector<NDArray> args;
  std::vector<bool> outs = f.output_mask();
  for (size_t i = 0; i < f.params.size(); ++i) {
    args.emplace_back(f.params[i]->dtype, f.params[i]->shape);
    if (outs[i])
      args.back().fill(f.params[i]->dtype.is_float() ? NAN : 77);
    else
      args.back().fill_random(seed + i, lo, hi);
  }
  return args;
}

inline std::vector<NDArray*> ptrs(std::vector<NDArray>& v) {
  std::vector<NDArray*> out;
  for (auto& a : v)
    out.push_back(&a);
  return out;
}

} // namespace mt::test_args
