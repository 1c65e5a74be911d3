// Shared by the GPU generator tests: a schedule's generated source in a dialect, and the
// attributes of an sm_90 device for compile-only checks.
#pragma once

#include <string>

#include "core/lower/lower.h"
#include "core_to_program.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "std_rules_test_util.h"

namespace mt::gpu_test {

using namespace std_rules_test;

// The generated source of a schedule in a dialect, or the generator's refusal ("refused: ...").
inline std::string generated_source(const Function& scheduled, const gpu_codegen::Dialect& d) {
  sdk::program::Program p = llvm_cpu::test::core_to_program(lower(scheduled));
  try {
    return gpu_codegen::write_kernels(gpu_codegen::plan_kernels(p), d).code;
  } catch (const gpu_codegen::UnsupportedError& e) {
    return std::string("refused: ") + e.what();
  }
}

// The attributes of an sm_90 device with an H200's limits (227 KB of shared memory a block,
// 255 registers a thread), for compile-only checks.
inline TuneAttributes sm90_attrs() {
  TuneAttributes attrs = gpu_set().attrs;
  attrs["arch"] = std::string("sm_90");
  attrs["max_shared_memory_per_block"] = int64_t{227 * 1024};
  attrs["max_local_memory_per_block"] = int64_t{255 * 4};
  return attrs;
}

} // namespace mt::gpu_test
