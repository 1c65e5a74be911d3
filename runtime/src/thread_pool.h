// The services the kernels of an llvm.cpu library call (mt_llvm_runtime, kernel_abi.h): a
// fixed pool of threads for their parallel loops, [0, n) split into one contiguous range per
// thread with the calling thread taking the first. A call made while the pool is busy (a
// parallel loop inside a task) runs serially on its own thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

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
  void run(mt_llvm_task_fn fn, void* closure, int64_t n);
  void run_part(int part);
  void worker(int part);

  mt_llvm_runtime table_{};
  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};
  std::mutex m_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  mt_llvm_task_fn fn_ = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 1;
};

} // namespace mt::rt
