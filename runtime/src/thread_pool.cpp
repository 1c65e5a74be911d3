// The kernels' thread pool (see thread_pool.h).
#include "thread_pool.h"

#include <algorithm>

namespace mt::rt {

ThreadPool::ThreadPool(int num_threads) {
  table_.struct_size = sizeof(mt_llvm_runtime);
  table_.version = MT_LLVM_RUNTIME_VERSION;
  table_.self = this;
  table_.parallel_for = &ThreadPool::parallel_for;
  for (int i = 1; i < std::max(1, num_threads); ++i)
    workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_)
    t.join();
}

void ThreadPool::parallel_for(void* self, mt_llvm_task_fn fn, void* closure, int64_t n) {
  static_cast<ThreadPool*>(self)->run(fn, closure, n);
}

void ThreadPool::run(mt_llvm_task_fn fn, void* closure, int64_t n) {
  bool idle = false;
  if (n <= 1 || workers_.empty() || !busy_.compare_exchange_strong(idle, true)) {
    for (int64_t i = 0; i < n; ++i)
      fn(i, closure);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_);
    fn_ = fn;
    closure_ = closure;
    n_ = n;
    parts_ = static_cast<int>(std::min<int64_t>(n, static_cast<int64_t>(workers_.size()) + 1));
    pending_ = parts_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  run_part(0);
  {
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }
  busy_.store(false);
}

void ThreadPool::run_part(int part) {
  int64_t begin = n_ * part / parts_, end = n_ * (part + 1) / parts_;
  for (int64_t i = begin; i < end; ++i)
    fn_(i, closure_);
}

void ThreadPool::worker(int part) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (part >= parts_) continue;
    }
    run_part(part);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

} // namespace mt::rt
