// The CUDA target as a metatune plugin (component "cuda"): lowered programs become CUDA C++
// through the shared GPU code generator, NVRTC compiles them in process to a CUBIN for the
// device's architecture, and the driver API (opened with dlopen) runs and times them. The
// plugin loads everywhere; without a driver or device it describes itself as unavailable
// ("no CUDA device (...)"), so tuning for cuda fails with that message instead of crashing.
// Configuration (JSON, optional): {"arch": "sm_80", "device": 0}; "--target 'cuda -arch=sm_90'"
// arrives as {"target": "cuda -arch=sm_90"}.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda_driver.h"
#include "metatune/gpu_codegen/device_module.hpp"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/gpu_codegen/target_support.hpp"
#include "metatune/sdk/cuda_arch.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"
#include "nvrtc_compiler.h"

namespace mt::cuda {

namespace {

namespace G = mt::gpu_codegen;
namespace P = mt::sdk::program;

// The device's primary context, made at the first build: inside a measurement worker in a
// tuning run, never in the parent that forks them (CUDA does not survive fork()). It lives until
// the process exits and is never destroyed: as a static it was destroyed at exit after the
// driver (constructed later, so destroyed first), releasing the context through the driver's
// freed function table -- a crash at exit after all else had run (gpu_cuda_device_tests, exit
// 139 on the H200).
Context& process_context(int ordinal) {
  static std::mutex m;
  static Context* context = nullptr;
  static std::string failure;
  std::lock_guard<std::mutex> lock(m);
  if (!context && failure.empty()) {
    std::string why;
    CudaDriver* driver = CudaDriver::get(&why);
    if (!driver)
      failure = why;
    else
      try {
        context = new Context(*driver, ordinal);
      } catch (const std::exception& e) {
        failure = e.what();
      }
  }
  if (!context) throw sdk::Error(MT_ERROR_UNSUPPORTED, "cuda: " + failure);
  return *context;
}

// The shared memory a block may have with the kernel's opt-in (dynamic shared memory beyond
// the 48 KB a kernel declares statically), by architecture, for compile-only use: the CUDA
// programming guide's table of compute capabilities. 48 KB where the architecture is unknown.
int64_t opt_in_shared_bytes(const std::string& arch) {
  const int sm = sdk::sm_version(arch);
  if (sm == 70 || sm == 72) return 96 * 1024;
  if (sm == 75) return 64 * 1024;
  if (sm == 80 || sm == 87) return 163 * 1024;
  if (sm == 86 || sm == 89 || sm == 120) return 99 * 1024;
  if (sm == 90 || sm == 100) return 227 * 1024;
  return 48 * 1024;
}

constexpr int64_t kRegistersPerThread = 255;

// The driver API under the shared device module (device_module.hpp).
struct CudaBackend {
  using Buffer = DeviceBuffer;
  using Event = cuda::Event;
  Context* context;
  std::unique_ptr<cuda::Module> module;
  std::vector<cuda::Function> functions;

