// The OpenCL target as a metatune plugin (component "opencl"): lowered programs become OpenCL C
// through the shared GPU code generator and run on an OpenCL device -- a GPU, or PoCL on the
// CPU, where every GPU schedule (thread binding, shared memory, barriers, cross-thread
// reductions) is checked against the reference interpreter without a GPU.
// Configuration (JSON, optional): {"device": "0:0" | "substring of the device name"}
// (else $METATUNE_OPENCL_DEVICE, else the first GPU, else the first device),
// "pool_shared_beyond": bytes (0; > 0 lays a kernel's local arrays out in one pool when they
// exceed that -- CUDA's layout beyond 48 KB, for checking it here).
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/gpu_codegen/plan_arguments.hpp"
#include "metatune/gpu_codegen/target_support.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"
#include "opencl_device_query.h"
#include "opencl_runtime.h"

namespace mt::opencl {

namespace {

namespace G = mt::gpu_codegen;
namespace P = mt::sdk::program;

// One device per process, opened at the first build: in a tuning run that is inside a
// measurement worker, never in the parent that forks them (opencl_device_query.h).
Device& process_device(const std::string& selector) {
  static std::mutex m;
  static std::unique_ptr<Device> device;
  static std::string opened_for, failure;
  std::lock_guard<std::mutex> lock(m);
  if (!device && failure.empty()) {
    std::string why;
    device = Device::open(&why, selector);
    opened_for = selector;
    if (!device) failure = why;
  }
  if (!device) throw sdk::Error(MT_ERROR_UNSUPPORTED, "opencl: " + failure);
  return *device;
}

class OpenClModule : public sdk::Module {
public:
  OpenClModule(Device& device, G::KernelPlan plan, const G::GpuSource& source)
      : device_(device), plan_(std::move(plan)), program_(device, source.code, "-cl-std=CL1.2") {
    for (size_t i = 0; i < source.kernel_names.size(); ++i) {
      kernels_.emplace_back(program_, source.kernel_names[i]);
      const G::LaunchDims& d = plan_.kernels[i].dims;
      if (d.threads_per_block() > kernels_.back().max_work_group_size())
        throw sdk::Error(MT_ERROR_UNSUPPORTED,
                         "opencl: kernel " + source.kernel_names[i] + " needs " +
                             std::to_string(d.threads_per_block()) +
                             " threads per block, the device runs it with at most " +
                             std::to_string(kernels_.back().max_work_group_size()));
    }
    for (const auto& b : plan_.buffers)
      buffers_.emplace_back(device, static_cast<size_t>(std::max<int64_t>(b->size_bytes(), 1)));
    written_ = G::written_params(plan_);
  }

  void run(const std::vector<sdk::TensorView>& args) override {
    upload(args);
    launch_all(nullptr);
    device_.finish();
    download(args);
  }

  // Device time of the kernels (from the queue's profiling events), the arguments uploaded once.
  std::vector<double> time(const std::vector<sdk::TensorView>& args, int repeats,
                           double min_repeat_seconds) override {
    upload(args);
    launch_all(nullptr);
    device_.finish();
    std::vector<double> out;
    for (int r = 0; r < repeats; ++r) {
      double total = 0;
      int64_t calls = 0;
      auto start = std::chrono::steady_clock::now();
      do {
        launch_all(&total);
        ++calls;
      } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
               min_repeat_seconds);
      out.push_back(total / static_cast<double>(calls));
    }
    download(args);
    return out;
  }

private:
  void upload(const std::vector<sdk::TensorView>& args) {
    G::check_arguments(plan_, args, "opencl");
    for (size_t i = 0; i < args.size(); ++i) {
      const P::BufferNode& b = *plan_.buffers[i];
      buffers_[i].write(args[i].data, static_cast<size_t>(b.size_bytes()));
    }
  }

  void download(const std::vector<sdk::TensorView>& args) {
    for (size_t i = 0; i < args.size(); ++i)
      if (written_[i])
        buffers_[i].read(args[i].data, static_cast<size_t>(plan_.buffers[i]->size_bytes()));
  }

