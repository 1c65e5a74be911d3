// Next-token choice (see token_sampler.h).
#include "core/graph/token_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace mt {

TokenSampler::TokenSampler(SamplingOptions options) : options_(options), rng_(options.seed) {
  if (!options_.greedy && !(options_.temperature > 0))
    throw std::invalid_argument("sampling temperature must be > 0");
  if (options_.top_k < 0) throw std::invalid_argument("top-k must be >= 0");
}

int32_t TokenSampler::next(const float* logits, int64_t vocab) {
  if (vocab <= 0) throw std::invalid_argument("no logits to choose from");
  if (options_.greedy)
    return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  size_t k = options_.top_k > 0 ? static_cast<size_t>(std::min(options_.top_k, vocab)) : ids.size();
  // The k largest, ties to the lower id, so the candidate set does not depend on the sort.
  auto before = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), before);
  ids.resize(k);
  std::vector<double> w(k);
  const double top = logits[ids[0]];
  for (size_t i = 0; i < k; ++i)
    w[i] = std::exp((static_cast<double>(logits[ids[i]]) - top) / options_.temperature);
  double total = std::accumulate(w.begin(), w.end(), 0.0);
  double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
  for (size_t i = 0; i < k; ++i) {
    if (u < w[i]) return ids[i];
    u -= w[i];
  }
  return ids[k - 1];
}

} // namespace mt
