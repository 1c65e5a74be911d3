// Test harness: converts a lowered core mt::Function into the SDK program tree directly in C++
// (what the SDK does through the plugin ABI's accessors), so that the LLVM code generator can be
// tested on real scheduled workloads against core's interpreter.
#pragma once

#include "core/ir/function.h"
#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu::test {

// `f` must be lowered (no blocks). Variables and buffers get ids by identity.
sdk::program::Program core_to_program(const Function& f);

} // namespace mt::llvm_cpu::test
