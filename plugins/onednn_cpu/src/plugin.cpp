// The oneDNN CPU target as a metatune plugin. Components:
// - "onednn.cpu" (target): build() recognises the lowered program's operator by structure
//   (recognize.hpp) and returns a module running the oneDNN primitive; a program oneDNN does
//   not implement fails with MT_ERROR_UNSUPPORTED and the reason. describe() reports the
//   device, oneDNN's version, the families offered and the last build's plan and oneDNN
//   implementation (also logged at info level).
// - "onednn.Supported" (postprocessor): accepts a schedule exactly when onednn.cpu would build
//   its lowered program, without creating primitives: the cheap "is it offered?" question.
// Configuration of onednn.cpu (JSON, optional): {"log": false} silences the build log;
// {"target": "onednn -fpmath=bf16"} (a target string, as `--library "onednn.cpu -fpmath=bf16"`
// hands it over) makes the matmuls against packed weights compute in bf16 (dnnl_module.hpp's
// ModuleOptions) where the CPU has bf16 instructions; elsewhere they stay f32, with a warning.
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include "dnnl_module.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/program_builder.hpp"
#include "recognize.hpp"

namespace mt::onednn {

namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += ' ';
    } else {
      o += c;
    }
  }
  return o;
}

// The plan of a lowered program, or the reason there is none.
Plan plan_of(const P::Program& tree) {
  try {
    return recognize(tree);
  } catch (const NotRecognised& e) {
    throw sdk::Error(MT_ERROR_UNSUPPORTED, "onednn.cpu: program '" + tree.name +
                                               "' is no operator oneDNN implements (" + e.why +
                                               ")");
  }
}

// True where oneDNN runs bf16 matmuls in hardware (AVX512-BF16 or AMX); on AVX-512 without
// them it would emulate, slower than f32, and on AVX2 oneDNN 2.6 has no bf16 matmul at all.
bool has_bf16_instructions() {
  auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

class OnednnCpuTarget : public sdk::Target {
public:
  explicit OnednnCpuTarget(std::string_view config) {
    if (config.empty()) return;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(config);
    } catch (const std::exception& e) {
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       std::string("onednn.cpu: the configuration is not JSON: ") + e.what());
    }
    if (!j.is_object())
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "onednn.cpu: the configuration is no object");
    if (j.contains("log") && j["log"].is_boolean()) log_ = j["log"].get<bool>();
    if (j.contains("target") && j["target"].is_string()) options(j["target"].get<std::string>());
  }

  std::string describe() override {
    const dnnl_version_t* v = dnnl_version();
    std::string j = "{\"kind\": \"onednn\", \"device\": \"cpu\", \"num_cores\": " +
                    std::to_string(std::thread::hardware_concurrency()) +
                    ", \"onednn_version\": \"" + std::to_string(v->major) + "." +
                    std::to_string(v->minor) + "." + std::to_string(v->patch) +
                    "\", \"cpu_isa\": \"" + isa_name() +
                    "\", \"families\": [\"matmul\", \"batch_matmul\", \"conv1d\", \"conv2d\", "
                    "\"conv3d\", \"pool1d\", \"pool2d\", \"pool3d\", \"softmax\", \"layernorm\", "
                    "\"reduction\", \"norm\", \"eltwise\", \"binary\"], \"fpmath\": \"" +
                    std::string(module_options_.fpmath_bf16 ? "bf16" : "f32") + "\"";
    if (!last_family_.empty())
      j += ", \"last_build\": {\"family\": \"" + json_escape(last_family_) + "\", \"plan\": \"" +
           json_escape(last_detail_) + "\", \"implementation\": \"" + json_escape(last_impl_) +
           "\"}";
    return j + "}";
  }

  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    P::Program tree = sdk::to_program_tree(lowered);
    Plan plan = plan_of(tree);
    auto module = make_dnnl_module(plan, tree.params, module_options_);
    last_family_ = plan.family;
    last_detail_ = plan.detail;
    last_impl_ = module->implementation();
    if (log_) {
      std::string msg = "onednn.cpu: " + tree.name + " -> " + plan.family + " " + plan.detail +
                        " [" + last_impl_ + "]";
      sdk::api().log(MT_LOG_INFO, mt_str{msg.data(), msg.size()});
    }
    return module;
  }

private:
  // The words after the target's name: "-fpmath=f32" (the default) or "-fpmath=bf16".
  void options(const std::string& target) {
    std::istringstream words(target);
    std::string w;
    words >> w; // "onednn"
    while (words >> w) {
      if (w == "-fpmath=bf16") {
        module_options_.fpmath_bf16 = true;
      } else if (w == "-fpmath=f32") {
        module_options_.fpmath_bf16 = false;
      } else {
        throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "onednn.cpu: unknown option '" + w + "' in '" +
                                                        target +
                                                        "' (options: -fpmath=f32, -fpmath=bf16)");
      }
    }
    if (module_options_.fpmath_bf16 && !has_bf16_instructions()) {
      module_options_.fpmath_bf16 = false;
      std::string msg = "onednn.cpu: -fpmath=bf16 asked, but this CPU (oneDNN ISA " + isa_name() +
                        ") has no bf16 instructions (AVX512-BF16 or AMX): matmuls stay f32";
      sdk::api().log(MT_LOG_WARNING, mt_str{msg.data(), msg.size()});
    }
  }

  static std::string isa_name() {
    switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
    }
  }

  bool log_ = true;
  ModuleOptions module_options_;
  std::string last_family_, last_detail_, last_impl_;
};

class Supported : public sdk::Postproc {
public:
  bool apply(sdk::Schedule& sch) override {
    sdk::Program lowered = sch.lower();
    P::Program tree = sdk::to_program_tree(lowered);
    try {
      recognize(tree);
      return true;
    } catch (const NotRecognised& e) {
      throw sdk::Rejected("onednn.cpu does not offer '" + tree.name + "': " + e.why);
    }
  }
};

} // namespace

} // namespace mt::onednn

METATUNE_PLUGIN("onednn_cpu", "0.1", "oneDNN primitives as candidates, recognised by structure") {
  registry.add<mt::onednn::OnednnCpuTarget>("onednn.cpu",
                                            "CPU target: oneDNN primitives for the operators it "
                                            "implements (matmul, conv, pool, softmax, ...)");
  registry.add<mt::onednn::Supported>("onednn.Supported",
                                      "accepts exactly the schedules onednn.cpu can build");
}
