// Matrix-multiply workloads: matmul (GMM), batch_matmul, transpose_batch_matmul (TBG) and the
// BERT-style dense layer with bias and activation.
#include <cmath>

#include "core/workload/registry.h"
#include "core/workload/te.h"

namespace mt::workload_detail {

namespace {

using namespace mt::te;

// An operand as the product reads it: itself, or widened to the result type when the result is
// wider than the inputs (out_dtype=f32 on f16 inputs: the products are exact in f32 and summed
// there, as a tensor core's f16 -> f32 multiply-accumulate does).
Expr widened(Expr e, DType out) {
  return e->dtype == out ? e : make_cast(out, e);
}

Function build_matmul(const WorkloadParams& p) {
  int64_t M = p.get_int("M"), N = p.get_int("N"), K = p.get_int("K");
  Tensor A = placeholder({M, K}, p.dtype(), "A");
  Tensor B = placeholder({K, N}, p.dtype(), "B");
  Var k = reduce_axis(K, "k");
  DType out = out_dtype(p);
  Tensor C = compute({M, N},
                     [&](const std::vector<Expr>& v) {
                       return sum(widened(A(v[0], k), out) * widened(B(k, v[1]), out), {k});
                     },
                     "matmul", {"i", "j"});
  return build("matmul", {A, B}, {C});
}

Function build_batch_matmul(const WorkloadParams& p) {
  int64_t Bn = p.get_int("B"), M = p.get_int("M"), N = p.get_int("N"), K = p.get_int("K");
  Tensor A = placeholder({Bn, M, K}, p.dtype(), "A");
  Tensor B = placeholder({Bn, K, N}, p.dtype(), "B");
  Var k = reduce_axis(K, "k");
  DType out = out_dtype(p);
  Tensor C =
      compute({Bn, M, N},
              [&](const std::vector<Expr>& v) {
                return sum(widened(A(v[0], v[1], k), out) * widened(B(v[0], k, v[2]), out), {k});
              },
              "batch_matmul", {"b", "i", "j"});
  return build("batch_matmul", {A, B}, {C});
}

// Attention scores straight from [batch, seq, heads, dim] projections: the transposes of
// query and key are folded into the access pattern, as in the TBG benchmark.
Function build_tbg(const WorkloadParams& p) {
  int64_t Bn = p.get_int("B"), S = p.get_int("S"), H = p.get_int("H"), D = p.get_int("D");
  Tensor Q = placeholder({Bn, S, H, D}, p.dtype(), "query");
  Tensor K = placeholder({Bn, S, H, D}, p.dtype(), "key");
  Var d = reduce_axis(D, "d");
  Tensor out = compute({Bn, H, S, S},
                       [&](const std::vector<Expr>& v) {
                         return sum(Q(v[0], v[2], v[1], d) * K(v[0], v[3], v[1], d), {d});
                       },
                       "transpose_batch_matmul", {"b", "h", "i", "j"});
  return build("transpose_batch_matmul", {Q, K}, {out});
}

Function build_dense(const WorkloadParams& p) {
  int64_t M = p.get_int("M"), N = p.get_int("N"), K = p.get_int("K");
  DType t = p.dtype();
  Tensor X = placeholder({M, K}, t, "data");
  Tensor W = placeholder({N, K}, t, "weight");
  Var k = reduce_axis(K, "k");
  DType acc = out_dtype(p);
  Tensor out = compute({M, N},
                       [&](const std::vector<Expr>& v) {
                         return sum(widened(X(v[0], k), acc) * widened(W(v[1], k), acc), {k});
                       },
                       "dense", {"i", "j"});
  std::vector<Tensor> inputs = {X, W};
  if (p.get_bool("bias")) {
    Tensor bias = placeholder({N}, acc, "bias");
    inputs.push_back(bias);
    Tensor prev = out;
    out = compute({M, N}, [&](const std::vector<Expr>& v) { return prev(v[0], v[1]) + bias(v[1]); },
                  "bias_add", {"i", "j"});
  }
  const std::string& act = p.get_string("act");
  if (act != "none") {
    Tensor prev = out;
    out = compute({M, N},
                  [&](const std::vector<Expr>& v) -> Expr {
                    Expr x = prev(v[0], v[1]);
                    if (act == "relu") return max(x, 0.0);
                    return x * 0.5 * (erf(x * (1.0 / std::sqrt(2.0))) + 1.0);
                  },
                  act, {"i", "j"});
  }
  return build("dense", inputs, {out});
}

} // namespace

void add_gemm_workloads(std::vector<WorkloadDef>* defs) {
  defs->push_back({{"matmul",
                    "GMM: matmul[M,N] = sum_k A[M,K] * B[K,N]; args: A, B, matmul",
                    {int_param("M", 1024, "rows of A and of the result"),
                     int_param("N", 1024, "columns of B and of the result"),
                     int_param("K", 1024, "reduction length"), dtype_param(), out_dtype_param()}},
                   build_matmul,
                   {"matmul(M=32,N=24,K=16)", "matmul(M=17,N=13,K=9)",
                    "matmul(M=32,N=32,K=32,dtype=f16,out_dtype=f32)"}});
  defs->push_back({{"batch_matmul",
                    "batch_matmul[B,M,N] = sum_k A[B,M,K] * B[B,K,N]; args: A, B, batch_matmul",
                    {int_param("B", 16, "batch size"), int_param("M", 128, "rows"),
                     int_param("N", 128, "columns"), int_param("K", 64, "reduction length"),
                     dtype_param(), out_dtype_param()}},
                   build_batch_matmul,
                   {"batch_matmul(B=3,M=16,N=12,K=8)"}});
  defs->push_back(
      {{"transpose_batch_matmul",
        "TBG: attention scores out[B,H,S,S] = sum_d query[B,S,H,D] * key[B,S,H,D] (both "
        "operands read transposed); args: query, key, transpose_batch_matmul",
        {int_param("B", 1, "batch size"), int_param("S", 128, "sequence length"),
         int_param("H", 12, "heads"), int_param("D", 64, "head dimension (reduced)"),
         dtype_param()}},
       build_tbg,
       {"transpose_batch_matmul(B=2,S=12,H=2,D=8)"}});
  defs->push_back(
      {{"dense",
        "BERT dense layer: dense[M,N] = sum_k data[M,K] * weight[N,K], then bias_add and "
        "relu/gelu (erf form) blocks; args: data, weight, [bias], result",
        {int_param("M", 128, "rows (tokens)"), int_param("N", 3072, "output features"),
         int_param("K", 768, "input features"), bool_param("bias", true, "add a bias[N] block"),
         string_param("act", "gelu", "activation block after the bias", {"none", "relu", "gelu"}),
         dtype_param(), out_dtype_param()}},
       build_dense,
       {"dense(M=8,N=32,K=16)", "dense(M=16,N=32,K=16,dtype=f16,out_dtype=f32)",
        "dense(M=5,N=12,K=20,bias=0,act=relu)", "dense(M=4,N=8,K=8,act=none)"}});
}

} // namespace mt::workload_detail
