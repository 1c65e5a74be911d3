// The cuBLAS library target as a metatune plugin, the GPU counterpart of onednn.cpu:
// - "cublas" (target): build() recognises a GEMM by the structure of the lowered program
//   (recognize_gemm.h: matmul, batch_matmul, dense without bias or activation; f16 or f32
//   operands, f16 or f32 result) and returns a module that runs cublasGemmEx /
//   cublasGemmStridedBatchedEx on device copies of the caller's tensors; anything else fails
//   with MT_ERROR_UNSUPPORTED ("not offered: ..."). time() measures as the cuda target's
//   modules do (device events, data left on the device, the L2 cache flushed before each
//   repeat), so that the tuner's records of both compare like for like.
// - "cublas.Supported" (postprocessor): accepts a schedule exactly when "cublas" would offer
//   its lowered program, with no device or library touched.
// The CUDA driver comes from the cuda plugin's vendor layer (metatune_cuda_runtime) and
// libcublas is opened with dlopen, so the plugin loads everywhere; without a device or without
// cuBLAS describe() says "unavailable" with the reason ("no CUDA device (...)", "cuBLAS not
// available (...)") and build() refuses offered programs with that reason.
// Configuration (JSON, optional): {"device": 0, "log": false}; "--target 'cublas ...'" arrives
// as {"target": ...} and selects nothing more.
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cublas_library.h"
#include "cuda_driver.h"
#include "metatune/sdk/device_timing.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"
#include "recognize_gemm.h"

namespace mt::cublas {

namespace {

// The plan of a lowered program, or MT_ERROR_UNSUPPORTED with the reason there is none.
GemmPlan plan_of(const P::Program& tree) {
  try {
    return recognize_gemm(tree);
  } catch (const NotOffered& e) {
    throw sdk::Error(MT_ERROR_UNSUPPORTED,
                     "cublas: not offered: program '" + tree.name + "' is no GEMM (" + e.why + ")");
  }
}

// The device's primary context and a cuBLAS handle on it, made at the first build: inside a
// measurement worker in a tuning run, never in the parent that forks them (CUDA does not
// survive fork()).
struct Session {
  std::unique_ptr<cuda::Context> context;
  std::unique_ptr<Handle> handle;
};

Session& process_session(int ordinal) {
  static std::mutex m;
  // Never destroyed: cuBLAS's runtime registers its exit-time teardown when the handle is
  // made, after this object, so it would run first and cublasDestroy would then call into a
  // torn-down runtime while the process exits.
  static Session& session = *new Session();
  static std::string failure;
  // No device or no library: nothing is offered here. A device that fails to give a context
  // or a handle is an error of this build, which the tuner records.
  static mt_status failure_status = MT_ERROR_UNSUPPORTED;
  std::lock_guard<std::mutex> lock(m);
  if (!session.handle && failure.empty()) {
    std::string why;
    cuda::CudaDriver* driver = cuda::CudaDriver::get(&why);
    Cublas* lib = driver ? Cublas::get(&why) : nullptr;
    if (!driver)
      failure = why;
    else if (!lib)
      failure = "cuBLAS not available (" + why + ")";
    else
      try {
        session.context = std::make_unique<cuda::Context>(*driver, ordinal);
        session.context->make_current();
        session.handle = std::make_unique<Handle>(*lib);
      } catch (const std::exception& e) {
        failure = e.what();
        failure_status = MT_ERROR_UNKNOWN;
      }
  }
  if (!session.handle) throw sdk::Error(failure_status, "cublas: " + failure);
  return session;
}

class CublasModule : public sdk::Module {
public:
  CublasModule(Session& session, const GemmPlan& plan, std::vector<P::Buffer> params)
      : session_(&session), plan_(plan), params_(std::move(params)) {
    for (const P::Buffer& b : params_)
      buffers_.emplace_back(*session_->context, static_cast<size_t>(b->size_bytes()));
    call_ = column_major_call(plan_);
    call_.a = reinterpret_cast<const void*>(buffers_[plan_.b.param].ptr());
    call_.b = reinterpret_cast<const void*>(buffers_[plan_.a.param].ptr());
    call_.c = reinterpret_cast<void*>(buffers_[plan_.c_param].ptr());
  }

  void run(const std::vector<sdk::TensorView>& args) override {
    guarded([&] {
      upload(args);
      gemm();
      session_->context->synchronize();
      download(args);
    });
  }

  // As the cuda target's modules time (gpu_codegen's DeviceModule): inputs uploaded once, the
  // L2 cache flushed before each repeat, the repeat's calls back to back between two events
  // (sdk/device_timing.hpp).
  std::vector<double> time(const std::vector<sdk::TensorView>& args, int repeats,
                           double min_repeat_seconds) override {
    std::vector<double> out;
    guarded([&] {
      upload(args);
      gemm();
      session_->context->synchronize();
      cuda::Event start(*session_->context), end(*session_->context);
      out = sdk::time_between_events(
          start, end, [&] { gemm(); }, [&] { session_->context->flush_l2(); }, repeats,
          min_repeat_seconds);
      download(args);
    });
    return out;
  }

private:
  template <class F> void guarded(F&& f) {
    try {
      f();
    } catch (const sdk::Error&) {
      throw;
    } catch (const std::exception& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, std::string("cublas: ") + e.what());
    }
  }

