// The LLVM CPU target as a metatune plugin: registers the component "llvm.cpu" through the SDK.
// Configuration (JSON, all optional): {"target": "llvm -mcpu=... -mattr=...",
// "opt_level": 3, "num_threads": N}. build() turns the host's lowered program into the SDK
// program tree and JIT-compiles it; the module runs it on the plugin's thread pool.
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "metatune/llvm_cpu/compiler.hpp"
#include "metatune/llvm_cpu/runtime.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"

namespace mt::llvm_cpu {

namespace {

namespace P = mt::sdk::program;

class LlvmModule : public sdk::Module {
public:
  LlvmModule(std::unique_ptr<JitKernel> kernel, std::vector<P::Buffer> params)
      : kernel_(std::move(kernel)), params_(std::move(params)) {}

  void run(const std::vector<sdk::TensorView>& args) override {
    if (args.size() != params_.size())
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       kernel_->symbol() + ": " + std::to_string(args.size()) + " arguments for " +
                           std::to_string(params_.size()) + " parameters");
    std::vector<void*> ptrs(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const P::BufferNode& b = *params_[i];
      if (!(args[i].dtype == b.dtype) || args[i].shape != b.shape)
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                         kernel_->symbol() + ": argument " + std::to_string(i) + " ('" + b.name +
                             "') has the wrong dtype or shape (want " + P::to_string(b.dtype) +
                             " with " + std::to_string(b.shape.size()) + " dimensions)");
      ptrs[i] = args[i].data;
    }
    int32_t rc = (*kernel_)(ptrs.data());
    if (rc != MT_LLVM_OK)
      throw sdk::Error(MT_ERROR_UNKNOWN, kernel_->symbol() + " failed with code " +
                                             std::to_string(rc) +
                                             (rc == MT_LLVM_ERR_ALLOC ? " (out of memory)" : ""));
  }

private:
  std::unique_ptr<JitKernel> kernel_;
  std::vector<P::Buffer> params_;
};

class LlvmCpuTarget : public sdk::Target {
public:
  explicit LlvmCpuTarget(std::string_view config) {
    if (!config.empty()) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(config);
      } catch (const std::exception& e) {
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                         std::string("llvm.cpu: configuration is not JSON: ") + e.what());
      }
      opts_.target = j.value("target", std::string());
      opts_.opt_level = j.value("opt_level", 3);
      if (j.contains("num_threads")) set_num_threads(j["num_threads"].get<int>());
    }
    try {
      target_ = parse_target(opts_.target);
    } catch (const std::invalid_argument& e) {
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, std::string("llvm.cpu: ") + e.what());
    }
  }

  std::string describe() override {
    nlohmann::json j;
    j["kind"] = "llvm";
    j["target"] = target_.str();
    j["triple"] = target_.triple;
    j["cpu"] = target_.cpu;
    j["features"] = target_.features;
    j["num_cores"] = num_threads();
    j["vector_bytes"] = target_.vector_bits() / 8;
    return j.dump();
  }

  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    P::Program tree = P::with_free_buffers_allocated(sdk::to_program_tree(lowered));
    try {
      auto kernel = jit_compile(tree, opts_);
      return std::make_unique<LlvmModule>(std::move(kernel), tree.params);
    } catch (const CodegenError& e) {
      throw sdk::Error(MT_ERROR_UNSUPPORTED, std::string("llvm.cpu: ") + e.what());
    }
  }

private:
  CompileOptions opts_;
  llvm_cpu::Target target_; // (sdk::Target is the base class)
};

} // namespace

} // namespace mt::llvm_cpu

METATUNE_PLUGIN("llvm_cpu", "0.1", "LLVM 16 CPU code generator (JIT, vector code, thread pool)") {
  registry.add<mt::llvm_cpu::LlvmCpuTarget>("llvm.cpu", "CPU target: LLVM IR -> ORC JIT");
}
