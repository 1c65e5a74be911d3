// hip_compiler.h: HIP C++ source -> AMD GPU code object, for the rocm target plugin.
//
// clang (ROCm's, or Debian's clang-15 that hipcc drives) runs as a subprocess:
//   clang++ -x hip --cuda-device-only --offload-arch=gfxXXX --no-gpu-bundle-output -O3
//           --rocm-path=... --rocm-device-lib-path=... -c SRC -o OUT
// with a timeout, its diagnostics kept. Not hiprtc in process: ROCm 5.2's hiprtc (inside
// libamdhip64) aborts the whole process ("munmap_chunk(): invalid pointer") when asked for a
// target its device libraries lack (gfx1100), and a tuner must survive a bad candidate. No GPU
// is needed to compile.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace mt::rocm {

struct HipCompileResult {
  bool ok = false;              // a code object was produced
  std::string log;              // the compiler's stderr (warnings too); the reason when !ok
  std::vector<char> code_object; // an ELF for hipModuleLoadData
};

class HipCompiler {
public:
  // The process-wide compiler, found on first use (thread-safe); nullptr with *why when no
  // usable clang or no ROCm device libraries are found. Looks for clang at
  // $METATUNE_HIP_CLANG, /opt/rocm/llvm/bin/clang++, /usr/lib/llvm-15/bin/clang++,
  // /usr/bin/clang++-15; for the device libraries (ocml.bc, ...) at $METATUNE_ROCM_DEVICE_LIBS,
  // /opt/rocm/amdgcn/bitcode, /usr/lib/x86_64-linux-gnu/amdgcn/bitcode, /usr/lib/amdgcn/bitcode.
  static const HipCompiler* get(std::string* why);

  const std::string& clang() const { return clang_; }
  const std::string& device_libs() const { return device_libs_; }
  // The --rocm-path given to clang (where include/hip lives): /opt/rocm or /usr.
  const std::string& rocm_path() const { return rocm_path_; }

  // Compiles `source` for `arch` ("gfx90a"); `name` labels diagnostics. Never throws on bad
  // source, an unknown or unbuildable arch, or a compiler that crashes or hangs (killed after
  // `timeout`): ok=false and the reason in log (the compiler's own message where it gave one,
  // e.g. "invalid target ID 'gfx942'" or "cannot find ROCm device library for gfx1100").
  HipCompileResult compile(const std::string& source, const std::string& name,
                           const std::string& arch, const std::vector<std::string>& extra = {},
                           std::chrono::milliseconds timeout = std::chrono::seconds(120)) const;

  // True when a log carries no diagnostics (empty or whitespace only).
  static bool log_is_clean(const std::string& log);

private:
  HipCompiler(std::string clang, std::string device_libs, std::string rocm_path)
      : clang_(std::move(clang)), device_libs_(std::move(device_libs)),
        rocm_path_(std::move(rocm_path)) {}
  std::string clang_, device_libs_, rocm_path_;
};

} // namespace mt::rocm