  // Every launch of the host steps; with `seconds`, waits for each and adds its device time.
  void launch_all(double* seconds) {
    G::run_host_steps(plan_, [&](int k, const std::vector<int64_t>& scalars) {
      const G::LaunchDims& d = plan_.kernels[static_cast<size_t>(k)].dims;
      std::vector<KernelArg> kargs;
      for (const auto& b : buffers_)
        kargs.emplace_back(&b);
      for (int64_t v : scalars)
        kargs.emplace_back(v);
      size_t local[3], global[3];
      for (int i = 0; i < 3; ++i) {
        local[i] = static_cast<size_t>(d.block[i]);
        global[i] = static_cast<size_t>(d.grid[i] * d.block[i]);
      }
      cl_event ev = nullptr;
      device_.launch(kernels_[static_cast<size_t>(k)], kargs, global, local, 3,
                     seconds ? &ev : nullptr);
      if (seconds) *seconds += device_.event_seconds(ev);
    });
  }

  Device& device_;
  G::KernelPlan plan_;
  Program program_;
  std::vector<Kernel> kernels_;
  std::vector<Buffer> buffers_;
  std::vector<bool> written_;
};

class OpenClTarget : public sdk::Target {
public:
  explicit OpenClTarget(std::string_view config) {
    if (!config.empty()) {
      try {
        nlohmann::json j = nlohmann::json::parse(config);
        selector_ = j.value("device", std::string());
        pool_shared_beyond_ = j.value("pool_shared_beyond", int64_t{0});
        // "--target 'opencl 0:0'" arrives as {"target": "opencl 0:0"}.
        std::string t = j.value("target", std::string());
        size_t sp = t.find(' ');
        if (selector_.empty() && sp != std::string::npos) {
          selector_ = t.substr(t.find_first_not_of(' ', sp));
          if (selector_.rfind("-device=", 0) == 0) {
            // The target string spells the device name with '_' for ' ' (describe()).
            selector_ = selector_.substr(8);
            for (char& c : selector_)
              if (c == '_') c = ' ';
          }
        }
      } catch (const std::exception& e) {
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                         std::string("opencl: configuration is not JSON: ") + e.what());
      }
    }
  }

  std::string describe() override {
    if (!description_.empty()) return description_;
    nlohmann::json j;
    j["kind"] = "opencl";
    std::string why;
    std::optional<std::string> info = query_device_in_child(selector_, &why);
    if (!info) {
      j["unavailable"] = why;
      j["device"] = "none";
    } else {
      DeviceInfo d = device_info_from_json(*info);
      j["device"] = d.name;
      // Records are filed per device.
      std::string id = d.name;
      for (char& c : id)
        if (c == ' ') c = '_';
      j["target"] = "opencl -device=" + id;
      j["platform"] = d.platform;
      j["device_type"] = d.type;
      j["version"] = d.version;
      j["num_cores"] = d.compute_units;
      // The standard GPU rules' limits (std_rules/target_info.hpp).
      j["max_threads_per_block"] = std::min<int64_t>(d.max_work_group_size, 1024);
      j["max_shared_memory_per_block"] = d.local_mem_size;
      j["max_thread_x"] = d.max_work_item_sizes[0];
      j["max_thread_y"] = d.max_work_item_sizes[1];
      j["max_thread_z"] = d.max_work_item_sizes[2];
      j["global_memory_bytes"] = d.global_mem_size;
    }
    description_ = j.dump();
    return description_;
  }

  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    G::GeneratedProgram g =
        G::generate(lowered, *G::opencl_dialect(pool_shared_beyond_), "opencl", "cl");
    Device& device = process_device(selector_);
    try {
      return std::make_unique<OpenClModule>(device, std::move(g.plan), g.source);
    } catch (const BuildError& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, std::string("opencl: ") + e.what());
    }
  }

private:
  std::string selector_, description_;
  int64_t pool_shared_beyond_ = 0;
};

} // namespace

} // namespace mt::opencl

METATUNE_PLUGIN(
    "opencl", "0.1",
    "OpenCL target: the GPU code generator's OpenCL C on any OpenCL device (PoCL on CPUs)") {
  registry.add<mt::opencl::OpenClTarget>("opencl", "GPU target: OpenCL C, any OpenCL device");
}
