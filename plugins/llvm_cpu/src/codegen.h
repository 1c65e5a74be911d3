// Lowered program tree -> LLVM IR module. The module exports one function
//   int32_t <symbol>(void** args, const mt_llvm_runtime* rt)          (kernel_abi.h)
// Loops marked vectorized become explicit LLVM vector code of the loop's width; parallel loops
// are outlined and handed to rt->parallel_for; unrolled loops are unrolled here.
#pragma once

#include <memory>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "metatune/llvm_cpu/target.hpp"
#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

struct CodegenConfig {
  std::string symbol;
  Target target;
  int64_t max_stack_alloc_bytes = 128 * 1024;
  bool bf16_products = false; // CompileOptions::bf16_products
};

std::unique_ptr<llvm::Module> generate_module(const sdk::program::Program& p,
                                              llvm::LLVMContext& ctx, const CodegenConfig& cfg);

// A valid C identifier made from a program name.
std::string make_symbol(const std::string& name);

} // namespace mt::llvm_cpu
