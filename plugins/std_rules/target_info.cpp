#include "target_info.hpp"

#include <thread>

namespace mt::std_rules {

namespace {

// Integer attribute, or the fallback if absent or not an integer.
int64_t int_attr(const sdk::TuneContext& ctx, const char* key, int64_t fallback) {
  try {
    std::optional<int64_t> v = ctx.get_int(key);
    return v && *v > 0 ? *v : fallback;
  } catch (const sdk::Error&) {
    return fallback; // present but a string: not ours to interpret
  }
}

} // namespace

bool is_gpu_kind(std::string_view kind) {
  return kind == "cuda" || kind == "rocm" || kind == "hip" || kind == "gpu" || kind == "vulkan" ||
         kind == "metal" || kind == "opencl" || kind == "webgpu";
}

TargetInfo::TargetInfo() {
  unsigned n = std::thread::hardware_concurrency();
  num_cores = n > 0 ? static_cast<int64_t>(n) : 1;
}

TargetInfo TargetInfo::from(const sdk::TuneContext& ctx) {
  TargetInfo t;
  try {
    if (std::optional<std::string> k = ctx.get_string("kind")) t.kind = *k;
  } catch (const sdk::Error&) {
  }
  t.gpu = is_gpu_kind(t.kind);
  t.num_cores = int_attr(ctx, "num_cores", t.num_cores);
  t.vector_bytes = int_attr(ctx, "vector_bytes", 0);
  t.vector_registers = int_attr(ctx, "vector_registers", t.vector_registers);
  t.max_threads_per_block = int_attr(ctx, "max_threads_per_block", t.max_threads_per_block);
  t.max_shared_memory_per_block =
      int_attr(ctx, "max_shared_memory_per_block", t.max_shared_memory_per_block);
  t.max_local_memory_per_block =
      int_attr(ctx, "max_local_memory_per_block", t.max_local_memory_per_block);
  return t;
}

} // namespace mt::std_rules
