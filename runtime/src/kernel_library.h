// kernels.so of an artifact: dlopen'ed for the process's lifetime of the model, its kernels
// looked up by symbol. Errors name the file and the symbol.
#pragma once

#include <string>

#include "metatune/llvm_cpu/kernel_abi.h"

namespace mt::rt {

class KernelLibrary {
public:
  explicit KernelLibrary(const std::string& path);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;
  // `what` says who asks for it (for the message when the library does not export it).
  mt_llvm_kernel_fn kernel(const std::string& symbol, const std::string& what) const;
  const std::string& path() const { return path_; }

private:
  std::string path_;
  void* handle_ = nullptr;
};

} // namespace mt::rt
