// A model's weights handed to a kernel packed, as the model's executor hands them
// (ModelExecutor::pack_params): where a module takes a weight in a layout of its own
// (PluginModule::packed_layout -- a library's blocked weights, the llvm target's prepacked
// copies), it is packed once, and the runs and timings call run_packed. The measurer and the
// side-by-side comparison time kernels so (MeasureOptions::weights), as a model runs them.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/plugin/plugin_components.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PackedWeights {
public:
  // Packs each param flagged in `weights` that `module` takes packed, from `args`, and points
  // `pointers` (the run's argument list) at the packed copies. Throws what packing throws.
  PackedWeights(const PluginModule& module, const std::vector<bool>& weights,
                const std::vector<NDArray>& args, std::vector<NDArray*>& pointers);

  // How many arguments are packed.
  size_t count() const { return views_.size(); }

  // run_packed, or run where nothing is packed.
  void run(const PluginModule& module, const std::vector<NDArray*>& args) const;

  // Seconds per call, one entry per repeat of at least `min_repeat_seconds` (at least one
  // call): PluginModule::time's loop, calling run_packed (the ABI's time has no packed
  // arguments); PluginModule::time itself where nothing is packed.
  std::vector<double> time(const PluginModule& module, const std::vector<NDArray*>& args,
                           int repeats, double min_repeat_seconds) const;

private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<unsigned char, Free>> storage_;
  std::vector<std::unique_ptr<NDArray>> views_;
  std::vector<uint8_t> flags_;
};

} // namespace mt
