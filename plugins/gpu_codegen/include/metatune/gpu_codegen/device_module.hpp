// A compiled plan as an SDK module on a device with CUDA-like runtime semantics (CUDA, HIP):
// device buffers for the plan's buffers, the host steps' launches in order, run() copying the
// parameters in and the written ones back, time() measuring with device events on data that
// stays on the device, the L2 cache flushed before each repeat (sdk/device_timing.hpp). The vendor
// parts come from a backend:
//   struct Backend {
//     using Buffer = ...;  // upload(const void*, size_t), download(void*, size_t) const,
//                          // void* kernel_param()  (the address of the device pointer)
//     using Event = ...;   // record(); static float elapsed_ms(const Event&, const Event&)
//     Buffer buffer(size_t bytes);
//     Event event();
//     void launch(size_t kernel, const std::array<unsigned, 3>& grid,
//                 const std::array<unsigned, 3>& block, const std::vector<void*>& params);
//     void synchronize();
//     void flush_l2();
//     // Only where kernels copy with TMA (tensor_map.hpp): the map of `spec` over `buffer`.
//     std::array<uint64_t, 16> tensor_map(const Buffer& buffer, const TensorMapSpec& spec);
//   };
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "metatune/gpu_codegen/kernel_plan.hpp"
#include "metatune/gpu_codegen/plan_arguments.hpp"
#include "metatune/gpu_codegen/tensor_map.hpp"
#include "metatune/sdk/components.hpp"
#include "metatune/sdk/device_timing.hpp"

namespace mt::gpu_codegen {

template <class Backend> class DeviceModule : public sdk::Module {
public:
  // `tensor_maps`: per kernel, the maps its TMA copies read (GpuSource::tensor_maps), made once
  // here over the module's buffers, which never move.
  DeviceModule(Backend backend, KernelPlan plan, std::string target,
               const std::vector<std::vector<TensorMapSpec>>& tensor_maps = {})
      : backend_(std::move(backend)), plan_(std::move(plan)), target_(std::move(target)),
        written_(written_params(plan_)) {
    for (const auto& b : plan_.buffers)
      buffers_.push_back(backend_.buffer(static_cast<size_t>(b->size_bytes())));
    maps_.resize(plan_.kernels.size());
    for (size_t k = 0; k < tensor_maps.size() && k < maps_.size(); ++k)
      for (const TensorMapSpec& spec : tensor_maps[k]) {
        if constexpr (requires(Backend & b, const typename Backend::Buffer& buffer,
                               const TensorMapSpec& s) { b.tensor_map(buffer, s); })
          maps_[k].push_back({backend_.tensor_map(buffers_.at(spec.buffer), spec)});
        else
          throw UnsupportedError(target_ + ": TMA copies need tensor maps, which this target "
                                           "cannot make");
      }
  }

  void run(const std::vector<sdk::TensorView>& args) override {
    upload(args);
    launch_all();
    backend_.synchronize();
    download(args);
  }

  std::vector<double> time(const std::vector<sdk::TensorView>& args, int repeats,
                           double min_repeat_seconds) override {
    upload(args);
    launch_all();
    backend_.synchronize();
    auto start = backend_.event();
    auto end = backend_.event();
    std::vector<double> out = sdk::time_between_events(
        start, end, [&] { launch_all(); }, [&] { backend_.flush_l2(); }, repeats,
        min_repeat_seconds);
    download(args);
    return out;
  }

private:
  void upload(const std::vector<sdk::TensorView>& args) {
    check_arguments(plan_, args, target_);
    for (size_t i = 0; i < args.size(); ++i)
      buffers_[i].upload(args[i].data, static_cast<size_t>(plan_.buffers[i]->size_bytes()));
  }

  void download(const std::vector<sdk::TensorView>& args) {
    for (size_t i = 0; i < args.size(); ++i)
      if (written_[i])
        buffers_[i].download(args[i].data, static_cast<size_t>(plan_.buffers[i]->size_bytes()));
  }

  void launch_all() {
    run_host_steps(plan_, [&](int k, const std::vector<int64_t>& scalars) {
      const LaunchDims& d = plan_.kernels[static_cast<size_t>(k)].dims;
      std::vector<long long> values(scalars.begin(), scalars.end());
      std::vector<void*> params;
      for (auto& b : buffers_)
        params.push_back(b.kernel_param());
      for (auto& v : values)
        params.push_back(&v);
      for (auto& m : maps_[static_cast<size_t>(k)])
        params.push_back(m.bytes.data());
      std::array<unsigned, 3> grid{}, block{};
      for (size_t i = 0; i < 3; ++i) {
        grid[i] = static_cast<unsigned>(d.grid[i]);
        block[i] = static_cast<unsigned>(d.block[i]);
      }
      backend_.launch(static_cast<size_t>(k), grid, block, params);
    });
  }

  Backend backend_;
  KernelPlan plan_;
  std::string target_;
  std::vector<bool> written_;
  std::vector<typename Backend::Buffer> buffers_;
  struct alignas(64) Map {
    std::array<uint64_t, 16> bytes; // CUtensorMap
  };
  std::vector<std::vector<Map>> maps_; // per kernel, in parameter order
};

} // namespace mt::gpu_codegen
