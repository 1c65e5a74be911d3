// Deterministic, portable random engine for sampling instructions: the same seed gives the
// same decisions on every platform (std::distributions are implementation-defined).
#pragma once

#include <cstdint>
#include <vector>

namespace mt {

class RandomEngine {
public:
  explicit RandomEngine(uint64_t seed = 1) { this->seed(seed); }
  void seed(uint64_t s);
  uint64_t next(); // splitmix64-seeded xoshiro256**
  // Uniform integer in [lo, hi).
  int64_t uniform_int(int64_t lo, int64_t hi);
  double uniform_real(); // [0, 1)
  // Index drawn with the given (unnormalised, non-negative) weights.
  int64_t categorical(const std::vector<double>& weights);
  // A new engine whose stream is derived from this one (for copies and parallel workers).
  RandomEngine fork();

private:
  uint64_t s_[4];
};

} // namespace mt
