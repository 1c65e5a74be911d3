// Helpers of the graph tests: the plugin host of this build, the LLVM CPU target, a model run
// (instantiate, fuse, build, deterministic parameters) and double-precision reference pieces.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../tune/tune_test_util.h"
#include "core/graph/fusion.h"
#include "core/graph/model_executor.h"
#include "core/graph/model_graph.h"
#include "core/graph/sequence_buckets.h"
#include "core/model/config.h"
#include "core/plugin/plugin_components.h"
#include "core/plugin/plugin_host.h"
#include "core/tuner/target_setup.h"

namespace mt::graph_test {

using json = nlohmann::json;
using Matrix = std::vector<double>; // row-major [rows, cols]

using tune_test::host; // the plugin host of this build tree

inline const PluginTarget& llvm() {
  static TargetSetup t = setup_target(host(), "llvm");
  return *t.target;
}

// The first output of `exec` on one sequence of token ids ([1, S] i32), as doubles.
inline Matrix run_on_ids(ModelExecutor& exec, const std::vector<int32_t>& ids) {
  NDArray x(DType::i32(), {1, static_cast<int64_t>(ids.size())});
  std::copy(ids.begin(), ids.end(), x.data_as<int32_t>());
  std::vector<NDArray> out = exec.run({x});
  const float* got = out.at(0).data_as<float>();
  return Matrix(got, got + out[0].num_elements());
}

// The logits after the last of `tokens`, from a whole-sequence build of exactly that length
// (what a key/value cache exists to avoid recomputing: the reference generation is checked on).
inline std::vector<float> recompute(const Config& c, const std::map<std::string, NDArray>& params,
                                    const std::vector<int32_t>& tokens) {
  const auto n = static_cast<int64_t>(tokens.size());
  ModelGraph g = BucketedModel::graph_for(host(), c, 1, n, false);
  ModelExecutor exec(g, fuse(g.outputs), llvm());
  exec.set_params(params);
  NDArray ids(DType::i32(), {1, n});
  std::copy(tokens.begin(), tokens.end(), ids.data_as<int32_t>());
  std::vector<NDArray> out = exec.run({ids});
  const int64_t vocab = out.at(0).shape()[2];
  const float* last = out[0].data_as<float>() + (n - 1) * vocab;
  return std::vector<float>(last, last + vocab);
}

// A model run: graph, executor and parameter values (deterministic from the seed).
struct ModelRun {
  ModelGraph graph;
  std::unique_ptr<ModelExecutor> exec;
  std::map<std::string, NDArray> params;
  std::vector<std::vector<int64_t>> shapes;

  ModelRun(const json& config, const std::vector<int64_t>& input_shape, uint64_t seed = 3)
      : ModelRun(host(), config, std::vector<std::vector<int64_t>>{input_shape}, seed) {}
  ModelRun(const json& config, const std::vector<std::vector<int64_t>>& input_shapes,
           uint64_t seed = 3)
      : ModelRun(host(), config, input_shapes, seed) {}
  // Inputs "x", then "mask" when there are two; the layers of `plugins` (this build's, or a
  // host that also loaded a plugin built out of tree).
  ModelRun(const PluginHost& plugins, const json& config,
           const std::vector<std::vector<int64_t>>& input_shapes, uint64_t seed = 3)
      : shapes(input_shapes) {
    std::vector<te::Tensor> in;
    for (size_t i = 0; i < shapes.size(); ++i)
      in.push_back(te::placeholder(shapes[i], DType::f32(), i == 0 ? "x" : "mask"));
    graph = instantiate_model(plugins, config, in);
    exec = std::make_unique<ModelExecutor>(graph, fuse(graph.outputs), llvm());
    params = init_params(graph.params, seed);
    // Non-trivial norms and biases: the initialisers give ones and zeros.
    for (auto& [path, a] : params) {
      float* d = a.data_as<float>();
      for (int64_t i = 0; i < a.num_elements(); ++i)
        d[i] += 0.1f * static_cast<float>(std::sin(0.7 * static_cast<double>(i) + path.size()));
    }
    exec->set_params(params);
  }

  Matrix param(const std::string& path) const {
    const NDArray& a = params.at(path);
    const float* d = a.data_as<float>();
    return Matrix(d, d + a.num_elements());
  }

  Matrix operator()(const std::vector<Matrix>& inputs) {
    std::vector<NDArray> xs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      NDArray x(DType::f32(), shapes.at(i));
      EXPECT_EQ(static_cast<int64_t>(inputs[i].size()), x.num_elements()) << "test input size";
      if (static_cast<int64_t>(inputs[i].size()) != x.num_elements()) return {};
      for (size_t k = 0; k < inputs[i].size(); ++k)
        x.data_as<float>()[k] = static_cast<float>(inputs[i][k]);
      xs.push_back(std::move(x));
    }
    std::vector<NDArray> out = exec->run(xs);
    const float* d = out.at(0).data_as<float>();
    return Matrix(d, d + out[0].num_elements());
  }
  Matrix operator()(const Matrix& input, const std::vector<int64_t>& shape) {
    EXPECT_EQ(shape, shapes.at(0));
    return (*this)(std::vector<Matrix>{input});
  }
};

