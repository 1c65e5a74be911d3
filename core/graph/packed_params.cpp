// Packed copies of parameters (see packed_params.h).
#include "core/graph/packed_params.h"

#include <cstdint>

namespace mt {

void* PackedParams::get(const std::string& path, const PluginModule& module, size_t param,
                        const PluginModule::PackedLayout& layout, const NDArray& src) {
  auto key = std::make_pair(path, layout.key);
  auto it = copies_.find(key);
  if (it != copies_.end()) return it->second.data;
  constexpr size_t kAlign = 64;
  Copy c;
  c.storage = std::make_unique<std::byte[]>(layout.bytes + kAlign);
  auto base = reinterpret_cast<uintptr_t>(c.storage.get());
  c.data = reinterpret_cast<void*>((base + kAlign - 1) / kAlign * kAlign);
  module.pack(param, src, c.data);
  bytes_ += layout.bytes;
  return copies_.emplace(key, std::move(c)).first->second.data;
}

} // namespace mt
