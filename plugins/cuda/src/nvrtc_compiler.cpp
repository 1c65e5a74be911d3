// nvrtc_compiler.cpp: loads libnvrtc with dlopen and drives one compile per call (see
// nvrtc_compiler.h). compile() takes no lock: each call owns its nvrtcProgram, NVRTC allows
// concurrent calls on distinct programs, and the tuner compiles candidates from several
// threads at once (tests/cuda checks concurrent compiles).
#include "nvrtc_compiler.h"

#include "cuda_abi.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <utility>

namespace mt::cuda {

struct Nvrtc::Api {
  abi::PFN_nvrtcGetErrorString get_error_string = nullptr;
  abi::PFN_nvrtcVersion version = nullptr;
  abi::PFN_nvrtcGetNumSupportedArchs get_num_supported_archs = nullptr; // optional (11.2+)
  abi::PFN_nvrtcGetSupportedArchs get_supported_archs = nullptr;        // optional (11.2+)
  abi::PFN_nvrtcCreateProgram create_program = nullptr;
  abi::PFN_nvrtcDestroyProgram destroy_program = nullptr;
  abi::PFN_nvrtcCompileProgram compile_program = nullptr;
  abi::PFN_nvrtcGetProgramLogSize get_program_log_size = nullptr;
  abi::PFN_nvrtcGetProgramLog get_program_log = nullptr;
  abi::PFN_nvrtcGetCUBINSize get_cubin_size = nullptr;
  abi::PFN_nvrtcGetCUBIN get_cubin = nullptr;
  abi::PFN_nvrtcGetPTXSize get_ptx_size = nullptr;
  abi::PFN_nvrtcGetPTX get_ptx = nullptr;
};

namespace {

template <class Fn> bool resolve(void* handle, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return out != nullptr;
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

// The toolkit headers that match the loaded NVRTC are the ones next to it (<root>/lib64 and
// <root>/include); /usr/local/cuda is the fallback for a library found elsewhere. NVRTC 13 has
// no built-in cuda_fp16.h, so without -I those includes fail.
std::string find_include_dir(void* symbol_in_library) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  Dl_info info{};
  if (symbol_in_library && dladdr(symbol_in_library, &info) != 0 && info.dli_fname) {
    std::error_code ec;
    fs::path lib = fs::weakly_canonical(fs::path(info.dli_fname), ec);
    if (!ec) candidates.push_back(lib.parent_path().parent_path() / "include");
  }
  candidates.emplace_back("/usr/local/cuda/include");
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::exists(dir / "cuda_fp16.h", ec)) return dir.string();
  }
  return {};
}

// NVRTC dlopens its builtins library (libnvrtc-builtins.so.13.0) by name at the first compile.
// Where the toolkit's lib directory is not on the loader's path (no ld.so.conf entry, no
// LD_LIBRARY_PATH: a fresh root with /usr/local/cuda mounted) that fails with
// NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, although the file sits next to the libnvrtc we
// opened. Loading it from there first makes NVRTC's own dlopen find it by its soname.
void preload_builtins(void* symbol_in_library) {
  namespace fs = std::filesystem;
  Dl_info info{};
  if (!symbol_in_library || dladdr(symbol_in_library, &info) == 0 || !info.dli_fname) return;
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::path(info.dli_fname), ec).parent_path();
  if (ec) return;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("libnvrtc-builtins.so", 0) == 0)
      dlopen(entry.path().c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

std::string error_string(const Nvrtc::Api& api, abi::nvrtcResult r) {
  const char* s = api.get_error_string ? api.get_error_string(r) : nullptr;
  return s ? s : "NVRTC error " + std::to_string(r);
}

// Destroys the program on every path out of compile(), including a bad_alloc.
struct ProgramGuard {
  const Nvrtc::Api& api;
  abi::nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) api.destroy_program(&program);
  }
};

} // namespace

Nvrtc::Nvrtc(std::string library, std::unique_ptr<Api> api)
    : library_(std::move(library)), api_(std::move(api)) {
  include_dir_ = find_include_dir(reinterpret_cast<void*>(api_->version));
  preload_builtins(reinterpret_cast<void*>(api_->version));
}

// The dlopen handle is never closed: the singleton lives until exit, NVRTC keeps its builtins
// library open, and unloading at exit buys nothing.
Nvrtc::~Nvrtc() = default;

