// The runtime that JIT-compiled kernels call into: a small thread pool behind the
// mt_llvm_runtime function table (kernel_abi.h), so that the host can later swap in its own.
#pragma once

#include "metatune/llvm_cpu/kernel_abi.h"

namespace mt::llvm_cpu {

// The process-wide pool (created on first use with std::thread::hardware_concurrency()
// threads, the caller included).
const mt_llvm_runtime* default_runtime();
// Changes the number of threads of the default pool (>= 1); waits for running work.
void set_num_threads(int n);
int num_threads();

} // namespace mt::llvm_cpu
