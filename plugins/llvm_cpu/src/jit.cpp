// In-process compilation with ORC LLJIT: one JIT instance per kernel, so that a kernel's code
// lives exactly as long as its JitKernel object.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Support/Error.h>

#include "llvm_backend.h"
#include "metatune/llvm_cpu/compiler.hpp"
#include "metatune/llvm_cpu/runtime.hpp"

namespace mt::llvm_cpu {

int32_t JitKernel::operator()(void** args) const {
  return fn_(args, default_runtime());
}

namespace {

std::string error_text(llvm::Error e) {
  std::string s;
  llvm::handleAllErrors(std::move(e),
                        [&](const llvm::ErrorInfoBase& info) { s += info.message(); });
  return s;
}

class LljitKernel : public JitKernel {
public:
  LljitKernel(std::unique_ptr<llvm::orc::LLJIT> jit, mt_llvm_kernel_fn fn, std::string symbol,
              std::string ir, Target target)
      : jit_(std::move(jit)) {
    fn_ = fn;
    symbol_ = std::move(symbol);
    ir_ = std::move(ir);
    target_ = std::move(target);
  }

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

} // namespace

std::unique_ptr<JitKernel> jit_compile(const sdk::program::Program& p, const CompileOptions& opts,
                                       bool keep_ir) {
  Target target = parse_target(opts.target);
  auto tm = make_target_machine(target, opts.opt_level);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::string symbol;
  auto m = build_module(p, opts, target, *tm, *ctx, &symbol);
  optimize_module(*m, *tm, opts.opt_level);
  std::string ir = keep_ir ? module_text(*m) : std::string();

  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target.triple)};
  jtmb.setCPU(target.cpu);
  jtmb.addFeatures(target.features);
  jtmb.setCodeGenOptLevel(opts.opt_level >= 3   ? llvm::CodeGenOpt::Aggressive
                          : opts.opt_level == 0 ? llvm::CodeGenOpt::None
                                                : llvm::CodeGenOpt::Default);
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit) throw CodegenError("cannot create the LLVM JIT: " + error_text(jit.takeError()));
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!gen) throw CodegenError("JIT symbol generator: " + error_text(gen.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*gen));
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw CodegenError("JIT: cannot add module of '" + p.name + "': " + error_text(std::move(err)));
  auto addr = (*jit)->lookup(symbol);
  if (!addr)
    throw CodegenError("JIT: cannot compile '" + p.name + "': " + error_text(addr.takeError()));
  auto fn = addr->toPtr<mt_llvm_kernel_fn>();
  return std::make_unique<LljitKernel>(std::move(*jit), fn, symbol, std::move(ir),
                                       std::move(target));
}

} // namespace mt::llvm_cpu