  Buffer buffer(size_t bytes) { return DeviceBuffer(*context, bytes); }
  Event event() { return cuda::Event(*context); }
  void launch(size_t k, const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
              const std::vector<void*>& params) {
    context->launch(functions[k], grid, block, params);
  }
  void synchronize() { context->synchronize(); }
  void flush_l2() { context->flush_l2(); }
  std::array<uint64_t, 16> tensor_map(const Buffer& b, const G::TensorMapSpec& spec) {
    return encode_tensor_map(context->driver(), b.ptr(), spec.bf16, spec.dims, spec.strides_bytes,
                             spec.box);
  }
};

class CudaTarget : public sdk::Target {
public:
  explicit CudaTarget(std::string_view config)
      : config_(G::GpuTargetConfig::parse(config, "cuda")), arch_(config_.arch),
        ordinal_(config_.device) {}

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
      j["max_shared_memory_per_block"] = opt_in_shared_bytes(j["arch"].get<std::string>());
      j["warp_size"] = 32;
    } else {
      const DeviceInfo& d = list[static_cast<size_t>(ordinal_)];
      if (arch_.empty()) arch_ = d.arch();
      j["device"] = d.name;
      j["arch"] = arch_;
      j["num_cores"] = d.sm_count;
      j["max_threads_per_block"] = d.max_threads_per_block;
      // What a kernel may use, the generator sizing shared memory at launch beyond 48 KB.
      j["max_shared_memory_per_block"] =
          std::max(d.shared_memory_per_block, d.shared_memory_per_block_optin);
      j["max_shared_memory_per_sm"] = d.shared_memory_per_sm;
      j["registers_per_block"] = d.regs_per_block;
      j["warp_size"] = d.warp_size;
      j["max_thread_x"] = d.max_block_dim[0];
      j["max_thread_y"] = d.max_block_dim[1];
      j["max_thread_z"] = d.max_block_dim[2];
      j["l2_bytes"] = d.l2_bytes;
      j["global_memory_bytes"] = d.global_memory_bytes;
    }
    // A thread's arrays (VerifyGPUCode counts the "local" ones, a copy per virtual thread) fit
    // in registers up to 255 of them, on every architecture since sm_35; beyond, the array
    // lives in local memory whatever the schedule. Of the 4096^3 f32 bench's samples, 7 of 12
    // had 256-float accumulators and 1 KB stack frames (ptxas): trials spent on kernels that
    // can only be slow.
    j["max_local_memory_per_block"] = kRegistersPerThread * 4;
    j["target"] = "cuda -arch=" + j["arch"].get<std::string>();
    description_ = j.dump();
    return description_;
  }

  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    describe(); // settles the architecture
    G::GeneratedProgram g = G::generate(lowered, *G::cuda_dialect(), "cuda", "cu");
    // Compiled before the device is opened: without one, a build still reports what NVRTC
    // says of the kernel, and the time it takes (bench_compile_time) before failing to load.
    std::string why;
    Nvrtc* nvrtc = Nvrtc::get(&why);
    if (!nvrtc) throw sdk::Error(MT_ERROR_UNSUPPORTED, "cuda: " + why);
    // Hopper's warpgroup MMA exists only in sm_90a's instruction set (code for it runs on
    // sm_90 devices alone, which is what the kernel is built for).
    const std::string arch = arch_ == "sm_90" && g.source.code.find("wgmma.") != std::string::npos
                                 ? std::string("sm_90a")
                                 : arch_;
    NvrtcResult r = nvrtc->compile(g.source.code, g.plan.name + ".cu", arch);
    if (!r.ok) throw sdk::Error(MT_ERROR_UNKNOWN, "cuda: NVRTC failed for " + arch + ":\n" + r.log);
    Context& context = process_context(ordinal_);
    try {
      CudaBackend backend{&context, std::make_unique<cuda::Module>(context, r.binary), {}};
      for (size_t k = 0; k < g.source.kernel_names.size(); ++k) {
        backend.functions.push_back(backend.module->function(g.source.kernel_names[k]));
        if (int64_t bytes = g.source.dynamic_shared_bytes[k])
          backend.functions.back().use_dynamic_shared(context, static_cast<unsigned>(bytes));
      }
      return std::make_unique<G::DeviceModule<CudaBackend>>(std::move(backend), std::move(g.plan),
                                                            "cuda", g.source.tensor_maps);
    } catch (const CudaError& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, std::string("cuda: ") + e.what());
    }
  }

private:
  G::GpuTargetConfig config_;
  std::string arch_, description_;
  int ordinal_ = 0;
};

} // namespace

} // namespace mt::cuda

METATUNE_PLUGIN("cuda", "0.1",
                "CUDA target: the GPU code generator's CUDA C++, NVRTC, driver API (dlopen)") {
  registry.add<mt::cuda::CudaTarget>("cuda", "GPU target: CUDA C++ via NVRTC on NVIDIA GPUs");
}
