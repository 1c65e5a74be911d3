// Choosing the next token from a decoder's logits: greedy (the arg max, the lowest id on a
// tie), or sampling from softmax(logits / temperature) restricted to the top-k, from a seeded
// generator so that a seed reproduces a run.
#pragma once

#include <cstdint>
#include <random>

namespace mt {

struct SamplingOptions {
  bool greedy = true;
  double temperature = 1.0; // > 0
  int64_t top_k = 0;        // 0 = the whole vocabulary
  uint64_t seed = 0;
};

class TokenSampler {
public:
  explicit TokenSampler(SamplingOptions options);
  // The token chosen from `logits[0, vocab)`.
  int32_t next(const float* logits, int64_t vocab);

private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
};

} // namespace mt
