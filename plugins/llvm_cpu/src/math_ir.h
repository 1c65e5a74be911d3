// Vectorisable math functions emitted inline as LLVM IR (polynomials on f32 scalars or
// vectors), because libm is scalar: exp, log, tanh, erf, sigmoid. f64 calls go to libm lane by
// lane; sqrt and abs use LLVM intrinsics. Accuracy of the f32 versions is ~1e-7 relative
// (measured against libm in tests/llvm).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

// `args` are float scalars or vectors of one type (f32 or f64); the result has that type.
llvm::Value* emit_math(llvm::IRBuilder<>& b, sdk::program::MathFn fn,
                       const std::vector<llvm::Value*>& args);

} // namespace mt::llvm_cpu
