// cublas_library.cpp: libcublas through dlopen/dlsym (see cublas_library.h).
#include "cublas_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <type_traits>
#include <vector>

namespace mt::cublas {

namespace {

// cuBLAS's own enum values (cublas_api.h, library_types.h).
constexpr int kStatusSuccess = 0;
constexpr int kComputeType32F = 68; // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;    // CUBLAS_GEMM_DEFAULT
constexpr int kDefaultMath = 0;     // CUBLAS_DEFAULT_MATH
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: a split-K reduction of an f16 result is
// made in f32, not in f16 -- the sum a kernel accumulating in f32 computes.
constexpr int kDisallowReducedPrecisionReduction = 16;
constexpr int kMajorVersion = 0, kMinorVersion = 1, kPatchLevel = 2; // libraryPropertyType

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

} // namespace

struct Cublas::Api {
  using Create = int (*)(void**);
  using Destroy = int (*)(void*);
  using SetMathMode = int (*)(void*, int);
  using GetProperty = int (*)(int, int*);
  using StatusString = const char* (*)(int);
  using GemmEx = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int,
                         const void*, int, int, const void*, void*, int, int, int, int);
  using GemmStridedBatchedEx = int (*)(void*, int, int, int, int, int, const void*, const void*,
                                       int, int, long long, const void*, int, int, long long,
                                       const void*, void*, int, int, long long, int, int, int);
  Create create = nullptr;
  Destroy destroy = nullptr;
  SetMathMode set_math_mode = nullptr;
  GetProperty get_property = nullptr;
  StatusString status_string = nullptr; // optional: older releases lack it
  GemmEx gemm_ex = nullptr;
  GemmStridedBatchedEx gemm_strided_batched_ex = nullptr;

  std::string describe(int status) const {
    const char* s = status_string ? status_string(status) : nullptr;
    return (s ? std::string(s) : "cuBLAS status") + " (" + std::to_string(status) + ")";
  }
  void check(int status, const char* call) const {
    if (status != kStatusSuccess) throw CublasError(std::string(call) + ": " + describe(status));
  }
};

Cublas::Cublas(Api* api, std::string library, std::string version)
    : api_(api), library_(std::move(library)), version_(std::move(version)) {}

// Never unloaded, like libcuda (cuda_driver.cpp): the library's runtime starts threads and
// registers exit handlers that outlive any object of ours.
Cublas::~Cublas() = default;

Cublas* Cublas::get(std::string* why) {
  static std::once_flag once;
  static Cublas* instance = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::vector<std::string> names;
    if (const char* env = std::getenv("METATUNE_CUBLAS_LIBRARY"); env && *env)
      names.emplace_back(env);
    else
      names = {"libcublas.so.13", "libcublas.so"};
    void* handle = nullptr;
    std::string opened, errors;
    for (const std::string& n : names) {
      handle = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        opened = n;
        break;
      }
      errors += (errors.empty() ? "" : "; ") + dl_error();
    }
    if (!handle) {
      failure = names.front() + " not found: " + errors;
      return;
    }
    auto* api = new Api();
    const char* missing = nullptr;
    auto need = [&](const char* symbol, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
      if (!fn && !missing) missing = symbol;
    };
    need("cublasCreate_v2", api->create);
    need("cublasDestroy_v2", api->destroy);
    need("cublasSetMathMode", api->set_math_mode);
    need("cublasGetProperty", api->get_property);
    need("cublasGemmEx", api->gemm_ex);
    need("cublasGemmStridedBatchedEx", api->gemm_strided_batched_ex);
    api->status_string =
        reinterpret_cast<Api::StatusString>(dlsym(handle, "cublasGetStatusString"));
    if (missing) {
      failure = opened + " lacks " + missing;
      delete api;
      return;
    }
    int v[3] = {0, 0, 0};
    for (int p : {kMajorVersion, kMinorVersion, kPatchLevel})
      if (api->get_property(p, &v[p]) != kStatusSuccess) v[p] = -1;
    instance =
        new Cublas(api, opened,
                   std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]));
  });
  if (!instance && why) *why = failure;
  return instance;
}

Handle::Handle(const Cublas& lib) : lib_(&lib) {
  const Cublas::Api& api = lib.api();
  api.check(api.create(&handle_), "cublasCreate");
  try {
    api.check(api.set_math_mode(handle_, kDefaultMath | kDisallowReducedPrecisionReduction),
              "cublasSetMathMode");
  } catch (...) {
    api.destroy(handle_);
    throw;
  }
}

Handle::~Handle() {
  if (handle_) lib_->api().destroy(handle_);
}

void Handle::gemm(const GemmCall& g) const {
  // CUBLAS_COMPUTE_32F for every input type: f16 inputs then run on tensor cores with f32
  // accumulation (the products and sums a tensor-core kernel of ours computes), and f32
  // inputs stay f32 -- CUBLAS_COMPUTE_32F_FAST_TF32 would round them to TF32's 10-bit
  // mantissa, which is neither the workload's arithmetic nor a fair rival for f32 kernels.
  const float one = 1.0f, zero = 0.0f;
  const Cublas::Api& api = lib_->api();
  if (g.batch == 1)
    api.check(api.gemm_ex(handle_, static_cast<int>(g.trans_a), static_cast<int>(g.trans_b), g.m,
                          g.n, g.k, &one, g.a, static_cast<int>(g.a_type), g.lda, g.b,
                          static_cast<int>(g.b_type), g.ldb, &zero, g.c, static_cast<int>(g.c_type),
                          g.ldc, kComputeType32F, kGemmDefault),
              "cublasGemmEx");
  else
    api.check(api.gemm_strided_batched_ex(handle_, static_cast<int>(g.trans_a),
                                          static_cast<int>(g.trans_b), g.m, g.n, g.k, &one, g.a,
                                          static_cast<int>(g.a_type), g.lda, g.stride_a, g.b,
                                          static_cast<int>(g.b_type), g.ldb, g.stride_b, &zero, g.c,
                                          static_cast<int>(g.c_type), g.ldc, g.stride_c, g.batch,
                                          kComputeType32F, kGemmDefault),
              "cublasGemmStridedBatchedEx");
}

} // namespace mt::cublas
