// Loading kernels.so (see kernel_library.h).
#include "kernel_library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include "metatune/runtime/compiled_model.h"

namespace mt::rt {

KernelLibrary::KernelLibrary(const std::string& path) : path_(path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw Error(path + ": missing (the artifact's kernels)");
  // RTLD_LOCAL: two artifacts in one process keep their kernels apart.
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = ::dlerror();
    throw Error(path + ": cannot be loaded: " + (why ? why : "unknown dlopen error"));
  }
}

KernelLibrary::~KernelLibrary() {
  if (handle_) ::dlclose(handle_);
}

mt_llvm_kernel_fn KernelLibrary::kernel(const std::string& symbol, const std::string& what) const {
  ::dlerror();
  void* p = ::dlsym(handle_, symbol.c_str());
  if (!p) throw Error(path_ + ": no symbol '" + symbol + "' (" + what + ")");
  return reinterpret_cast<mt_llvm_kernel_fn>(p);
}

} // namespace mt::rt
