// cublas_library.h: the part of cuBLAS (libcublas.so.13) the cublas target calls -- a handle
// and the two GEMM entry points -- opened with dlopen at run time, so that the plugin builds
// without the CUDA toolkit and loads on machines without it. The ABI it needs (enum values,
// signatures) is declared here, as plugins/cuda/src/cuda_abi.h does for the driver; the values
// are those of cublas_api.h and library_types.h, which keep them stable across releases.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mt::cublas {

// cudaDataType values.
enum class DataType : int { R32F = 0, R16F = 2 };

// cublasOperation_t: what cuBLAS does to an operand before the product.
enum class Op : int { N = 0, T = 1 };

// A cuBLAS status other than CUBLAS_STATUS_SUCCESS, or a missing library.
class CublasError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// One column-major GEMM as cuBLAS takes it: C[m, n] = op(A)[m, k] * op(B)[k, n], `batch`
// of them `stride_*` elements apart (stride 0: the same matrix for every batch).
struct GemmCall {
  Op trans_a = Op::N, trans_b = Op::N;
  int m = 0, n = 0, k = 0;
  const void* a = nullptr;
  DataType a_type = DataType::R32F;
  int lda = 0;
  long long stride_a = 0;
  const void* b = nullptr;
  DataType b_type = DataType::R32F;
  int ldb = 0;
  long long stride_b = 0;
  void* c = nullptr;
  DataType c_type = DataType::R32F;
  int ldc = 0;
  long long stride_c = 0;
  int batch = 1;
};

class Cublas {
public:
  // The process-wide library: dlopen of $METATUNE_CUBLAS_LIBRARY, else libcublas.so.13, else
  // libcublas.so. Loaded once (thread-safe); nullptr when unusable, *why then says why
  // ("libcublas.so.13 not found: ...").
  static Cublas* get(std::string* why);

  // "13.1.0" (cublasGetProperty; no device needed).
  std::string version() const { return version_; }
  // The library file that was opened.
  const std::string& library() const { return library_; }

  struct Api; // the resolved entry points (cublas_library.cpp)
  const Api& api() const { return *api_; }

  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

private:
  Cublas(Api* api, std::string library, std::string version);
  Api* api_;
  std::string library_, version_;
};

// A cuBLAS handle bound to the calling thread's current CUDA context (the device's primary
// context, which is the one cuBLAS's runtime uses too). Every call runs on the default stream,
// where the driver API's events and copies run as well.
class Handle {
public:
  explicit Handle(const Cublas& lib);
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  // cublasGemmEx (batch 1) or cublasGemmStridedBatchedEx, alpha 1, beta 0, computing in f32
  // (see the .cpp for why no faster compute type). Asynchronous; throws CublasError.
  void gemm(const GemmCall& g) const;

private:
  const Cublas* lib_;
  void* handle_ = nullptr;
};

} // namespace mt::cublas
