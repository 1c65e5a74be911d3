// Elementwise chain workload: a sequence of unary and binary elementwise blocks over one 2-D
// tensor (each binary op reads one more input), the typical target of inlining and fusion.
#include <algorithm>
#include <cmath>

#include "core/workload/registry.h"
#include "core/workload/te.h"

namespace mt::workload_detail {

namespace {

using namespace mt::te;

const std::vector<std::string>& chain_ops() {
  static const std::vector<std::string> ops = {"add",  "sub",     "mul", "relu",
                                               "tanh", "sigmoid", "exp", "gelu"};
  return ops;
}

std::vector<std::string> split_ops(const WorkloadParams& p) {
  const std::string& s = p.get_string("ops");
  std::vector<std::string> out;
  size_t b = 0;
  for (;;) {
    size_t e = s.find('_', b);
    std::string op = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
    const auto& known = chain_ops();
    if (std::find(known.begin(), known.end(), op) == known.end())
      workload_error(
          p, "parameter 'ops': unknown op '" + op + "'" + did_you_mean(op, known) + "; ops are " +
                 [&] {
                   std::string all;
                   for (const auto& k : known)
                     all += (all.empty() ? "" : ", ") + k;
                   return all;
                 }());
    out.push_back(op);
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

Function build_elementwise(const WorkloadParams& p) {
  const int64_t M = p.get_int("M"), N = p.get_int("N");
  const DType t = p.dtype();
  std::vector<std::string> ops = split_ops(p);
  Tensor x = placeholder({M, N}, t, "data");
  std::vector<Tensor> inputs = {x};
  Tensor cur = x;
  for (const std::string& op : ops) {
    Tensor other;
    if (op == "add" || op == "sub" || op == "mul") {
      other = placeholder({M, N}, t, "in" + std::to_string(inputs.size()));
      inputs.push_back(other);
    }
    Tensor prev = cur;
    cur = compute({M, N},
                  [&](const std::vector<Expr>& v) -> Expr {
                    Expr a = prev(v);
                    if (op == "add") return a + other(v);
                    if (op == "sub") return a - other(v);
                    if (op == "mul") return a * other(v);
                    if (op == "relu") return max(a, 0.0);
                    if (op == "tanh") return tanh(a);
                    if (op == "sigmoid") return sigmoid(a);
                    if (op == "exp") return exp(a);
                    return a * 0.5 * (erf(a * (1.0 / std::sqrt(2.0))) + 1.0); // gelu
                  },
                  op, {"i", "j"});
  }
  return build("elementwise", inputs, {cur});
}

} // namespace

void add_elementwise_workloads(std::vector<WorkloadDef>* defs) {
  defs->push_back(
      {{"elementwise",
        "a chain of elementwise blocks over data[M,N], one block per op; add/sub/mul read one "
        "more input each (in1, in2, ...); args: data, in1..., result",
        {int_param("M", 1024, "rows"), int_param("N", 1024, "columns"),
         string_param("ops", "add_mul_relu_tanh",
                      "ops joined by '_': add, sub, mul, relu, tanh, sigmoid, exp, gelu"),
         dtype_param()}},
       build_elementwise,
       {"elementwise(M=8,N=16)", "elementwise(M=5,N=7,ops=sub_sigmoid_exp_gelu_mul)"}});
}

} // namespace mt::workload_detail
