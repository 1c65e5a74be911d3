// Ahead-of-time output: an object file, a shared library linked from it by the system C
// compiler driver, and a JSON descriptor, so that an application can dlopen a tuned kernel and
// call it through kernel_abi.h without LLVM; or many kernels in one library (a model's).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "llvm_backend.h"
#include "metatune/llvm_cpu/compiler.hpp"

namespace mt::llvm_cpu {

namespace P = mt::sdk::program;

namespace {
nlohmann::json params_json(const P::Program& p) {
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
  return params;
}
} // namespace

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
  j["params"] = params_json(p);
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

namespace {

// The object files of a library being linked, in a folder of their own removed afterwards
// (also when compiling or linking throws).
class ObjectFolder {
public:
  explicit ObjectFolder(const std::filesystem::path& so) : dir_(so.string() + ".objects") {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ObjectFolder() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string add(const std::string& code) {
    std::string path = (dir_ / ("k" + std::to_string(objects_.size()) + ".o")).string();
    write_file(path, code);
    objects_.push_back(path);
    return path;
  }
  // Links the objects into `so` with the system compiler driver; throws with its output.
  void link(const std::string& so) const {
    const char* cc = std::getenv("CC");
    std::string driver = cc && *cc ? cc : "cc";
    std::string log = (dir_ / "link.log").string();
    std::string cmd = driver + " -shared -o " + shell_quote(so);
    for (const std::string& o : objects_)
      cmd += " " + shell_quote(o);
    cmd += " -lm > " + shell_quote(log) + " 2>&1";
    if (std::system(cmd.c_str()) == 0 && std::filesystem::exists(so)) return;
    std::ifstream f(log);
    std::stringstream out;
    out << f.rdbuf();
    throw CodegenError("linking " + so + " failed (" + driver + " -shared ... -lm): " + out.str());
  }

private:
  std::filesystem::path dir_;
  std::vector<std::string> objects_;
};

} // namespace

std::string export_kernel_library(const std::vector<P::Program>& programs,
                                  const std::vector<std::string>& symbols,
                                  const std::string& so_path, const CompileOptions& opts) {
  if (programs.size() != symbols.size())
    throw CodegenError("export: " + std::to_string(programs.size()) + " programs, " +
                       std::to_string(symbols.size()) + " symbols");
  std::set<std::string> seen;
  for (const std::string& s : symbols)
    if (!seen.insert(s).second) throw CodegenError("export: symbol '" + s + "' given twice");
  Target target = parse_target(opts.target);
  auto tm = make_target_machine(target, opts.opt_level);
  std::filesystem::path so = std::filesystem::absolute(so_path);
  if (so.has_parent_path()) std::filesystem::create_directories(so.parent_path());
  ObjectFolder objects(so);
  nlohmann::json kernels = nlohmann::json::array();
  for (size_t i = 0; i < programs.size(); ++i) {
    // One module per kernel, as the JIT builds them: the same code as in process.
    CompileOptions o = opts;
    o.symbol = symbols[i];
    llvm::LLVMContext ctx;
    std::string symbol;
    auto m = build_module(programs[i], o, target, *tm, ctx, &symbol);
    optimize_module(*m, *tm, opts.opt_level);
    objects.add(emit_machine_code(*m, *tm, false));
    kernels.push_back(
        {{"name", programs[i].name}, {"symbol", symbol}, {"params", params_json(programs[i])}});
  }
  objects.link(so.string());
  nlohmann::json j;
  j["format"] = "metatune-kernel-library";
  j["version"] = 1;
  j["abi"] = "mt_llvm_kernel";
  j["signature"] = "int32_t(void** args, const mt_llvm_runtime* rt)";
  j["runtime"] = {{"kind", "mt_llvm_runtime"}, {"version", MT_LLVM_RUNTIME_VERSION}};
  j["target"] = target.str();
  j["kernels"] = kernels;
  return j.dump(2);
}

} // namespace mt::llvm_cpu
