// LLVM plumbing shared by the JIT and the ahead-of-time paths: one-time target
// initialisation, TargetMachine construction for a Target, the new-pass-manager O-level
// pipeline, and machine-code emission.
#pragma once

#include <memory>
#include <string>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "metatune/llvm_cpu/compiler.hpp"
#include "metatune/llvm_cpu/target.hpp"

namespace mt::llvm_cpu {

void initialize_llvm();

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& t, int opt_level);

// Generates the module for `p` (data layout of `tm`), runs the O-level pipeline if opt_level
// > 0, and returns it with its symbol.
std::unique_ptr<llvm::Module> build_module(const sdk::program::Program& p,
                                           const CompileOptions& opts, const Target& target,
                                           llvm::TargetMachine& tm, llvm::LLVMContext& ctx,
                                           std::string* symbol);

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, int opt_level);

// Object code (or assembly text) of a module.
std::string emit_machine_code(llvm::Module& m, llvm::TargetMachine& tm, bool assembly);

std::string module_text(const llvm::Module& m);

} // namespace mt::llvm_cpu
