// Reference interpreter: executes a (lowered) Function on NDArrays with exact per-dtype
// semantics and bounds-checked memory accesses. It is the correctness oracle that every
// schedule, code generator and plugin is compared against, so it trades speed for precision:
// the program is compiled once into a tree of closures over variable slots, then run serially.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/runtime/ndarray.h"

namespace mt {

// A run-time fault of the interpreted program: an out-of-bounds access (naming the buffer, the
// indices and the statement), a division by zero, an unbound variable, ...
class InterpreterError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Runs `f` (lowering it first if !f.lowered) with `args` bound to f.params in order. Checks the
// argument count, dtypes and shapes (std::invalid_argument). Semantics:
// - values stored to a buffer are rounded to its dtype (f32/f16/bf16 round-to-nearest-even,
//   integer wrap); arithmetic is done in the expression's dtype (f32 math in float, integers
//   in int64 wrapped to the dtype width after every operation);
// - floordiv/floormod round toward negative infinity; integer division by zero throws;
// - Select, && and || evaluate lazily (a guarded out-of-bounds load is fine);
// - parallel / vectorized / unrolled / thread-bound loops run serially;
// - Allocate gives fresh storage filled with NaN (floats) or 0x5A bytes (integers), so that
//   reading data no statement wrote shows up in the results.
void interpret(const Function& f, const std::vector<NDArray*>& args);

// A compiled program that can be run many times (interpret() compiles on every call); run()
// keeps no state between calls, so several threads may run the same program at once.
class CompiledProgram {
public:
  explicit CompiledProgram(const Function& f);
  ~CompiledProgram();
  CompiledProgram(CompiledProgram&&) noexcept;
  CompiledProgram& operator=(CompiledProgram&&) noexcept;
  void run(const std::vector<NDArray*>& args) const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace mt
