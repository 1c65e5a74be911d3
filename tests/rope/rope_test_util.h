// Helpers of the rope tests: the rotation written out plainly in double precision (both
// conventions, partial rotary, offsets), and every output of a model run.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "../graph/graph_test_util.h"

namespace mt::rope_test {

using namespace graph_test;

struct Rotary {
  size_t rotary_dim = 0; // rotated channels at the start of each head
  bool interleaved = false;
  double theta = 10000.0;
  int64_t offset = 0;
  double linear_factor = 1.0; // positions divided by it ("linear" scaling)
  // Llama 3.1's scaling when llama3_factor > 0: in terms of c = original / wavelength (turns
  // of the frequency over the original context), c >= high keeps the frequency, c <= low
  // divides it by the factor, and between the two the divisor goes linearly in c.
  double llama3_factor = 0, low = 1, high = 4, original = 8192;
  // YaRN when yarn_factor > 0: frequency i (of rotary_dim / 2) keeps its value where it turns
  // at least beta_fast times over the original context, is divided by the factor where it
  // turns at most beta_slow times, and between the two (in index, the ends rounded outwards
  // when truncate) the divisor's inverse moves linearly.
  double yarn_factor = 0, beta_fast = 32, beta_slow = 1;
  bool truncate = true;
  // LongRoPE: frequency i divided by divisors[i].
  std::vector<double> divisors{};
  // cos and sin are scaled by it (YaRN's and LongRoPE's attention factor).
  double amplitude = 1.0;
};

// YaRN's blend of frequency i of `half` (1: kept, 0: divided by the factor).
inline double yarn_kept(const Rotary& r, size_t i) {
  const double dim = static_cast<double>(r.rotary_dim);
  // The (fractional) index whose frequency theta^(-2 i / dim) turns `turns` times over the
  // original context: original * theta^(-2 i / dim) = 2 pi turns.
  auto index_of = [&](double turns) {
    return std::log(r.original / (2 * M_PI * turns)) / std::log(r.theta) * dim / 2;
  };
  double lo = index_of(r.beta_fast), hi = index_of(r.beta_slow);
  if (r.truncate) lo = std::floor(lo), hi = std::ceil(hi);
  lo = std::max(lo, 0.0);
  hi = std::min(hi, dim - 1);
  if (hi == lo) hi += 0.001;
  return 1 - std::clamp((static_cast<double>(i) - lo) / (hi - lo), 0.0, 1.0);
}

// The angle of frequency i at `position`.
inline double angle(const Rotary& r, int64_t position, size_t i) {
  double f = std::pow(r.theta, -2.0 * static_cast<double>(i) / static_cast<double>(r.rotary_dim));
  if (r.llama3_factor > 0) {
    const double c = r.original * f / (2 * M_PI);
    const double t = std::clamp((c - r.low) / (r.high - r.low), 0.0, 1.0);
    f = t * f + (1 - t) * f / r.llama3_factor;
  }
  if (r.yarn_factor > 0) {
    const double kept = yarn_kept(r, i);
    f = kept * f + (1 - kept) * f / r.yarn_factor;
  }
  if (!r.divisors.empty()) f /= r.divisors.at(i);
  return static_cast<double>(position + r.offset) * f / r.linear_factor;
}

// x [B, S, heads * head_dim] with every head rotated by its token's position (s).
inline Matrix rotate_ref(const Matrix& x, size_t B, size_t S, size_t heads, size_t head_dim,
                         const Rotary& r) {
  Matrix y = x;
  const size_t width = heads * head_dim, half = r.rotary_dim / 2;
  for (size_t b = 0; b < B; ++b)
    for (size_t s = 0; s < S; ++s)
      for (size_t h = 0; h < heads; ++h)
        for (size_t i = 0; i < half; ++i) {
          const size_t base = (b * S + s) * width + h * head_dim;
          const size_t e1 = r.interleaved ? 2 * i : i, e2 = r.interleaved ? 2 * i + 1 : i + half;
          const double a = angle(r, static_cast<int64_t>(s), i);
          const double x1 = x[base + e1], x2 = x[base + e2];
          const double c = r.amplitude * std::cos(a), s_ = r.amplitude * std::sin(a);
          y[base + e1] = x1 * c - x2 * s_;
          y[base + e2] = x2 * c + x1 * s_;
        }
  return y;
}

// Every output of the run, as float64.
inline std::vector<Matrix> run_all(ModelRun& run, const std::vector<Matrix>& inputs) {
  std::vector<NDArray> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    NDArray x(DType::f32(), run.shapes.at(i));
    EXPECT_EQ(static_cast<int64_t>(inputs[i].size()), x.num_elements()) << "test input size";
    for (int64_t k = 0; k < x.num_elements(); ++k)
      x.data_as<float>()[k] = static_cast<float>(inputs[i].at(static_cast<size_t>(k)));
    xs.push_back(std::move(x));
  }
  std::vector<Matrix> out;
  for (const NDArray& a : run.exec->run(xs))
    out.emplace_back(a.data_as<float>(), a.data_as<float>() + a.num_elements());
  return out;
}

// The largest |got - want| (the tables' values are at most 1: absolute error).
inline double max_abs_error(const Matrix& got, const Matrix& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  return worst;
}

} // namespace mt::rope_test
