// nvrtc_compiler.h: CUDA C++ source -> CUBIN through NVRTC, for the CUDA target plugin.
//
// libnvrtc is opened at run time with dlopen, never linked, so that the plugin loads (and
// reports "libnvrtc not found") on machines without the CUDA toolkit. NVRTC needs no GPU and no
// driver: kernels can be compiled, and compile errors caught, on a build machine.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace mt::cuda {

struct NvrtcResult {
  bool ok = false;          // a CUBIN was produced
  std::string log;          // NVRTC's log, kept on success too: warnings live there
  std::vector<char> binary; // the CUBIN (an ELF image for cuModuleLoadData)
  std::string ptx_or_empty; // the PTX NVRTC produced alongside, when it did
};

class Nvrtc {
public:
  // The process-wide instance, loaded on first use (thread-safe). nullptr when libnvrtc
  // cannot be opened or lacks an entry point; *why (if given) then says why.
  // Looks, in order, at $METATUNE_NVRTC_LIBRARY, libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12,
  // /usr/local/cuda/lib64/libnvrtc.so.
  static Nvrtc* get(std::string* why);

  // "13.0": NVRTC's own version, which decides which archs it can target.
  std::string version() const;
  // The file that was opened (as given to dlopen).
  const std::string& library() const { return library_; }
  // The directory passed as -I so that <cuda_fp16.h>/<cuda_bf16.h> resolve; empty when no
  // toolkit headers were found (those includes then fail with a clear log).
  const std::string& include_dir() const { return include_dir_; }
  // "sm_75", "sm_80", ...: the real archs this NVRTC can produce a CUBIN for. Empty when the
  // library predates nvrtcGetSupportedArchs (CUDA < 11.2).
  std::vector<std::string> supported_archs() const;

  // Compiles `source` (a whole translation unit; kernels meant to be looked up by name should
  // be extern "C") to a CUBIN for `arch` ("sm_80"). `name` only labels diagnostics.
  // Options given: --gpu-architecture=<arch>, --std=c++17 (unless extra_options has a --std),
  // -I<include_dir()> when found, then extra_options. Never throws on bad source or options:
  // ok=false and the reason is in log. A virtual arch (compute_80) yields PTX but no CUBIN,
  // which is reported as ok=false.
  NvrtcResult compile(const std::string& source, const std::string& name, const std::string& arch,
                      const std::vector<std::string>& extra_options = {}) const;

  // True when a log carries no diagnostics at all (empty or whitespace only), which is what
  // "compiled without warnings" means.
  static bool log_is_clean(const std::string& log);

  struct Api; // the resolved entry points (nvrtc_compiler.cpp)
  ~Nvrtc();
  Nvrtc(const Nvrtc&) = delete;
  Nvrtc& operator=(const Nvrtc&) = delete;

private:
  Nvrtc(std::string library, std::unique_ptr<Api> api);

  std::string library_;
  std::string include_dir_;
  std::unique_ptr<Api> api_;
};

} // namespace mt::cuda