  void gemm() {
    session_->context->make_current();
    session_->handle->gemm(call_);
  }

  void upload(const std::vector<sdk::TensorView>& args) {
    if (args.size() != params_.size())
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "cublas: " + std::to_string(args.size()) + " arguments for " +
                           std::to_string(params_.size()) + " parameters");
    for (size_t i = 0; i < args.size(); ++i) {
      if (!(args[i].dtype == params_[i]->dtype) || args[i].shape != params_[i]->shape)
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "cublas: argument " + std::to_string(i) +
                                                        " ('" + params_[i]->name +
                                                        "') has the wrong dtype or shape (want " +
                                                        P::to_string(params_[i]->dtype) + ")");
      if (i != plan_.c_param)
        buffers_[i].upload(args[i].data, static_cast<size_t>(params_[i]->size_bytes()));
    }
  }

  void download(const std::vector<sdk::TensorView>& args) {
    buffers_[plan_.c_param].download(args[plan_.c_param].data,
                                     static_cast<size_t>(params_[plan_.c_param]->size_bytes()));
  }

  Session* session_;
  GemmPlan plan_;
  std::vector<P::Buffer> params_;
  std::vector<cuda::DeviceBuffer> buffers_;
  GemmCall call_;
};

class CublasTarget : public sdk::Target {
public:
  explicit CublasTarget(std::string_view config) {
    if (config.empty()) return;
    try {
      nlohmann::json j = nlohmann::json::parse(config);
      ordinal_ = j.value("device", 0);
      log_ = j.value("log", true);
    } catch (const std::exception& e) {
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       std::string("cublas: configuration is not JSON: ") + e.what());
    }
  }

  std::string describe() override {
    if (description_.is_null()) description_ = device_description();
    nlohmann::json j = description_;
    if (!last_plan_.empty()) j["last_build"] = {{"family", "gemm"}, {"plan", last_plan_}};
    return j.dump();
  }

  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    P::Program tree = sdk::to_program_tree(lowered);
    GemmPlan plan = plan_of(tree);
    Session& session = process_session(ordinal_);
    std::unique_ptr<sdk::Module> module;
    try {
      module = std::make_unique<CublasModule>(session, plan, tree.params);
    } catch (const std::exception& e) {
      throw sdk::Error(MT_ERROR_UNKNOWN, std::string("cublas: ") + e.what());
    }
    last_plan_ = plan.detail();
    if (log_) {
      std::string msg = "cublas: " + tree.name + " -> " + last_plan_;
      sdk::api().log(MT_LOG_INFO, mt_str{msg.data(), msg.size()});
    }
    return module;
  }

private:
  // The device (asked of a forked child: this process must not initialise CUDA before it
  // forks measurement workers) and the library, or why either is missing.
  nlohmann::json device_description() const {
    nlohmann::json j;
    j["kind"] = "cuda";
    j["library"] = "cublas";
    j["families"] = {"matmul", "batch_matmul", "dense"};
    std::string why;
    std::optional<std::string> devices = cuda::query_devices_in_child(&why);
    std::vector<cuda::DeviceInfo> list;
    if (devices) list = cuda::devices_from_json(*devices);
    if (list.size() <= static_cast<size_t>(ordinal_)) {
      j["unavailable"] = devices ? "no CUDA device " + std::to_string(ordinal_) +
                                       " (the machine has " + std::to_string(list.size()) + ")"
                                 : why;
      j["target"] = "cublas";
      return j;
    }
    const cuda::DeviceInfo& d = list[static_cast<size_t>(ordinal_)];
    j["device"] = d.name;
    j["arch"] = d.arch();
    j["target"] = "cublas -arch=" + d.arch();
    if (Cublas* lib = Cublas::get(&why)) {
      j["cublas_version"] = lib->version();
      j["cublas_library"] = lib->library();
    } else {
      j["unavailable"] = "cuBLAS not available (" + why + ")";
    }
    return j;
  }

  int ordinal_ = 0;
  bool log_ = true;
  nlohmann::json description_;
  std::string last_plan_;
};

class Supported : public sdk::Postproc {
public:
  bool apply(sdk::Schedule& sch) override {
    sdk::Program lowered = sch.lower();
    P::Program tree = sdk::to_program_tree(lowered);
    try {
      recognize_gemm(tree);
      return true;
    } catch (const NotOffered& e) {
      throw sdk::Rejected("cublas does not offer '" + tree.name + "': " + e.why);
    }
  }
};

} // namespace

} // namespace mt::cublas

METATUNE_PLUGIN("cublas", "0.1", "cuBLAS GEMMs as candidates on NVIDIA GPUs (dlopen)") {
  registry.add<mt::cublas::CublasTarget>("cublas",
                                         "GPU library target: cuBLAS GEMM (matmul, batch_matmul, "
                                         "dense) on NVIDIA GPUs");
  registry.add<mt::cublas::Supported>("cublas.Supported",
                                      "accepts exactly the schedules the cublas target offers");
}