inline Matrix input(size_t n, double scale = 1.0) {
  Matrix m(n);
  for (size_t i = 0; i < n; ++i)
    m[i] = scale * std::cos(1.3 * static_cast<double>(i) + 0.2);
  return m;
}

// y[r, o] = sum_k x[r, k] w[o, k] + b[o]
inline Matrix linear_ref(const Matrix& x, const Matrix& w, const Matrix* b, size_t rows, size_t in,
                         size_t out) {
  Matrix y(rows * out);
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0.0;
      for (size_t k = 0; k < in; ++k)
        s += x[r * in + k] * w[o * in + k];
      y[r * out + o] = s;
    }
  return y;
}

inline Matrix layer_norm_ref(const Matrix& x, const Matrix& g, const Matrix& b, size_t rows,
                             size_t d, double eps) {
  Matrix y(x.size());
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (size_t k = 0; k < d; ++k)
      mean += x[r * d + k];
    mean /= static_cast<double>(d);
    for (size_t k = 0; k < d; ++k)
      var += (x[r * d + k] - mean) * (x[r * d + k] - mean);
    var /= static_cast<double>(d);
    for (size_t k = 0; k < d; ++k)
      y[r * d + k] = (x[r * d + k] - mean) / std::sqrt(var + eps) * g[k] + b[k];
  }
  return y;
}

inline Matrix rms_norm_ref(const Matrix& x, const Matrix& g, size_t rows, size_t d, double eps) {
  Matrix y(x.size());
  for (size_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (size_t k = 0; k < d; ++k)
      ms += x[r * d + k] * x[r * d + k];
    ms /= static_cast<double>(d);
    for (size_t k = 0; k < d; ++k)
      y[r * d + k] = x[r * d + k] / std::sqrt(ms + eps) * g[k];
  }
  return y;
}

inline double gelu(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
inline double silu(double x) {
  return x / (1 + std::exp(-x));
}

inline void expect_close(const Matrix& got, const Matrix& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double e = std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i]));
    if (e > worst) worst = e, at = i;
  }
  EXPECT_LE(worst, tol) << "element " << at << ": " << got[at] << " vs " << want[at];
}

struct Dims {
  size_t B, S, D, H, KVH, Dh;
  size_t window = 0; // causal: a position sees only the last `window` (itself included); 0 = all
  double scale = 0;  // of the scores; 0 = 1 / sqrt(Dh)
  double softcap = 0; // scaled scores -> softcap * tanh(score / softcap) (Gemma 2); 0 = none
};

// The QKV projection of `d` with biases (std.FusedQKVLinear or std.QKVLinear).
inline json qkv_config(const Dims& d, bool fused) {
  return {{"kind", fused ? "std.FusedQKVLinear" : "std.QKVLinear"},
          {"input_dim", d.D},
          {"num_heads", d.H},
          {"num_kv_heads", d.KVH},
          {"per_head_dim", d.Dh},
          {"bias", true}};
}

// An attention layer `kind` of `d` around the projection `qkv`, default scale, output bias.
inline json attention_config(const std::string& kind, const Dims& d, json qkv, bool causal) {
  return {{"kind", kind},          {"input_dim", d.D},     {"num_heads", d.H},
          {"num_kv_heads", d.KVH}, {"per_head_dim", d.Dh}, {"causal", causal},
          {"scale", 0.0},          {"output_bias", true},  {"qkv", std::move(qkv)}};
}

// softmax(q k^T * scale + masks) v, then the output projection; x [B, S, D], q/k/v/ctx
// [B, S, heads * Dh].
inline Matrix attention_ref(const Dims& d, const Matrix& q, const Matrix& k, const Matrix& v,
                            const Matrix& ow, const Matrix* ob, bool causal, const Matrix* mask) {
  const size_t group = d.H / d.KVH, qd = d.H * d.Dh, kvd = d.KVH * d.Dh;
  const double scale = d.scale ? d.scale : 1.0 / std::sqrt(static_cast<double>(d.Dh));
  Matrix ctx(d.B * d.S * qd, 0.0);
  for (size_t b = 0; b < d.B; ++b)
    for (size_t h = 0; h < d.H; ++h)
      for (size_t i = 0; i < d.S; ++i) {
        size_t kh = h / group;
        std::vector<double> s(d.S);
        double mx = -1e300;
        for (size_t j = 0; j < d.S; ++j) {
          double dot = 0;
          for (size_t e = 0; e < d.Dh; ++e)
            dot += q[(b * d.S + i) * qd + h * d.Dh + e] * k[(b * d.S + j) * kvd + kh * d.Dh + e];
          s[j] = dot * scale;
          if (d.softcap) s[j] = d.softcap * std::tanh(s[j] / d.softcap);
          if ((causal && j > i) || (d.window && j + d.window <= i) ||
              (mask && (*mask)[b * d.S + j] < 0.5))
            s[j] = -1e30;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double& x : s)
          sum += (x = std::exp(x - mx));
        for (size_t j = 0; j < d.S; ++j)
          for (size_t e = 0; e < d.Dh; ++e)
            ctx[(b * d.S + i) * qd + h * d.Dh + e] +=
                s[j] / sum * v[(b * d.S + j) * kvd + kh * d.Dh + e];
      }
  return linear_ref(ctx, ow, ob, d.B * d.S, qd, d.D);
}

} // namespace mt::graph_test
