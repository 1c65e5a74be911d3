// The llvm.cpu target's default runtime (runtime.hpp): the services its kernels call in
// process -- parallel loops on one chunked pool (chunked_pool.hpp) for the whole process,
// made again in a forked child.
#include <memory>
#include <mutex>
#include <new>
#include <thread>

#include <pthread.h>

#include "metatune/llvm_cpu/chunked_pool.hpp"
#include "metatune/llvm_cpu/runtime.hpp"

namespace mt::llvm_cpu {

// ---- the default runtime ----------------------------------------------------------------------

namespace {

std::mutex g_pool_mutex;
std::unique_ptr<ThreadPool> g_pool;
int g_child_pool_size = 0; // after fork(): the size the child's pool is recreated with

mt_llvm_runtime g_runtime{};

// A forked child (the tuner measures each candidate in one) has only the thread that called
// fork(): the pool's workers do not exist there, and waiting for them would hang. The child
// drops the pool (leaked: destroying it would join threads that are not there, and its
// mutexes may have been held by them) and builds a fresh one on first use.
void before_fork() {
  g_pool_mutex.lock();
}
void after_fork_parent() {
  g_pool_mutex.unlock();
}
void after_fork_child() {
  g_child_pool_size = g_pool ? g_pool->size() : 0;
  (void)g_pool.release();
  g_runtime.self = nullptr;
  new (&g_pool_mutex) std::mutex(); // the parent's lock is meaningless here
}

ThreadPool& pool_locked() {
  if (!g_pool) {
    int n = g_child_pool_size;
    if (n <= 0) {
      unsigned hc = std::thread::hardware_concurrency();
      n = hc == 0 ? 1 : static_cast<int>(hc);
    }
    g_pool = std::make_unique<ThreadPool>(n);
    g_runtime.self = g_pool.get();
  }
  return *g_pool;
}

ThreadPool& pool() {
  static const bool registered = [] {
    ::pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    return true;
  }();
  (void)registered;
  std::lock_guard<std::mutex> lk(g_pool_mutex);
  return pool_locked();
}

void pool_parallel_for(void* self, mt_llvm_task_fn fn, void* closure, int64_t n) {
  // self is null in a forked child until its pool exists.
  ThreadPool* p = self ? static_cast<ThreadPool*>(self) : &pool();
  p->parallel_for(fn, closure, n);
}

} // namespace

const mt_llvm_runtime* default_runtime() {
  static const bool initialised = [] {
    g_runtime.struct_size = sizeof(mt_llvm_runtime);
    g_runtime.version = MT_LLVM_RUNTIME_VERSION;
    g_runtime.parallel_for = &pool_parallel_for;
    pool();
    return true;
  }();
  (void)initialised;
  return &g_runtime;
}

void set_num_threads(int n) {
  if (n < 1) n = 1;
  default_runtime();
  std::lock_guard<std::mutex> lk(g_pool_mutex);
  if (g_pool && g_pool->size() == n) return;
  // The runtime table points at the pool: replace the pool object in place.
  g_pool.reset();
  g_pool = std::make_unique<ThreadPool>(n);
  g_runtime.self = g_pool.get();
}

int num_threads() {
  return pool().size();
}

} // namespace mt::llvm_cpu
