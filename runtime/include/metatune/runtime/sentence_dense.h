// sentence-transformers' Dense module: after the pooling, a linear layer and an activation on
// each sentence vector (LaBSE's CLS vector through tanh, distiluse's 768 -> 512), then the
// Normalize module if the folder has one. Header-only and without dependencies, like
// sentence_pooling.h, so that `model embed` and the runtime's CompiledEmbedder compute it with
// the same code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "metatune/runtime/sentence_pooling.h"

namespace mt::rt {

enum class DenseActivation { Identity, Tanh, ReLU, Sigmoid, Gelu };

inline const char* activation_name(DenseActivation a) {
  switch (a) {
  case DenseActivation::Identity:
    return "identity";
  case DenseActivation::Tanh:
    return "tanh";
  case DenseActivation::ReLU:
    return "relu";
  case DenseActivation::Sigmoid:
    return "sigmoid";
  case DenseActivation::Gelu:
    return "gelu";
  }
  return "?";
}

// The activation named `name` (activation_name's); false when there is none.
inline bool activation_from_name(std::string_view name, DenseActivation* out) {
  for (DenseActivation a : {DenseActivation::Identity, DenseActivation::Tanh, DenseActivation::ReLU,
                            DenseActivation::Sigmoid, DenseActivation::Gelu})
    if (name == activation_name(a)) return *out = a, true;
  return false;
}

// One Dense module's weights where they lie: `weight` [out, in] row-major (torch's Linear),
// `bias` [out] or null.
struct DenseLayerView {
  int64_t in = 0, out = 0;
  DenseActivation activation = DenseActivation::Tanh;
  const float* weight = nullptr;
  const float* bias = nullptr;
};

// `x` [rows, d.in] to `y` [rows, d.out]; sums in double.
inline void apply_dense(const float* x, int64_t rows, const DenseLayerView& d, float* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < d.out; ++o) {
      const float* w = d.weight + o * d.in;
      const float* v = x + r * d.in;
      double s = d.bias ? double(d.bias[o]) : 0.0;
      for (int64_t i = 0; i < d.in; ++i)
        s += double(w[i]) * double(v[i]);
      switch (d.activation) {
      case DenseActivation::Identity:
        break;
      case DenseActivation::Tanh:
        s = std::tanh(s);
        break;
      case DenseActivation::ReLU:
        s = std::max(s, 0.0);
        break;
      case DenseActivation::Sigmoid:
        s = 1 / (1 + std::exp(-s));
        break;
      case DenseActivation::Gelu: // torch's default, the erf form
        s = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
        break;
      }
      y[r * d.out + o] = static_cast<float>(s);
    }
}

// Each row of `x` [rows, dim] scaled to unit length (torch's normalize, eps 1e-12).
inline void normalize_rows(float* x, int64_t rows, int64_t dim) {
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int64_t c = 0; c < dim; ++c)
      sq += double(x[r * dim + c]) * double(x[r * dim + c]);
    const double scale = 1 / std::max(std::sqrt(sq), 1e-12);
    for (int64_t c = 0; c < dim; ++c)
      x[r * dim + c] = static_cast<float>(double(x[r * dim + c]) * scale);
  }
}

// What sentence-transformers' modules do after the encoder: `hidden` [rows, seq, width] pooled
// over `mask` (pool_sentences), through `layers` in turn, then normalized when `normalize`,
// into `out` [rows, the last layer's out, or width x modes]. Returns pool_sentences' first row
// with no token, or -1.
inline int64_t embed_sentences(const float* hidden, const float* mask, int64_t rows, int64_t seq,
                               int64_t width, const std::vector<SentencePooling>& modes,
                               const std::vector<DenseLayerView>& layers, bool normalize,
                               std::vector<float>* out) {
  int64_t dim = width * static_cast<int64_t>(modes.size());
  out->assign(static_cast<size_t>(rows * dim), 0.0f);
  const int64_t empty = pool_sentences(hidden, mask, rows, seq, width, modes,
                                       normalize && layers.empty(), out->data());
  if (empty >= 0 || layers.empty()) return empty;
  for (const DenseLayerView& d : layers) {
    std::vector<float> next(static_cast<size_t>(rows * d.out));
    apply_dense(out->data(), rows, d, next.data());
    *out = std::move(next);
    dim = d.out;
  }
  if (normalize) normalize_rows(out->data(), rows, dim);
  return -1;
}

} // namespace mt::rt
