// A generated source compiled, loaded and launched on the CUDA emulator (emulated_module.h).
#include "emulated_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "cuda_to_cpp.h"
#include "ptx_emulator.h"

namespace mt::gpu_test::emulator {

namespace G = mt::gpu_codegen;

Counts& Counts::operator+=(const Counts& o) {
  ptx += o.ptx;
  tma_copies += o.tma_copies;
  wgmmas += o.wgmmas;
  max_tma_in_flight = std::max(max_tma_in_flight, o.max_tma_in_flight);
  return *this;
}

namespace {

std::string run_command(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + command);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int status = pclose(p);
  if (status != 0)
    throw std::runtime_error("failed (" + std::to_string(status) + "): " + command + "\n" +
                             out.substr(0, 6000));
  return out;
}

} // namespace

EmulatedModule::EmulatedModule(const std::string& cuda) {
  std::vector<std::string> kernels;
  cpp_ = cuda_to_cpp(cuda, &kernels);
  char dir[] = "/tmp/mt-cuda-emulator-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  const std::string src = std::string(dir) + "/kernel.cpp", lib = std::string(dir) + "/kernel.so";
  std::ofstream(src) << cpp_;
  try {
    run_command(std::string(MT_HOST_CXX) + " -std=c++20 -O1 -fPIC -shared -w -I" +
                MT_CUDA_EMULATOR_DIR + " -o " + lib + " " + src);
  } catch (...) {
    std::filesystem::remove_all(dir);
    throw;
  }
  library_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::filesystem::remove_all(dir);
  if (!library_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
}

EmulatedModule::~EmulatedModule() {
  if (library_) dlclose(library_);
}

std::string EmulatedModule::launch(const std::string& name, const G::LaunchDims& dims,
                                   size_t dynamic_shared_bytes, void** params, uint64_t seed,
                                   Counts* counts) {
  auto entry =
      reinterpret_cast<void (*)(void**)>(dlsym(library_, ("mt_emu_entry_" + name).c_str()));
  if (!entry) return "no entry point for kernel " + name;
  unsigned grid[3], block[3];
  for (int i = 0; i < 3; ++i) {
    grid[i] = static_cast<unsigned>(dims.grid[i]);
    block[i] = static_cast<unsigned>(dims.block[i]);
  }
  mt_emu::LaunchStats stats;
  std::string error =
      mt_emu::run_grid(entry, params, grid, block, dynamic_shared_bytes, seed, &stats);
  if (counts) *counts += Counts{stats.ptx, stats.tma_copies, stats.wgmmas, stats.max_tma_in_flight};
  return error;
}

} // namespace mt::gpu_test::emulator
