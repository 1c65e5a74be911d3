// Normalisation workloads: softmax (SFM), layernorm, rmsnorm and the L2 norm (NRM). Each
// reduction and each elementwise step is its own block, as a graph compiler would emit them.
#include "core/workload/registry.h"
#include "core/workload/te.h"

namespace mt::workload_detail {

namespace {

using namespace mt::te;

constexpr double kEps = 1e-5;

Function build_softmax(const WorkloadParams& p) {
  const int64_t M = p.get_int("M"), N = p.get_int("N");
  Tensor x = placeholder({M, N}, p.dtype(), "data");
  Var k1 = reduce_axis(N, "k"), k2 = reduce_axis(N, "k");
  Tensor mx =
      compute({M}, [&](const std::vector<Expr>& v) { return max_reduce(x(v[0], k1), {k1}); },
              "softmax_maxelem", {"i"});
  Tensor e =
      compute({M, N}, [&](const std::vector<Expr>& v) { return exp(x(v[0], v[1]) - mx(v[0])); },
              "softmax_exp", {"i", "j"});
  Tensor total = compute({M}, [&](const std::vector<Expr>& v) { return sum(e(v[0], k2), {k2}); },
                         "softmax_expsum", {"i"});
  Tensor out =
      compute({M, N}, [&](const std::vector<Expr>& v) { return e(v[0], v[1]) / total(v[0]); },
              "softmax_norm", {"i", "j"});
  return build("softmax", {x}, {out});
}

// Two-pass layer normalisation (mean, then the mean of squared deviations) over each row.
Function build_layernorm(const WorkloadParams& p) {
  const int64_t M = p.get_int("M"), N = p.get_int("N");
  const DType t = p.dtype();
  Tensor x = placeholder({M, N}, t, "data");
  Tensor gamma = placeholder({N}, t, "gamma");
  Tensor beta = placeholder({N}, t, "beta");
  const double inv_n = 1.0 / static_cast<double>(N);
  Var k1 = reduce_axis(N, "k"), k2 = reduce_axis(N, "k");
  Tensor total = compute({M}, [&](const std::vector<Expr>& v) { return sum(x(v[0], k1), {k1}); },
                         "layernorm_sum", {"i"});
  Tensor sqdev = compute({M},
                         [&](const std::vector<Expr>& v) {
                           Expr d = x(v[0], k2) - total(v[0]) * inv_n;
                           return sum(d * d, {k2});
                         },
                         "layernorm_sqdev", {"i"});
  Tensor out =
      compute({M, N},
              [&](const std::vector<Expr>& v) {
                Expr centered = x(v[0], v[1]) - total(v[0]) * inv_n;
                return centered * rsqrt(sqdev(v[0]) * inv_n + kEps) * gamma(v[1]) + beta(v[1]);
              },
              "layernorm", {"i", "j"});
  return build("layernorm", {x, gamma, beta}, {out});
}

Function build_rmsnorm(const WorkloadParams& p) {
  const int64_t M = p.get_int("M"), N = p.get_int("N");
  const DType t = p.dtype();
  Tensor x = placeholder({M, N}, t, "data");
  Tensor w = placeholder({N}, t, "weight");
  const double inv_n = 1.0 / static_cast<double>(N);
  Var k = reduce_axis(N, "k");
  Tensor sq =
      compute({M}, [&](const std::vector<Expr>& v) { return sum(x(v[0], k) * x(v[0], k), {k}); },
              "rmsnorm_sqsum", {"i"});
  Tensor out = compute({M, N},
                       [&](const std::vector<Expr>& v) {
                         return x(v[0], v[1]) * rsqrt(sq(v[0]) * inv_n + kEps) * w(v[1]);
                       },
                       "rmsnorm", {"i", "j"});
  return build("rmsnorm", {x, w}, {out});
}

Function build_norm(const WorkloadParams& p) {
  const int64_t B = p.get_int("B"), M = p.get_int("M"), N = p.get_int("N");
  Tensor x = placeholder({B, M, N}, p.dtype(), "data");
  Var rm = reduce_axis(M, "rm"), rn = reduce_axis(N, "rn");
  Tensor sq = compute({B},
                      [&](const std::vector<Expr>& v) {
                        Expr e = x(v[0], rm, rn);
                        return sum(e * e, {rm, rn});
                      },
                      "norm_sqsum", {"b"});
  Tensor out =
      compute({B}, [&](const std::vector<Expr>& v) { return sqrt(sq(v[0])); }, "norm", {"b"});
  return build("norm", {x}, {out});
}

} // namespace

void add_norm_workloads(std::vector<WorkloadDef>* defs) {
  defs->push_back(
      {{"softmax",
        "SFM: softmax over the last axis of data[M,N] as four blocks (max, exp, sum, divide); "
        "args: data, softmax_norm",
        {int_param("M", 128, "rows"), int_param("N", 1000, "row length (softmax axis)"),
         dtype_param()}},
       build_softmax,
       {"softmax(M=8,N=33)", "softmax(M=1,N=7)"}});
  defs->push_back({{"layernorm",
                    "layer normalisation of each row of data[M,N] with gamma[N], beta[N], "
                    "eps 1e-5; args: data, gamma, beta, layernorm",
                    {int_param("M", 128, "rows (tokens)"),
                     int_param("N", 768, "normalised length (hidden size)"), dtype_param()}},
                   build_layernorm,
                   {"layernorm(M=8,N=32)", "layernorm(M=3,N=17)"}});
  defs->push_back({{"rmsnorm",
                    "RMS normalisation of each row of data[M,N] scaled by weight[N], eps 1e-5; "
                    "args: data, weight, rmsnorm",
                    {int_param("M", 128, "rows (tokens)"),
                     int_param("N", 768, "normalised length (hidden size)"), dtype_param()}},
                   build_rmsnorm,
                   {"rmsnorm(M=8,N=32)"}});
  defs->push_back({{"norm",
                    "NRM: L2 norm of each batch item, norm[B] = sqrt(sum_mn data[B,M,N]^2); "
                    "args: data, norm",
                    {int_param("B", 1, "batch size"), int_param("M", 256, "rows (reduced)"),
                     int_param("N", 256, "columns (reduced)"), dtype_param()}},
                   build_norm,
                   {"norm(B=2,M=8,N=16)"}});
}

} // namespace mt::workload_detail
