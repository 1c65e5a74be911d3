// Weights a kernel library reads packed (plugin ABI 1.10: a kernel's "packed" entry in the
// descriptor): made once, when the artifact is loaded, from the memory-mapped weight -- by the
// library's pack kernel (the tiled kernel's own copy of the weight, made once instead of in
// every call) or by rounding to bf16 -- and shared by every call and graph reading that weight
// in that layout.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace mt::rt {

class KernelLibrary;
class ThreadPool;

class PackedWeights {
public:
  // The packed bytes of `weight` (`weight_bytes` as declared) for one "params" entry of a
  // kernel's "packed" descriptor ({"param", "bytes", "key", "pack"}); `what` names the call
  // for messages.
  const void* get(const void* weight, size_t weight_bytes, const nlohmann::json& entry,
                  const KernelLibrary& library, const ThreadPool& pool, const std::string& what);
  size_t bytes() const { return bytes_; } // all packed copies together

private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::map<std::pair<const void*, std::string>, std::unique_ptr<std::byte, Free>> made_;
  size_t bytes_ = 0;
};

} // namespace mt::rt
