// A model's weights handed to a kernel packed (see packed_weights.h).
#include "core/measure/packed_weights.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <optional>

namespace mt {

PackedWeights::PackedWeights(const PluginModule& module, const std::vector<bool>& weights,
                             const std::vector<NDArray>& args, std::vector<NDArray*>& pointers) {
  for (size_t i = 0; i < weights.size() && i < args.size(); ++i) {
    if (!weights[i]) continue;
    std::optional<PluginModule::PackedLayout> layout = module.packed_layout(i);
    if (!layout) continue;
    // 64-byte aligned, as the ABI promises the module.
    storage_.emplace_back(static_cast<unsigned char*>(
        std::aligned_alloc(64, (std::max<size_t>(layout->bytes, 1) + 63) / 64 * 64)));
    if (!storage_.back()) throw std::bad_alloc();
    module.pack(i, args[i], storage_.back().get());
    // A view over the packed bytes, with the declared dtype and shape (what run_packed takes).
    views_.push_back(
        std::make_unique<NDArray>(args[i].dtype(), args[i].shape(), storage_.back().get()));
    pointers[i] = views_.back().get();
    flags_.resize(args.size(), 0);
    flags_[i] = 1;
  }
}

void PackedWeights::run(const PluginModule& module, const std::vector<NDArray*>& args) const {
  if (flags_.empty()) {
    module.run(args);
  } else {
    module.run_packed(args, flags_);
  }
}

std::vector<double> PackedWeights::time(const PluginModule& module,
                                        const std::vector<NDArray*>& args, int repeats,
                                        double min_repeat_seconds) const {
  if (flags_.empty()) return module.time(args, repeats, min_repeat_seconds);
  using Clock = std::chrono::steady_clock;
  std::vector<double> out;
  for (int k = 0; k < repeats; ++k) {
    const Clock::time_point t0 = Clock::now();
    int64_t calls = 0;
    double elapsed = 0;
    do {
      module.run_packed(args, flags_);
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < min_repeat_seconds);
    out.push_back(elapsed / static_cast<double>(calls));
  }
  return out;
}

} // namespace mt
