// CUDA C++ spelling of the generated kernels (dialect.hpp), compiled by NVRTC. Kernels are
// extern "C" so that their names are the plan's, unmangled, for cuModuleGetFunction.
#include "dialect_cuda.h"

namespace mt::gpu_codegen {

std::unique_ptr<Dialect> cuda_dialect() {
  return std::make_unique<CudaDialect>();
}

} // namespace mt::gpu_codegen
