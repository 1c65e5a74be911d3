// The CUDA target as a metatune plugin (component "cuda"): lowered programs become CUDA C++
// through the shared GPU code generator, NVRTC compiles them in process to a CUBIN for the
// device's architecture, and the driver API (opened with dlopen) runs and times them. The
// plugin loads everywhere; without a driver or device it describes itself as unavailable
// ("no CUDA device (...)"), so tuning for cuda fails with that message instead of crashing.
// Configuration (JSON, optional): {"arch": "sm_80", "device": 0}; "--target 'cuda -arch=sm_90'"
// arrives as {"target": "cuda -arch=sm_90"}.
#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda_driver.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/gpu_codegen/plan_arguments.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"
#include "nvrtc_compiler.h"

namespace mt::cuda {

namespace {

namespace G = mt::gpu_codegen;
namespace P = mt::sdk::program;

// The device's primary context, made at the first build: inside a measurement worker in a
// tuning run, never in the parent that forks them (CUDA does not survive fork()).
Context& process_context(int ordinal) {
  static std::mutex m;
  static std::unique_ptr<Context> context;
  static std::string failure;
  std::lock_guard<std::mutex> lock(m);
  if (!context && failure.empty()) {
    std::string why;
    CudaDriver* driver = CudaDriver::get(&why);
    if (!driver)
      failure = why;
    else
      try {
        context = std::make_unique<Context>(*driver, ordinal);
      } catch (const std::exception& e) {
        failure = e.what();
      }
  }
  if (!context) throw sdk::Error(MT_ERROR_UNSUPPORTED, "cuda: " + failure);
  return *context;
}

class CudaModule : public sdk::Module {
public:
  CudaModule(Context& context, G::KernelPlan plan, const G::GpuSource& source,
             const std::vector<char>& cubin)
      : context_(context), plan_(std::move(plan)), module_(context, cubin) {
    for (const auto& name : source.kernel_names)
      functions_.push_back(module_.function(name));
    for (const auto& b : plan_.buffers)
      buffers_.emplace_back(context, static_cast<size_t>(b->size_bytes()));
    written_ = G::written_params(plan_);
  }

  void run(const std::vector<sdk::TensorView>& args) override {
    upload(args);
    launch_all();
    context_.synchronize();
    download(args);
  }

  // Device time between CUDA events around the calls of each repeat, with the L2 cache
  // flushed before each repeat; the arguments stay on the device.
  std::vector<double> time(const std::vector<sdk::TensorView>& args, int repeats,
                           double min_repeat_seconds) override {
    upload(args);
    launch_all();
    context_.synchronize();
    std::vector<double> out;
    Event start(context_), end(context_);
    for (int r = 0; r < repeats; ++r) {
      context_.flush_l2();
      int64_t calls = 0;
      double elapsed = 0;
      start.record();
      do {
        launch_all();
        ++calls;
        end.record();
        elapsed = Event::elapsed_ms(start, end) / 1e3;
      } while (elapsed < min_repeat_seconds);
      out.push_back(elapsed / static_cast<double>(calls));
    }
    download(args);
    return out;
  }

private:
  void upload(const std::vector<sdk::TensorView>& args) {
    G::check_arguments(plan_, args, "cuda");
    for (size_t i = 0; i < args.size(); ++i) {
      const P::BufferNode& b = *plan_.buffers[i];
      buffers_[i].upload(args[i].data, static_cast<size_t>(b.size_bytes()));
    }
  }

  void download(const std::vector<sdk::TensorView>& args) {
    for (size_t i = 0; i < args.size(); ++i)
      if (written_[i])
        buffers_[i].download(args[i].data, static_cast<size_t>(plan_.buffers[i]->size_bytes()));
  }

  void launch_all() {
    G::run_host_steps(plan_, [&](int k, const std::vector<int64_t>& scalars) {
      const G::LaunchDims& d = plan_.kernels[static_cast<size_t>(k)].dims;
      std::vector<long long> values(scalars.begin(), scalars.end());
      std::vector<void*> params;
      for (auto& b : buffers_)
        params.push_back(b.kernel_param());
      for (auto& v : values)
        params.push_back(&v);
      std::array<unsigned, 3> grid{}, block{};
      for (int i = 0; i < 3; ++i) {
        grid[static_cast<size_t>(i)] = static_cast<unsigned>(d.grid[i]);
        block[static_cast<size_t>(i)] = static_cast<unsigned>(d.block[i]);
      }
      context_.launch(functions_[static_cast<size_t>(k)], grid, block, params);
    });
  }

