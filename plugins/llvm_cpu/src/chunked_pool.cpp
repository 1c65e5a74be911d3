// The chunked pool (see chunked_pool.hpp). Compiled into the llvm.cpu plugin, whose default
// runtime serves its kernels in process, and into libmetatune_runtime, which serves the same
// kernels from an exported library: one pool, one behaviour.
#include "metatune/llvm_cpu/chunked_pool.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>

#include <pthread.h>
#include <sched.h>

namespace mt::llvm_cpu {

namespace {
// Set on pool threads (and on a caller while it runs its share) so that a nested
// parallel_for runs serially instead of deadlocking on the pool.
thread_local bool t_inside_pool = false;

void run_serial(mt_llvm_task_fn fn, void* closure, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    fn(i, closure);
}

// The ticket's fields (chunked_pool.hpp).
constexpr uint64_t kGenerationShift = 32, kChunksShift = 16, kFieldMask = 0xffff;
inline uint32_t ticket_generation(uint64_t t) {
  return static_cast<uint32_t>(t >> kGenerationShift);
}
inline uint32_t ticket_chunks(uint64_t t) {
  return static_cast<uint32_t>((t >> kChunksShift) & kFieldMask);
}
inline uint32_t ticket_next(uint64_t t) {
  return static_cast<uint32_t>(t & kFieldMask);
}
// Chunks a thread: enough that a thread that starts late finds work left to share, few enough
// that each stays a long contiguous range.
constexpr int64_t kChunksPerThread = 4;
} // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i)
    workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_)
    t.join();
}

template <class Ready> void ThreadPool::await(std::condition_variable& cv, const Ready& ready) {
  constexpr auto kSpinMicros = std::chrono::microseconds(50);
  auto until = std::chrono::steady_clock::now() + kSpinMicros;
  for (int i = 0;; ++i) {
    if (ready()) return;
    // Yield, not just pause: a thread spinning here may share its core with another runtime's
    // thread that has work (oneDNN's OpenMP team, in a model); the spin then costs it nothing.
    sched_yield();
    if ((i & 7) == 7 && std::chrono::steady_clock::now() > until) break;
  }
  std::unique_lock<std::mutex> lk(m_);
  cv.wait(lk, ready);
}

void ThreadPool::run_chunks(uint32_t generation) {
  uint64_t t = ticket_.load(std::memory_order_acquire);
  for (;;) {
    if (ticket_generation(t) != generation || ticket_next(t) >= ticket_chunks(t)) return;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;
    // Chunk `c` is ours: until it is counted done the job cannot finish, so its fields hold.
    const int64_t c = ticket_next(t), chunks = ticket_chunks(t);
    run_serial(fn_, closure_, n_ * c / chunks, n_ * (c + 1) / chunks);
    if (chunks_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
      // Under the lock: a caller that found chunks left under it is waiting by now.
      std::lock_guard<std::mutex> lk(m_);
      done_cv_.notify_one();
    }
    t = ticket_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  t_inside_pool = true;
  uint32_t seen = 0;
  for (;;) {
    await(wake_, [&] {
      return stop_.load(std::memory_order_acquire) ||
             ticket_generation(ticket_.load(std::memory_order_acquire)) != seen;
    });
    if (stop_.load(std::memory_order_acquire)) return;
    seen = ticket_generation(ticket_.load(std::memory_order_acquire));
    run_chunks(seen);
  }
}

void ThreadPool::parallel_for(mt_llvm_task_fn fn, void* closure, int64_t n) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1 || t_inside_pool) return run_serial(fn, closure, 0, n);
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock()) return run_serial(fn, closure, 0, n);
  // The job is written before the ticket moves (release); a worker reads it only after claiming
  // a chunk of the new ticket (acquire). No thread still runs the last job: all its chunks were
  // counted done before its caller returned.
  const auto chunks = static_cast<uint32_t>(
      std::min<int64_t>({n, kChunksPerThread * size(), static_cast<int64_t>(kFieldMask)}));
  fn_ = fn;
  closure_ = closure;
  n_ = n;
  chunks_done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = ticket_generation(ticket_.load(std::memory_order_relaxed)) + 1;
  {
    std::lock_guard<std::mutex> lk(m_);
    ticket_.store((uint64_t{generation} << kGenerationShift) | (uint64_t{chunks} << kChunksShift),
                  std::memory_order_release);
  }
  wake_.notify_all();
  t_inside_pool = true;
  run_chunks(generation);
  t_inside_pool = false;
  await(done_cv_, [&] { return chunks_done_.load(std::memory_order_acquire) == chunks; });
}

} // namespace mt::llvm_cpu
