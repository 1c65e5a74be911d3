// Pooling workloads: pool2d (max or average over a window, NCHW), with padding as its own
// block (filled with the lowest value for max pooling, zero for average pooling).
#include "core/workload/registry.h"
#include "core/workload/te.h"

namespace mt::workload_detail {

namespace {

using namespace mt::te;

Function build_pool2d(const WorkloadParams& p) {
  const int64_t N = p.get_int("N"), C = p.get_int("C"), H = p.get_int("H"), W = p.get_int("W");
  const int64_t K = p.get_int("K"), s = p.get_int("stride"), pd = p.get_int("padding");
  const bool is_max = p.get_string("kind") == "max";
  const DType t = p.dtype();
  if (pd >= K)
    workload_error(p, "padding=" + std::to_string(pd) + " must be < K=" + std::to_string(K) +
                          " (a window must not lie entirely in the padding)");
  if (H + 2 * pd < K || W + 2 * pd < K)
    workload_error(p, "window K=" + std::to_string(K) + " exceeds the padded input");
  const int64_t OH = (H + 2 * pd - K) / s + 1, OW = (W + 2 * pd - K) / s + 1;
  Tensor data = placeholder({N, C, H, W}, t, "data");
  Tensor src = data;
  const std::vector<std::string> names = {"n", "c", "y", "x"};
  if (pd > 0)
    src = pad(data, {0, 0, pd, pd}, {0, 0, pd, pd}, is_max ? min_value(t) : 0.0, "pad", names);
  Var ry = reduce_axis(K, "ry"), rx = reduce_axis(K, "rx");
  auto window = [&](const std::vector<Expr>& v) {
    return src(v[0], v[1], (s == 1 ? v[2] : v[2] * s) + ry, (s == 1 ? v[3] : v[3] * s) + rx);
  };
  Tensor out;
  if (is_max) {
    out = compute(
        {N, C, OH, OW},
        [&](const std::vector<Expr>& v) {
          return max_reduce(window(v), {ry, rx});
        },
        "pool_max", names);
  } else {
    // Average over the whole window, padding included (count_include_pad).
    Tensor total = compute(
        {N, C, OH, OW},
        [&](const std::vector<Expr>& v) {
          return sum(window(v), {ry, rx});
        },
        "pool_sum", names);
    const double inv = 1.0 / static_cast<double>(K * K);
    out = compute(
        {N, C, OH, OW}, [&](const std::vector<Expr>& v) { return total(v) * inv; }, "pool_avg",
        names);
  }
  return build("pool2d", {data}, {out});
}

} // namespace

void add_pool_workloads(std::vector<WorkloadDef>* defs) {
  defs->push_back(
      {{"pool2d",
        "2-D max/avg pooling over K x K windows of data[N,C,H,W] (avg counts padding); args: "
        "data, result",
        {int_param("N", 1, "batch size"), int_param("C", 64, "channels"),
         int_param("H", 112, "input height"), int_param("W", 112, "input width"),
         int_param("K", 3, "window size"), int_param("stride", 2, "stride"),
         int_param("padding", 1, "padding on each side (a separate pad block)", 0),
         string_param("kind", "max", "pooling function", {"max", "avg"}), dtype_param()}},
       build_pool2d,
       {"pool2d(N=1,C=3,H=9,W=9,K=3,stride=2,padding=1,kind=max)",
        "pool2d(N=2,C=2,H=8,W=7,K=2,stride=2,padding=1,kind=avg)",
        "pool2d(N=1,C=2,H=6,W=6,K=3,stride=1,padding=0,kind=max)"}});
}

} // namespace mt::workload_detail
