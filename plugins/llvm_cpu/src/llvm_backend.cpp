#include "llvm_backend.h"

#include <mutex>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen.h"

namespace mt::llvm_cpu {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

namespace {
llvm::CodeGenOpt::Level codegen_level(int opt_level) {
  switch (opt_level) {
  case 0:
    return llvm::CodeGenOpt::None;
  case 1:
    return llvm::CodeGenOpt::Less;
  case 2:
    return llvm::CodeGenOpt::Default;
  default:
    return llvm::CodeGenOpt::Aggressive;
  }
}
} // namespace

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& t, int opt_level) {
  initialize_llvm();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) throw CodegenError("LLVM has no target for triple '" + t.triple + "': " + err);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(t.triple, t.cpu, t.feature_string(), options, llvm::Reloc::PIC_,
                                  llvm::CodeModel::Small, codegen_level(opt_level)));
  if (!tm) throw CodegenError("cannot create a target machine for '" + t.str() + "'");
  return tm;
}

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  if (opt_level <= 0) return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level == 1   ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

std::unique_ptr<llvm::Module> build_module(const sdk::program::Program& p,
                                           const CompileOptions& opts, const Target& target,
                                           llvm::TargetMachine& tm, llvm::LLVMContext& ctx,
                                           std::string* symbol) {
  CodegenConfig cfg;
  cfg.symbol = make_symbol(opts.symbol.empty() ? p.name : opts.symbol);
  cfg.target = target;
  cfg.max_stack_alloc_bytes = opts.max_stack_alloc_bytes;
  cfg.bf16_products = opts.bf16_products;
  auto m = generate_module(p, ctx, cfg);
  m->setDataLayout(tm.createDataLayout());
  if (symbol) *symbol = cfg.symbol;
  return m;
}

std::string emit_machine_code(llvm::Module& m, llvm::TargetMachine& tm, bool assembly) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             assembly ? llvm::CGFT_AssemblyFile : llvm::CGFT_ObjectFile))
    throw CodegenError("the target machine cannot emit " +
                       std::string(assembly ? "assembly" : "object code"));
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return os.str();
}

} // namespace mt::llvm_cpu
