// Parameters in the layouts their kernels prefer (ABI 1.8's prepacked params, components.h):
// a library kernel that would repack a weight inside every call (oneDNN's matmul, costliest
// in a decode step's one-row products) is handed a copy packed once, when the model is set
// up. One cache per set of parameter values, shared by the executors that run them (a
// generator's prefill and decode graphs): one packed copy per (parameter path, layout key),
// made on first use.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "core/plugin/plugin_components.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PackedParams {
public:
  // The bytes of `src` (the model's parameter `path`, param `param` of `module`, whose layout
  // is `layout`) packed, made now unless a module with the same key packed that parameter
  // before. Stays valid while this cache lives.
  void* get(const std::string& path, const PluginModule& module, size_t param,
            const PluginModule::PackedLayout& layout, const NDArray& src);
  size_t bytes() const { return bytes_; } // all packed copies
  size_t copies() const { return copies_.size(); }

private:
  struct Copy {
    std::unique_ptr<std::byte[]> storage;
    void* data = nullptr; // 64-byte aligned inside storage
  };
  std::map<std::pair<std::string, std::string>, Copy> copies_;
  size_t bytes_ = 0;
};

} // namespace mt
