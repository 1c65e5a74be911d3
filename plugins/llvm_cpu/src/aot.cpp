// Ahead-of-time output: an object file, a shared library linked from it by the system C
// compiler driver, and a JSON descriptor, so that an application can dlopen a tuned kernel and
// call it through kernel_abi.h without LLVM.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "llvm_backend.h"
#include "metatune/llvm_cpu/compiler.hpp"

namespace mt::llvm_cpu {

namespace P = mt::sdk::program;

std::string kernel_descriptor(const P::Program& p, const std::string& symbol,
                              const Target& target) {
  nlohmann::json j;
  j["format"] = "metatune-llvm-kernel";
  j["version"] = 1;
  j["name"] = p.name;
  j["symbol"] = symbol;
  j["abi"] = "int32_t(void** args, const mt_llvm_runtime* rt)";
  j["runtime_version"] = MT_LLVM_RUNTIME_VERSION;
  j["target"] = {{"triple", target.triple},
                 {"cpu", target.cpu},
                 {"features", target.features},
                 {"string", target.str()}};
  auto mask = P::output_mask(p);
  nlohmann::json params = nlohmann::json::array();
  for (size_t i = 0; i < p.params.size(); ++i) {
    const auto& b = *p.params[i];
    params.push_back({{"name", b.name},
                      {"dtype", P::to_string(b.dtype)},
                      {"shape", b.shape},
                      {"bytes", b.size_bytes()},
                      {"output", static_cast<bool>(mask[i])}});
  }
  j["params"] = params;
  return j.dump(2);
}

namespace {
void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw CodegenError("cannot write " + path);
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
} // namespace

AotArtifacts compile_aot(const P::Program& p, const std::string& dir, const std::string& basename,
                         const CompileOptions& opts) {
  Target target = parse_target(opts.target);
  auto tm = make_target_machine(target, opts.opt_level);
  llvm::LLVMContext ctx;
  std::string symbol;
  auto m = build_module(p, opts, target, *tm, ctx, &symbol);
  optimize_module(*m, *tm, opts.opt_level);
  std::filesystem::create_directories(dir);
  AotArtifacts out;
  std::string base = (std::filesystem::path(dir) / basename).string();
  out.object_path = base + ".o";
  write_file(out.object_path, emit_machine_code(*m, *tm, false));
  out.descriptor_path = base + ".json";
  write_file(out.descriptor_path, kernel_descriptor(p, symbol, target));
  const char* cc = std::getenv("CC");
  std::string driver = cc && *cc ? cc : "cc";
  std::string so = base + ".so";
  std::string cmd = driver + " -shared -o " + shell_quote(so) + " " + shell_quote(out.object_path) +
                    " -lm 2>/dev/null";
  if (std::system(cmd.c_str()) == 0 && std::filesystem::exists(so)) out.shared_lib_path = so;
  return out;
}

} // namespace mt::llvm_cpu