Nvrtc* Nvrtc::get(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<Nvrtc> instance;
  static std::string reason;
  std::call_once(once, [] {
    std::vector<std::string> names;
    const char* env = std::getenv("METATUNE_NVRTC_LIBRARY");
    if (env && *env) names.emplace_back(env);
    for (const char* n :
         {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"})
      names.emplace_back(n);

    void* handle = nullptr;
    std::string opened, first_error, tried;
    for (const std::string& n : names) {
      tried += (tried.empty() ? "" : ", ") + n;
      handle = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        opened = n;
        break;
      }
      // The first failure is the telling one when METATUNE_NVRTC_LIBRARY was set; otherwise
      // every attempt fails the same way ("cannot open shared object file").
      if (first_error.empty()) first_error = dl_error();
    }
    if (!handle) {
      reason = "libnvrtc not found (tried " + tried + "): " + first_error;
      return;
    }

    auto api = std::make_unique<Api>();
    const char* missing = nullptr;
    auto need = [&](const char* symbol, auto& fn) {
      if (!resolve(handle, symbol, fn) && !missing) missing = symbol;
    };
    need("nvrtcGetErrorString", api->get_error_string);
    need("nvrtcVersion", api->version);
    need("nvrtcCreateProgram", api->create_program);
    need("nvrtcDestroyProgram", api->destroy_program);
    need("nvrtcCompileProgram", api->compile_program);
    need("nvrtcGetProgramLogSize", api->get_program_log_size);
    need("nvrtcGetProgramLog", api->get_program_log);
    need("nvrtcGetCUBINSize", api->get_cubin_size); // CUDA 11.1+
    need("nvrtcGetCUBIN", api->get_cubin);
    need("nvrtcGetPTXSize", api->get_ptx_size);
    need("nvrtcGetPTX", api->get_ptx);
    resolve(handle, "nvrtcGetNumSupportedArchs", api->get_num_supported_archs);
    resolve(handle, "nvrtcGetSupportedArchs", api->get_supported_archs);
    if (missing) {
      reason = opened + " lacks " + missing + " (NVRTC from CUDA 11.1 or newer is needed)";
      dlclose(handle);
      return;
    }
    instance.reset(new Nvrtc(opened, std::move(api)));
  });
  if (!instance && why) *why = reason;
  return instance.get();
}

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  if (api_->version(&major, &minor) != abi::NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> Nvrtc::supported_archs() const {
  std::vector<std::string> out;
  if (!api_->get_num_supported_archs || !api_->get_supported_archs) return out;
  int count = 0;
  if (api_->get_num_supported_archs(&count) != abi::NVRTC_SUCCESS || count <= 0) return out;
  std::vector<int> archs(static_cast<std::size_t>(count));
  if (api_->get_supported_archs(archs.data()) != abi::NVRTC_SUCCESS) return out;
  for (int a : archs)
    out.push_back("sm_" + std::to_string(a));
  return out;
}

bool Nvrtc::log_is_clean(const std::string& log) {
  for (char c : log)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '\0') return false;
  return true;
}

NvrtcResult Nvrtc::compile(const std::string& source, const std::string& name,
                           const std::string& arch,
                           const std::vector<std::string>& extra_options) const {
  NvrtcResult result;
  const Api& api = *api_;

  std::vector<std::string> options;
  options.push_back("--gpu-architecture=" + arch);
  bool has_std = false;
  for (const std::string& o : extra_options)
    if (o.rfind("--std", 0) == 0 || o.rfind("-std", 0) == 0) has_std = true;
  if (!has_std) options.emplace_back("--std=c++17");
  if (!include_dir_.empty()) options.push_back("-I" + include_dir_);
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const std::string& o : options)
    argv.push_back(o.c_str());

  ProgramGuard guard{api};
  abi::nvrtcResult r = api.create_program(
      &guard.program, source.c_str(), name.empty() ? nullptr : name.c_str(), 0, nullptr, nullptr);
  if (r != abi::NVRTC_SUCCESS) {
    guard.program = nullptr;
    result.log = "nvrtcCreateProgram: " + error_string(api, r) + "\n";
    return result;
  }

  abi::nvrtcResult compiled =
      api.compile_program(guard.program, static_cast<int>(argv.size()), argv.data());

  std::size_t log_size = 0;
  if (api.get_program_log_size(guard.program, &log_size) == abi::NVRTC_SUCCESS && log_size > 1) {
    std::string log(log_size, '\0');
    if (api.get_program_log(guard.program, log.data()) == abi::NVRTC_SUCCESS) {
      log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
      result.log = std::move(log);
    }
  }
  if (compiled != abi::NVRTC_SUCCESS) {
    // For option errors the log can be empty: say which call failed and how.
    result.log += "nvrtcCompileProgram: " + error_string(api, compiled) + "\n";
    return result;
  }

  std::size_t ptx_size = 0;
  if (api.get_ptx_size(guard.program, &ptx_size) == abi::NVRTC_SUCCESS && ptx_size > 1) {
    std::string ptx(ptx_size, '\0');
    if (api.get_ptx(guard.program, ptx.data()) == abi::NVRTC_SUCCESS) {
      ptx.resize(ptx_size - 1); // the size counts the terminating NUL
      result.ptx_or_empty = std::move(ptx);
    }
  }

  std::size_t cubin_size = 0;
  r = api.get_cubin_size(guard.program, &cubin_size);
  if (r != abi::NVRTC_SUCCESS || cubin_size == 0) {
    result.log += "no CUBIN for --gpu-architecture=" + arch +
                  (r != abi::NVRTC_SUCCESS ? " (nvrtcGetCUBINSize: " + error_string(api, r) + ")"
                                           : std::string(" (a virtual arch gives PTX only; use "
                                                         "sm_XX)")) +
                  "\n";
    return result;
  }
  result.binary.resize(cubin_size);
  r = api.get_cubin(guard.program, result.binary.data());
  if (r != abi::NVRTC_SUCCESS) {
    result.binary.clear();
    result.log += "nvrtcGetCUBIN: " + error_string(api, r) + "\n";
    return result;
  }
  result.ok = true;
  return result;
}

} // namespace mt::cuda
