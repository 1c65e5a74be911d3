// Packing weights once at load (see packed_weights.h).
#include "packed_weights.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernel_library.h"
#include "metatune/runtime/compiled_model.h"
#include "thread_pool.h"

namespace mt::rt {

namespace {

// Round to nearest even, NaN kept a NaN: the rounding the llvm.cpu target's bf16 kernels
// expect of a weight handed over in bf16 (plugins/llvm_cpu/src/bf16_weights.cpp).
void round_to_bf16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &src[i], sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) {
      dst[i] = 0x7fc0;
      continue;
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);
    dst[i] = static_cast<uint16_t>(bits >> 16);
  }
}

} // namespace

void PackedWeights::Free::operator()(std::byte* p) const {
  std::free(p);
}

const void* PackedWeights::get(const void* weight, size_t weight_bytes, const nlohmann::json& entry,
                               const KernelLibrary& library, const ThreadPool& pool,
                               const std::string& what) {
  const std::string key = entry.at("key").get<std::string>();
  auto it = made_.find({weight, key});
  if (it != made_.end()) return it->second.get();
  const size_t bytes = entry.at("bytes").get<size_t>();
  const std::string pack = entry.at("pack").get<std::string>();
  // Aligned as the kernels' own buffers: 64 bytes, the size rounded up to it.
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  if (!p)
    throw Error(what + ": out of memory packing a weight (" + std::to_string(bytes) + " bytes)");
  std::unique_ptr<std::byte, Free> dst(p);
  std::memset(dst.get(), 0, bytes); // bytes the copies leave alone (none should) are zero
  if (pack == "bf16") {
    if (bytes * 2 != weight_bytes)
      throw Error(what + ": a bf16 copy of " + std::to_string(bytes) +
                  " bytes of an f32 weight of " + std::to_string(weight_bytes));
    round_to_bf16(static_cast<const float*>(weight), reinterpret_cast<uint16_t*>(dst.get()),
                  bytes / 2);
  } else {
    mt_llvm_kernel_fn fn = library.kernel(pack, what + " packing its weight");
    void* args[] = {const_cast<void*>(weight), dst.get()};
    const int32_t rc = fn(args, pool.runtime());
    if (rc != MT_LLVM_OK)
      throw Error(what + ": packing its weight ('" + pack + "') failed with code " +
                  std::to_string(rc));
  }
  bytes_ += bytes;
  return made_.emplace(std::pair{weight, key}, std::move(dst)).first->second.get();
}

} // namespace mt::rt
