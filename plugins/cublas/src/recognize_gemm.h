// recognize_gemm.h: which lowered programs the cublas target offers, decided by structure
// alone (loop nests, stores, loads and their indices; never a name): one reduction nest
//   C[b?, i, j] = sum_k A[...] * B[...]
// with f16 or f32 operands (each load possibly cast to C's type) and an f16 or f32 result,
// whose operand indices are plain loop variables: A is [b?, i, k] or [b?, k, i], B is
// [b?, k, j] or [b?, j, k] (a dense layer's weight [N, K]), and an operand without the batch
// variable is shared by the batch (stride 0). That covers the workload library's matmul,
// batch_matmul and dense without bias or activation; anything else -- an epilogue, a scheduled
// (split, bound) nest, several batch dims, other types -- is not offered, with the reason.
#pragma once

#include <cstdint>
#include <string>

#include "cublas_library.h"
#include "metatune/sdk/program.hpp"

namespace mt::cublas {

namespace P = mt::sdk::program;

// Raised by recognize_gemm: the program is no GEMM the target offers, and why.
struct NotOffered {
  std::string why;
};

// A row-major operand of the product, as stored in a parameter.
struct Operand {
  size_t param = 0;
  P::DType dtype;
  bool transposed = false;  // A stored [K, M], or B stored [N, K]
  int64_t batch_stride = 0; // elements between batch entries; 0 = shared by the batch
};

// C[batch, M, N] = A[batch, M, K] x B[batch, K, N], all row-major.
struct GemmPlan {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  Operand a, b;
  size_t c_param = 0;
  P::DType c_dtype;

  // "[4,8] x [16,8]^T -> [4,16] f32 x f32 -> f32", for logs and describe().
  std::string detail() const;
};

// Throws NotOffered for anything but the nest described above.
GemmPlan recognize_gemm(const P::Program& program);

// The cuBLAS call computing `plan` (pointers left null): cuBLAS is column-major, and a
// row-major C = A x B is the column-major C^T = B^T x A^T.
GemmCall column_major_call(const GemmPlan& plan);

} // namespace mt::cublas
