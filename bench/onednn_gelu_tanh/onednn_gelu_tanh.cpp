// bench_onednn_gelu_tanh: the tanh GELU after a matmul (GPT-2's and BERT's up-projection,
// rows x 768 by 768 x 3072) and on its own, as oneDNN computes it (eltwise_gelu_tanh: a post-op
// of the matmul, or an eltwise primitive) and as the onednn.cpu plugin does
// (dnnl_module.cpp, append_gelu_tanh): x * sigmoid(2c (x + 0.044715 x^3)) in two binary
// primitives with post-ops. The matmul alone and with the erf GELU give the scale. Every case
// in alternating rounds in one process; one CSV row per shape with each case's median
// milliseconds, the ratios oneDNN's / the plugin's (above 1: the plugin's steps faster), and
// the largest difference between the two results relative to max |result|.
//
//   build/bench/onednn_gelu_tanh/bench_onednn_gelu_tanh [ROUNDS]
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using dnnl::algorithm;
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory filled(const memory::desc& d, float step) {
  memory m(d, engine());
  auto* p = static_cast<float*>(m.get_data_handle());
  const size_t n = d.get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) // a spread of values around 0, the GELU's bend and tails
    p[i] = step * static_cast<float>(static_cast<int>(i % 97) - 48);
  return m;
}

dnnl::matmul matmul(const memory::desc& a, const memory::desc& w, const memory::desc& d,
                    algorithm post) {
  dnnl::post_ops po;
  if (post != algorithm::undef) po.append_eltwise(1.f, post, 0.f, 0.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, w, d), attr, engine()));
}

// The plugin's two steps: gate = sigmoid(2c x (1 + 0.044715 x^2)) from x * x, then x * gate.
struct TwoSteps {
  explicit TwoSteps(const memory::desc& d) : gate(d, engine()) {
    const float c2 = 2.f * static_cast<float>(std::sqrt(2.0 / 3.14159265358979323846));
    dnnl::post_ops po;
    po.append_eltwise(1.f, algorithm::eltwise_linear, 0.044715f * c2, c2);
    po.append_binary(algorithm::binary_mul, d);
    po.append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    square = dnnl::binary(dnnl::binary::primitive_desc(
        dnnl::binary::desc(algorithm::binary_mul, d, d, d), attr, engine()));
    times = dnnl::binary(
        dnnl::binary::primitive_desc(dnnl::binary::desc(algorithm::binary_mul, d, d, d), engine()));
  }
  void run(dnnl::stream& s, const memory& x, const memory& dst) {
    square.execute(s, {{DNNL_ARG_SRC_0, x},
                       {DNNL_ARG_SRC_1, x},
                       {DNNL_ARG_DST, gate},
                       {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, x}});
    times.execute(s, {{DNNL_ARG_SRC_0, x}, {DNNL_ARG_SRC_1, gate}, {DNNL_ARG_DST, dst}});
  }
  memory gate;
  dnnl::binary square, times;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double max_rel_diff(const memory& a, const memory& b) {
  const auto* p = static_cast<const float*>(a.get_data_handle());
  const auto* q = static_cast<const float*>(b.get_data_handle());
  const size_t n = a.get_desc().get_size() / sizeof(float);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(p[i] - q[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(q[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

} // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const int64_t K = 768, N = 3072;
  dnnl::stream s(engine());
  std::printf("rows,K,N,matmul_ms,matmul_gelu_erf_ms,matmul_gelu_tanh_ms,matmul_two_steps_ms,"
              "eltwise_gelu_tanh_ms,two_steps_ms,after_matmul_ratio,alone_ratio,max_rel_diff\n");
  for (int64_t rows : {1, 16, 128}) {
    const memory::desc a({rows, K}, dt::f32, tag::ab), w({K, N}, dt::f32, tag::ba),
        d({rows, N}, dt::f32, tag::ab);
    memory src = filled(a, 0.01f), wei = filled(w, 0.01f), out(d, engine()), theirs(d, engine()),
           ours(d, engine());
    dnnl::matmul plain = matmul(a, w, d, algorithm::undef),
                 erf = matmul(a, w, d, algorithm::eltwise_gelu_erf),
                 tanh = matmul(a, w, d, algorithm::eltwise_gelu_tanh);
    dnnl::eltwise_forward alone(dnnl::eltwise_forward::primitive_desc(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                    algorithm::eltwise_gelu_tanh, d, 0.f, 0.f),
        engine()));
    TwoSteps steps(d);
    auto mm = [&](dnnl::matmul& p, const memory& dst) {
      p.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    };
    std::vector<std::function<void()>> cases = {
        [&] { mm(plain, out); },
        [&] { mm(erf, theirs); },
        [&] { mm(tanh, theirs); },
        [&] {
          mm(plain, out);
          steps.run(s, out, ours);
        },
        [&] {
          alone.execute(s, {{DNNL_ARG_SRC, out}, {DNNL_ARG_DST, theirs}});
        },
        [&] { steps.run(s, out, ours); },
    };
    std::vector<std::vector<double>> ms(cases.size());
    const int calls = rows == 1 ? 200 : 20;
    for (auto& c : cases) // warm-up: oneDNN generates its code on the first call
      c(), s.wait();
    for (int r = 0; r < rounds; ++r)
      for (size_t i = 0; i < cases.size(); ++i)
        for (int k = 0; k < calls; ++k) {
          auto t0 = std::chrono::steady_clock::now();
          cases[i]();
          s.wait();
          ms[i].push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
        }
    // The two results on the same x: oneDNN's gelu_tanh of the matmul, the plugin's steps.
    mm(tanh, theirs);
    mm(plain, out);
    steps.run(s, out, ours);
    s.wait();
    std::vector<double> med;
    for (auto& v : ms)
      med.push_back(median(v));
    std::printf("%lld,%lld,%lld,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.2e\n",
                static_cast<long long>(rows), static_cast<long long>(K), static_cast<long long>(N),
                med[0], med[1], med[2], med[3], med[4], med[5], med[2] / med[3], med[4] / med[5],
                max_rel_diff(ours, theirs));
  }
  return 0;
}
