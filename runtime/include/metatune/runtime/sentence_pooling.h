// Sentence pooling: an encoder's last hidden state over a text's real tokens to one vector, as
// sentence-transformers' Pooling and Normalize modules compute it. Header-only and without
// dependencies, so that metatune's `model embed` (core/graph/sentence_embedding.h) and the
// runtime's CompiledEmbedder pool with the same code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace mt::rt {

// In sentence-transformers' order of concatenation.
enum class SentencePooling { Cls, Max, Mean, MeanSqrtLength, WeightedMean, LastToken };

inline const char* pooling_name(SentencePooling p) {
  switch (p) {
  case SentencePooling::Cls:
    return "cls";
  case SentencePooling::Max:
    return "max";
  case SentencePooling::Mean:
    return "mean";
  case SentencePooling::MeanSqrtLength:
    return "mean_sqrt_len";
  case SentencePooling::WeightedMean:
    return "weightedmean";
  case SentencePooling::LastToken:
    return "lasttoken";
  }
  return "?";
}

// The mode named `name` (pooling_name's); false when there is none.
inline bool pooling_from_name(std::string_view name, SentencePooling* out) {
  for (SentencePooling p :
       {SentencePooling::Cls, SentencePooling::Max, SentencePooling::Mean,
        SentencePooling::MeanSqrtLength, SentencePooling::WeightedMean, SentencePooling::LastToken})
    if (name == pooling_name(p)) return *out = p, true;
  return false;
}

// `hidden` [rows, seq, width] and `mask` [rows, seq] (1 = token, 0 = padding), row-major, to
// `out` [rows, modes.size() * width]: each mode's vector in turn, then the whole row scaled to
// unit length when `normalize` (torch's normalize, eps 1e-12). Sums in double. Returns the
// first row with no token (nothing is written for it or after it), or -1.
inline int64_t pool_sentences(const float* hidden, const float* mask, int64_t rows, int64_t seq,
                              int64_t width, const std::vector<SentencePooling>& modes,
                              bool normalize, float* out) {
  const int64_t dim = width * static_cast<int64_t>(modes.size());
  std::vector<double> v(static_cast<size_t>(dim));
  for (int64_t b = 0; b < rows; ++b) {
    const float* h = hidden + b * seq * width;
    const float* m = mask + b * seq;
    int64_t count = 0, last = -1;
    for (int64_t s = 0; s < seq; ++s)
      if (m[s] > 0.5f) ++count, last = s;
    if (count == 0) return b;
    for (size_t k = 0; k < modes.size(); ++k) {
      double* dst = v.data() + static_cast<int64_t>(k) * width;
      switch (modes[k]) {
      case SentencePooling::Cls:
        for (int64_t c = 0; c < width; ++c)
          dst[c] = h[c];
        break;
      case SentencePooling::LastToken:
        for (int64_t c = 0; c < width; ++c)
          dst[c] = h[last * width + c];
        break;
      case SentencePooling::Max:
        std::fill(dst, dst + width, -std::numeric_limits<double>::infinity());
        for (int64_t s = 0; s < seq; ++s)
          if (m[s] > 0.5f)
            for (int64_t c = 0; c < width; ++c)
              dst[c] = std::max(dst[c], double(h[s * width + c]));
        break;
      case SentencePooling::Mean:
      case SentencePooling::MeanSqrtLength: {
        std::fill(dst, dst + width, 0.0);
        for (int64_t s = 0; s < seq; ++s)
          if (m[s] > 0.5f)
            for (int64_t c = 0; c < width; ++c)
              dst[c] += h[s * width + c];
        const double n =
            modes[k] == SentencePooling::Mean ? double(count) : std::sqrt(double(count));
        for (int64_t c = 0; c < width; ++c)
          dst[c] /= n;
        break;
      }
      case SentencePooling::WeightedMean: { // token s weighs s + 1 (SGPT's position weighting)
        std::fill(dst, dst + width, 0.0);
        double total = 0;
        for (int64_t s = 0; s < seq; ++s)
          if (m[s] > 0.5f) {
            const double w = double(s + 1);
            total += w;
            for (int64_t c = 0; c < width; ++c)
              dst[c] += w * h[s * width + c];
          }
        for (int64_t c = 0; c < width; ++c)
          dst[c] /= total;
        break;
      }
      }
    }
    double scale = 1;
    if (normalize) {
      double sq = 0;
      for (double x : v)
        sq += x * x;
      scale = 1 / std::max(std::sqrt(sq), 1e-12);
    }
    for (int64_t c = 0; c < dim; ++c)
      out[b * dim + c] = static_cast<float>(v[c] * scale);
  }
  return -1;
}

} // namespace mt::rt
