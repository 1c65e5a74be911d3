// The LLVM CPU code generator's C++ interface: a lowered program (sdk program tree) in, a
// callable kernel (ORC JIT), LLVM IR text, or ahead-of-time artefacts (object file, shared
// library, JSON descriptor) out. LLVM types stay behind this header so that users (the plugin
// glue, tests, benchmarks) do not need LLVM's headers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "metatune/llvm_cpu/kernel_abi.h"
#include "metatune/llvm_cpu/target.hpp"
#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

struct CompileOptions {
  // "" or "llvm": detect the host; otherwise "llvm -mcpu=... -mattr=+a,-b -mtriple=...".
  std::string target;
  int opt_level = 3;
  // Local buffers up to this size live on the stack; larger ones on the heap.
  int64_t max_stack_alloc_bytes = 128 * 1024;
  // Name of the generated function ("" = the program's name, made a valid symbol).
  std::string symbol;
  // -fpmath=bf16: a product may round its operands to bf16 (f32 sums), so that the nests a
  // schedule marked as AMX tile products run as such on a CPU with AMX-BF16 (amx_tile.h).
  bool bf16_products = false;
};

// Thrown for programs the code generator cannot compile (with what and where) and for LLVM
// failures.
class CodegenError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A JIT-compiled kernel. Owns its code; calling it is thread-safe.
class JitKernel {
public:
  virtual ~JitKernel() = default;
  // Runs with the process-wide default runtime (thread pool).
  int32_t operator()(void** args) const;
  int32_t call(void** args, const mt_llvm_runtime* rt) const { return fn_(args, rt); }
  mt_llvm_kernel_fn function() const { return fn_; }
  const std::string& symbol() const { return symbol_; }
  // Optimised LLVM IR of the module (kept only when CompileOptions asked for it; see below).
  const std::string& optimized_ir() const { return ir_; }
  const Target& target() const { return target_; }

protected:
  mt_llvm_kernel_fn fn_ = nullptr;
  std::string symbol_;
  std::string ir_;
  Target target_;
};

// Compiles `p` in process. `keep_ir` keeps the optimised IR text (for tests and debugging).
std::unique_ptr<JitKernel> jit_compile(const sdk::program::Program& p,
                                       const CompileOptions& opts = {}, bool keep_ir = false);

// LLVM IR text of the program, before or after the O-level pipeline.
std::string emit_ir(const sdk::program::Program& p, const CompileOptions& opts = {},
                    bool optimized = true);
// Target assembly of the optimised program.
std::string emit_assembly(const sdk::program::Program& p, const CompileOptions& opts = {});

struct AotArtifacts {
  std::string object_path;     // always
  std::string shared_lib_path; // empty if no system linker (cc) was found
  std::string descriptor_path; // JSON: symbol, params (name, dtype, shape, output), target
};

// Writes <dir>/<basename>.o, .so and .json. The shared library exports the kernel under its
// symbol with the kernel_abi.h signature and needs only libc/libm.
AotArtifacts compile_aot(const sdk::program::Program& p, const std::string& dir,
                         const std::string& basename, const CompileOptions& opts = {});

// Writes the programs as ONE shared library at `so_path` (linked by the system compiler
// driver, $CC or cc), programs[i] exported under symbols[i] with the kernel_abi.h signature,
// and returns its descriptor: the JSON of the ABI's export_library (components.h), with
// "abi": "mt_llvm_kernel" and "runtime": mt_llvm_runtime version MT_LLVM_RUNTIME_VERSION.
// `opts.symbol` is ignored. Throws CodegenError naming the program or the link command.
std::string export_kernel_library(const std::vector<sdk::program::Program>& programs,
                                  const std::vector<std::string>& symbols,
                                  const std::string& so_path, const CompileOptions& opts = {});

// The JSON descriptor of a program (what compile_aot writes).
std::string kernel_descriptor(const sdk::program::Program& p, const std::string& symbol,
                              const Target& target);

} // namespace mt::llvm_cpu
