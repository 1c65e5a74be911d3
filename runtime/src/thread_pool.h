// The services the kernels of an llvm.cpu library call (mt_llvm_runtime, kernel_abi.h): their
// parallel loops on the llvm.cpu target's own chunked pool (chunked_pool.hpp: chunks claimed by
// whichever thread is free, threads spinning briefly before they sleep), so that a kernel runs
// from an artifact as it runs in process. One pool per loaded artifact.
#pragma once

#include <memory>

#include "metatune/llvm_cpu/chunked_pool.hpp"
#include "metatune/llvm_cpu/kernel_abi.h"

namespace mt::rt {

class ThreadPool {
public:
  explicit ThreadPool(int num_threads); // the caller included; >= 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  const mt_llvm_runtime* runtime() const { return &table_; }

private:
  static void parallel_for(void* self, mt_llvm_task_fn fn, void* closure, int64_t n);

  std::unique_ptr<llvm_cpu::ThreadPool> pool_;
  mt_llvm_runtime table_{};
};

} // namespace mt::rt
