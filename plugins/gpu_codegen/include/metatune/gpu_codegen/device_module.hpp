// A compiled plan as an SDK module on a device with CUDA-like runtime semantics (CUDA, HIP):
// device buffers for the plan's buffers, the host steps' launches in order, run() copying the
// parameters in and the written ones back, time() measuring with device events on data that
// stays on the device, the L2 cache flushed before each repeat. The vendor parts come from a
// backend:
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
//   };
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "metatune/gpu_codegen/kernel_plan.hpp"
#include "metatune/gpu_codegen/plan_arguments.hpp"
#include "metatune/sdk/components.hpp"

namespace mt::gpu_codegen {

template <class Backend> class DeviceModule : public sdk::Module {
public:
  DeviceModule(Backend backend, KernelPlan plan, std::string target)
      : backend_(std::move(backend)), plan_(std::move(plan)), target_(std::move(target)),
        written_(written_params(plan_)) {
    for (const auto& b : plan_.buffers)
      buffers_.push_back(backend_.buffer(static_cast<size_t>(b->size_bytes())));
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
    std::vector<double> out;
    auto start = backend_.event();
    auto end = backend_.event();
    for (int r = 0; r < repeats; ++r) {
      backend_.flush_l2();
      int64_t calls = 0;
      double elapsed = 0;
      start.record();
      do {
        launch_all();
        ++calls;
        end.record();
        elapsed = Backend::Event::elapsed_ms(start, end) / 1e3;
      } while (elapsed < min_repeat_seconds);
      out.push_back(elapsed / static_cast<double>(calls));
    }
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
};

} // namespace mt::gpu_codegen
