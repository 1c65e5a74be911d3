// The kernels' runtime services (see thread_pool.h).
#include "thread_pool.h"

#include <algorithm>

namespace mt::rt {

ThreadPool::ThreadPool(int num_threads)
    : pool_(std::make_unique<llvm_cpu::ThreadPool>(std::max(1, num_threads))) {
  table_.struct_size = sizeof(mt_llvm_runtime);
  table_.version = MT_LLVM_RUNTIME_VERSION;
  table_.self = this;
  table_.parallel_for = &ThreadPool::parallel_for;
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::parallel_for(void* self, mt_llvm_task_fn fn, void* closure, int64_t n) {
  static_cast<ThreadPool*>(self)->pool_->parallel_for(fn, closure, n);
}

} // namespace mt::rt
