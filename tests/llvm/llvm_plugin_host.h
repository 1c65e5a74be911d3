// The llvm_cpu plugin loaded once for the tests that run it through the host (packed weights,
// bf16 weights), and NDArray's bf16 rounding as their references take it.
#pragma once

#include <stdexcept>

#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"

#ifdef METATUNE_LLVM_CPU_PLUGIN
namespace mt::llvm_plugin {

inline PluginHost& host() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    const PluginRecord& r = p->load(METATUNE_LLVM_CPU_PLUGIN);
    if (!r.loaded()) throw std::runtime_error("llvm_cpu plugin refused: " + r.message);
    return p;
  }();
  return *h;
}

// `a` rounded to bf16 and back (round to nearest even, as NDArray stores a bf16).
inline NDArray rounded_to_bf16(const NDArray& a) {
  NDArray b(DType::bf16(), a.shape()), out(a.dtype(), a.shape());
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    b.set_double(i, a.get_double(i));
    out.set_double(i, b.get_double(i));
  }
  return out;
}

} // namespace mt::llvm_plugin
#endif
