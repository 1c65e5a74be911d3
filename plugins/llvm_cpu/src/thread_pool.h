// A fixed-size pool that runs parallel_for(fn, closure, n) with a static partition of [0, n)
// into one contiguous range per thread; the calling thread takes the first range. Nested or
// concurrent calls from other pool users run serially on their own thread instead of waiting.
// Workers and the caller spin for a short while (kSpinMicros) before they sleep on a condition
// variable: waking a sleeping thread costs tens of microseconds on a VM, more than a whole
// small kernel (a layernorm of 128 x 768 runs in 25 us), and a kernel of several parallel
// loops pays it for each.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "metatune/llvm_cpu/kernel_abi.h"

namespace mt::llvm_cpu {

class ThreadPool {
public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  void parallel_for(mt_llvm_task_fn fn, void* closure, int64_t n);

private:
  void worker_loop(int index);
  void run_range(int part, int parts);

  // Waits until `ready()`: spinning first, then on `cv` (notified under m_).
  template <class Ready> void await(std::condition_variable& cv, const Ready& ready);

  std::vector<std::thread> workers_;
  std::mutex busy_; // held by the one caller the pool serves at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> pending_{0};
  // The job of the current generation.
  mt_llvm_task_fn fn_ = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 1;
};

} // namespace mt::llvm_cpu
