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
  const std::string cpp = cuda_to_cpp(cuda);
  char dir[] = "/tmp/mt-cuda-emulator-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  const std::string src = std::string(dir) + "/kernel.cpp", lib = std::string(dir) + "/kernel.so";
  std::ofstream(src) << cpp;
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
  Counts ignored;
  std::string error = mt_emu::run_grid(entry, params, grid, block, dynamic_shared_bytes, seed,
                                       counts ? counts : &ignored);
  return error;
}

} // namespace mt::gpu_test::emulator
