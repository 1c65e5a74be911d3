// Arguments for running a function on made-up data: inputs random and deterministic in a seed,
// outputs poisoned (NaN, integers -77) so that an element a kernel never writes shows up in a
// comparison. One definition for the reference result, the tests, the CLI's demo and the
// benchmarks, so that "the same seed" means the same data everywhere.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/function.h"
#include "core/runtime/ndarray.h"

namespace mt {

struct ArgumentFill {
  uint64_t seed = 1;
  double lo = -1, hi = 1;      // range of the random inputs
  bool poison_outputs = true;  // false: outputs stay as allocated (zero)
};

// One array per parameter of `f`, in order. Input i is filled from the random stream
// seed * 0x9E3779B97F4A7C15 + i (distinct per (seed, parameter): seed 2 does not repeat seed 1
// shifted by one parameter).
std::vector<NDArray> make_arguments(const Function& f, const ArgumentFill& fill = {});

// NaN for floating-point arrays, -77 for integers.
void poison(NDArray& a);

// Raw pointers to `args`, the form kernels and the interpreter take.
std::vector<NDArray*> pointers(std::vector<NDArray>& args);

} // namespace mt
