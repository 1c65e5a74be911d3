// The ROCm target as a metatune plugin (component "rocm"): lowered programs become HIP C++
// through the shared GPU code generator (its HIP dialect: the CUDA spelling with clang's
// constants), clang compiles them to a code object for the device's gfx target (or the one
// configured), and the HIP runtime (opened with dlopen) runs and times them. The plugin loads
// everywhere; without an AMD GPU it describes itself as unavailable ("no ROCm device (...)"),
// so tuning for rocm fails with that message instead of crashing.
// Configuration (JSON, optional): {"arch": "gfx90a", "device": 0}; "--target 'rocm -arch=gfx940'"
// arrives as {"target": "rocm -arch=gfx940"}.
#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hip_compiler.h"
#include "hip_runtime.h"
#include "metatune/gpu_codegen/device_module.hpp"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/gpu_codegen/target_support.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"

namespace mt::rocm {

namespace {

namespace G = mt::gpu_codegen;
namespace P = mt::sdk::program;

// The device, opened at the first build: inside a measurement worker in a tuning run, never in
// the parent that forks them.
Device& process_device(int ordinal) {
  static std::mutex m;
  static std::unique_ptr<Device> device;
  static std::string failure;
  std::lock_guard<std::mutex> lock(m);
  if (!device && failure.empty()) {
    std::string why;
    HipRuntime* runtime = HipRuntime::get(&why);
    if (!runtime)
      failure = why;
    else
      try {
        device = std::make_unique<Device>(*runtime, ordinal);
      } catch (const std::exception& e) {
        failure = e.what();
      }
  }
  if (!device) throw sdk::Error(MT_ERROR_UNSUPPORTED, "rocm: " + failure);
  return *device;
}

// The HIP runtime under the shared device module (device_module.hpp).
struct HipBackend {
  using Buffer = DeviceBuffer;
  using Event = rocm::Event;
  Device* device;
  std::unique_ptr<rocm::Module> module;
  std::vector<void*> functions;

  Buffer buffer(size_t bytes) { return DeviceBuffer(*device, bytes); }
  Event event() { return rocm::Event(*device); }
  void launch(size_t k, const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
              const std::vector<void*>& params) {
    device->launch(functions[k], grid, block, params);
  }
  void synchronize() { device->synchronize(); }
  void flush_l2() { device->flush_l2(); }
};

class RocmTarget : public sdk::Target {
public:
  explicit RocmTarget(std::string_view config)
      : config_(G::GpuTargetConfig::parse(config, "rocm")), arch_(config_.arch),
        ordinal_(config_.device) {}

  std::string describe() override {
    if (!description_.empty()) return description_;
    nlohmann::json j;
    j["kind"] = "rocm";
    std::string why;
    std::optional<std::string> devices = query_devices_in_child(&why);
    std::vector<DeviceInfo> list;
    if (devices) list = devices_from_json(*devices);
    if (list.size() <= static_cast<size_t>(ordinal_)) {
      j["unavailable"] = devices ? "no ROCm device " + std::to_string(ordinal_) +
                                       " (the machine has " + std::to_string(list.size()) + ")"
                                 : why;
      // CDNA 2 (gfx90a) limits by default, for compiling without a device.
      j["arch"] = arch_.empty() ? "gfx90a" : arch_;
      j["max_threads_per_block"] = 1024;
      j["max_shared_memory_per_block"] = 65536;
      j["warp_size"] = 64;
    } else {
      const DeviceInfo& d = list[static_cast<size_t>(ordinal_)];
      if (arch_.empty()) arch_ = d.arch;
      j["device"] = d.name;
      j["arch"] = arch_;
      j["num_cores"] = d.compute_units;
      j["max_threads_per_block"] = d.max_threads_per_block;
      j["max_shared_memory_per_block"] = d.lds_bytes_per_block;
      j["registers_per_block"] = d.registers_per_block;
      j["warp_size"] = d.wavefront_size;
      j["max_thread_x"] = d.max_block_dim[0];
      j["max_thread_y"] = d.max_block_dim[1];
      j["max_thread_z"] = d.max_block_dim[2];
      j["l2_bytes"] = d.l2_bytes;
      j["global_memory_bytes"] = d.global_memory_bytes;
    }
    j["target"] = "rocm -arch=" + j["arch"].get<std::string>();
    description_ = j.dump();
    return description_;
  }

  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    describe(); // settles the architecture
    G::GeneratedProgram g = G::generate(lowered, *G::hip_dialect(), "rocm", "hip");
    Device& device = process_device(ordinal_);
    std::string why;
    const HipCompiler* compiler = HipCompiler::get(&why);
    if (!compiler) throw sdk::Error(MT_ERROR_UNSUPPORTED, "rocm: " + why);
    HipCompileResult r = compiler->compile(g.source.code, g.plan.name + ".hip", arch_);
    if (!r.ok)
      throw sdk::Error(MT_ERROR_UNKNOWN, "rocm: clang failed for " + arch_ + ":\n" + r.log);
    try {
      HipBackend backend{&device, std::make_unique<rocm::Module>(device, r.code_object), {}};
      for (const auto& name : g.source.kernel_names)
        backend.functions.push_back(backend.module->function(name));
      return std::make_unique<G::DeviceModule<HipBackend>>(std::move(backend), std::move(g.plan),
                                                           "rocm");
    } catch (const HipError& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, std::string("rocm: ") + e.what());
    }
  }

private:
  G::GpuTargetConfig config_;
  std::string arch_, description_;
  int ordinal_ = 0;
};

} // namespace

} // namespace mt::rocm

METATUNE_PLUGIN("rocm", "0.1",
                "ROCm target: the GPU code generator's HIP C++, clang, HIP runtime (dlopen)") {
  registry.add<mt::rocm::RocmTarget>("rocm", "GPU target: HIP C++ via clang on AMD GPUs");
}
