// A fixed-size pool that runs parallel_for(fn, closure, n). [0, n) is cut into a few contiguous
// chunks per thread, and every thread, the caller included, claims chunks until none is left;
// the caller then waits only for the chunks a worker is still running. Why not one fixed range
// per thread: a worker the OS has not scheduled yet would hold the caller up for its whole
// range. That happens every time beside oneDNN, whose OpenMP threads spin for milliseconds after
// each of its calls: on two cores a pool worker woken then waits for a core, and a static
// partition made each small llvm kernel of a decode step wait with it (docs/models.md).
// Nested or concurrent calls from other pool users run serially on their own thread instead of
// waiting. Workers and the caller spin (yielding) for a short while (kSpinMicros) before they sleep
// on a condition variable: waking a sleeping thread costs tens of microseconds on a VM, more than a
// whole small kernel (a layernorm of 128 x 768 runs in 25 us), and a kernel of several parallel
// loops pays it for each.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "kernel_abi.h"

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
  void worker_loop();
  // Claims and runs chunks of the job of `generation` until none is left (or a newer job is up).
  void run_chunks(uint32_t generation);

  // Waits until `ready()`: spinning first, then on `cv` (notified under m_).
  template <class Ready> void await(std::condition_variable& cv, const Ready& ready);

  std::vector<std::thread> workers_;
  std::mutex busy_; // held by the one caller the pool serves at a time
  std::mutex m_;
  std::condition_variable wake_, done_cv_;
  std::atomic<bool> stop_{false};
  // The current job's ticket: generation (high 32 bits), chunk count (16) and the next chunk to
  // claim (low 16), in one word so that a claim of a finished job's chunk cannot succeed.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<uint32_t> chunks_done_{0};
  // The job of the current generation; read only by a thread holding a claimed chunk, which
  // keeps the job (and the caller's closure) alive until that chunk is counted done.
  mt_llvm_task_fn fn_ = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
};

} // namespace mt::llvm_cpu