  Context& context_;
  G::KernelPlan plan_;
  cuda::Module module_;
  std::vector<cuda::Function> functions_;
  std::vector<DeviceBuffer> buffers_;
  std::vector<bool> written_;
};

class CudaTarget : public sdk::Target {
public:
  explicit CudaTarget(std::string_view config) {
    if (config.empty()) return;
    try {
      nlohmann::json j = nlohmann::json::parse(config);
      arch_ = j.value("arch", std::string());
      ordinal_ = j.value("device", 0);
      std::string t = j.value("target", std::string());
      size_t at = t.find("-arch=");
      if (arch_.empty() && at != std::string::npos)
        arch_ = t.substr(at + 6, t.find(' ', at) - (at + 6));
    } catch (const std::exception& e) {
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       std::string("cuda: configuration is not JSON: ") + e.what());
    }
  }

  std::string describe() override {
    if (!description_.empty()) return description_;
    nlohmann::json j;
    j["kind"] = "cuda";
    std::string why;
    std::optional<std::string> devices = query_devices_in_child(&why);
    std::vector<DeviceInfo> list;
    if (devices) list = devices_from_json(*devices);
    if (list.size() <= static_cast<size_t>(ordinal_)) {
      j["unavailable"] = devices ? "no CUDA device " + std::to_string(ordinal_) +
                                       " (the machine has " + std::to_string(list.size()) + ")"
                                 : why;
      // The limits of the architecture asked for (sm_80 class by default), for compile-only use.
      j["arch"] = arch_.empty() ? "sm_80" : arch_;
      j["max_threads_per_block"] = 1024;
      j["max_shared_memory_per_block"] = 49152;
      j["warp_size"] = 32;
    } else {
      const DeviceInfo& d = list[static_cast<size_t>(ordinal_)];
      if (arch_.empty()) arch_ = d.arch();
      j["device"] = d.name;
      j["arch"] = arch_;
      j["num_cores"] = d.sm_count;
      j["max_threads_per_block"] = d.max_threads_per_block;
      j["max_shared_memory_per_block"] = d.shared_memory_per_block;
      j["max_shared_memory_per_sm"] = d.shared_memory_per_sm;
      j["registers_per_block"] = d.regs_per_block;
      j["warp_size"] = d.warp_size;
      j["max_thread_x"] = d.max_block_dim[0];
      j["max_thread_y"] = d.max_block_dim[1];
      j["max_thread_z"] = d.max_block_dim[2];
      j["l2_bytes"] = d.l2_bytes;
      j["global_memory_bytes"] = d.global_memory_bytes;
    }
    j["target"] = "cuda -arch=" + j["arch"].get<std::string>();
    description_ = j.dump();
    return description_;
  }

  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    describe(); // settles the architecture
    P::Program tree = sdk::to_program_tree(lowered);
    G::KernelPlan plan;
    G::GpuSource source;
    try {
      plan = G::plan_kernels(tree);
      source = G::write_kernels(plan, *G::cuda_dialect());
      G::maybe_dump_source(plan.name, source.code, "cu");
    } catch (const G::UnsupportedError& e) {
      throw sdk::Error(MT_ERROR_UNSUPPORTED, std::string("cuda: ") + e.what());
    }
    Context& context = process_context(ordinal_);
    std::string why;
    Nvrtc* nvrtc = Nvrtc::get(&why);
    if (!nvrtc) throw sdk::Error(MT_ERROR_UNSUPPORTED, "cuda: " + why);
    NvrtcResult r = nvrtc->compile(source.code, plan.name + ".cu", arch_);
    if (!r.ok)
      throw sdk::Error(MT_ERROR_UNKNOWN, "cuda: NVRTC failed for " + arch_ + ":\n" + r.log);
    try {
      return std::make_unique<CudaModule>(context, std::move(plan), source, r.binary);
    } catch (const CudaError& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, std::string("cuda: ") + e.what());
    }
  }

private:
  std::string arch_, description_;
  int ordinal_ = 0;
};

} // namespace

} // namespace mt::cuda

METATUNE_PLUGIN("cuda", "0.1",
                "CUDA target: the GPU code generator's CUDA C++, NVRTC, driver API (dlopen)") {
  registry.add<mt::cuda::CudaTarget>("cuda", "GPU target: CUDA C++ via NVRTC on NVIDIA GPUs");
}
