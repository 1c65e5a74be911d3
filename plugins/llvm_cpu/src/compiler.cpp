// emit_ir / emit_assembly: the inspection entry points of compiler.hpp.
#include "metatune/llvm_cpu/compiler.hpp"

#include "llvm_backend.h"

namespace mt::llvm_cpu {

std::string emit_ir(const sdk::program::Program& p, const CompileOptions& opts, bool optimized) {
  Target target = parse_target(opts.target);
  auto tm = make_target_machine(target, opts.opt_level);
  llvm::LLVMContext ctx;
  auto m = build_module(p, opts, target, *tm, ctx, nullptr);
  if (optimized) optimize_module(*m, *tm, opts.opt_level);
  return module_text(*m);
}

std::string emit_assembly(const sdk::program::Program& p, const CompileOptions& opts) {
  Target target = parse_target(opts.target);
  auto tm = make_target_machine(target, opts.opt_level);
  llvm::LLVMContext ctx;
  auto m = build_module(p, opts, target, *tm, ctx, nullptr);
  optimize_module(*m, *tm, opts.opt_level);
  return emit_machine_code(*m, *tm, true);
}

} // namespace mt::llvm_cpu
