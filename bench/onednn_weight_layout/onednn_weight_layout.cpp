// bench_onednn_weight_layout: oneDNN's f32 matmul (rows x K) by (K x N) with the weights
// row-major [K, N], K-contiguous ([N, K]: a Hugging Face nn.Linear weight as stored) and in the
// layout oneDNN picks for "any", each in a 64-byte aligned buffer of its own, timed in
// alternating rounds in one process. The shapes are the linear layers of MiniLM, BERT-base,
// GPT-2 and a 768-wide Llama at the row counts of a decode step (1), short texts (16) and
// prompts (64, 128). Prints one CSV row per case with each layout's median milliseconds and
// the ratio row-major / K-contiguous (above 1: K-contiguous faster). The onednn.cpu plugin
// packs weights K-contiguous from 64 rows on where oneDNN's own pick is a plain layout
// (dnnl_module.cpp, offer_packed); rerun this where that rule is in doubt (another CPU or
// oneDNN).
//
//   build/bin/bench_onednn_weight_layout [ROUNDS]
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

struct Aligned {
  explicit Aligned(size_t floats)
      : p(static_cast<float*>(std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64))) {
    std::fill(p, p + floats, 0.01f);
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  float* p;
};

// One layout's primitive and its operands, ready to run.
struct Case {
  std::string name;
  dnnl::matmul prim;
  std::unique_ptr<Aligned> weights;
  memory w;
  std::vector<double> ms;
};

std::string format_name(const memory::desc& d) {
  const auto& b = d.data.format_desc.blocking;
  if (d.data.format_kind != dnnl_blocked) return "opaque";
  std::string s = b.inner_nblks ? "blocked" : "plain";
  s += " strides";
  for (int i = 0; i < d.data.ndims; ++i)
    s += " " + std::to_string(b.strides[i]);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  struct Shape {
    const char* model;
    int64_t k, n;
  };
  const std::vector<Shape> shapes = {
      {"MiniLM attention", 384, 384}, {"MiniLM up", 384, 1536},
      {"MiniLM down", 1536, 384},     {"BERT/GPT-2 attention", 768, 768},
      {"BERT/GPT-2 up", 768, 3072},   {"BERT/GPT-2 down", 3072, 768},
      {"GPT-2 qkv", 768, 2304},       {"Llama up/gate", 768, 2048},
      {"Llama down", 2048, 768},      {"Llama kv", 768, 256},
      {"square 512", 512, 512},       {"square 1024", 1024, 1024},
      {"odd 1000", 1000, 1000}};
  std::printf("shape,rows,K,N,row_major_ms,k_contiguous_ms,onednn_any_ms,onednn_any_layout,"
              "row_major/k_contiguous\n");
  for (const Shape& sh : shapes)
    for (int64_t rows : {1, 16, 64, 128}) {
      memory::desc a({rows, sh.k}, dt::f32, tag::ab), c({rows, sh.n}, dt::f32, tag::ab);
      Aligned src(static_cast<size_t>(rows * sh.k)), dst(static_cast<size_t>(rows * sh.n));
      memory ma(a, eng, src.p), mc(c, eng, dst.p);
      std::vector<Case> cases;
      for (int layout = 0; layout < 3; ++layout) {
        memory::desc w = layout == 0   ? memory::desc({sh.k, sh.n}, dt::f32, tag::ab)
                         : layout == 1 ? memory::desc({sh.k, sh.n}, dt::f32, tag::ba)
                                       : memory::desc({sh.k, sh.n}, dt::f32, tag::any);
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, w, c), eng);
        Case k;
        k.name = layout == 2 ? format_name(pd.weights_desc()) : "";
        k.prim = dnnl::matmul(pd);
        k.weights = std::make_unique<Aligned>(pd.weights_desc().get_size() / 4 + 16);
        k.w = memory(pd.weights_desc(), eng, k.weights->p);
        cases.push_back(std::move(k));
      }
      // Enough calls per timing for about 20 ms of work on a slow machine.
      const double flops = 2.0 * rows * sh.k * sh.n;
      const int calls = static_cast<int>(std::clamp(20e-3 * 20e9 / flops, 5.0, 2000.0));
      for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < cases.size(); ++i) {
          Case& k = cases[(i + static_cast<size_t>(r)) % cases.size()];
          std::unordered_map<int, memory> args = {
              {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, k.w}, {DNNL_ARG_DST, mc}};
          k.prim.execute(s, args); // warm
          s.wait();
          auto t0 = std::chrono::steady_clock::now();
          for (int j = 0; j < calls; ++j)
            k.prim.execute(s, args);
          s.wait();
          k.ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count() /
              calls);
        }
      const double rm = median(cases[0].ms), kc = median(cases[1].ms), any = median(cases[2].ms);
      std::printf("%s,%lld,%lld,%lld,%.4f,%.4f,%.4f,%s,%.2f\n", sh.model,
                  static_cast<long long>(rows), static_cast<long long>(sh.k),
                  static_cast<long long>(sh.n), rm, kc, any, cases[2].name.c_str(), rm / kc);
      std::fflush(stdout);
    }
}
