#include "core/schedule/random.h"

#include <cmath>

namespace mt {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
} // namespace

void RandomEngine::seed(uint64_t s) {
  uint64_t x = s;
  for (auto& w : s_) w = splitmix64(x);
}

uint64_t RandomEngine::next() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

int64_t RandomEngine::uniform_int(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  uint64_t range = static_cast<uint64_t>(hi - lo);
  // Rejection sampling keeps the distribution exact and platform independent.
  uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t r;
  do r = next();
  while (r >= limit);
  return lo + static_cast<int64_t>(r % range);
}

double RandomEngine::uniform_real() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

int64_t RandomEngine::categorical(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w > 0 ? w : 0;
  if (weights.empty()) return -1;
  if (total <= 0) return uniform_int(0, static_cast<int64_t>(weights.size()));
  double r = uniform_real() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    double w = weights[i] > 0 ? weights[i] : 0;
    if (r < w) return static_cast<int64_t>(i);
    r -= w;
  }
  return static_cast<int64_t>(weights.size()) - 1;
}

RandomEngine RandomEngine::fork() { return RandomEngine(next() ^ 0xd1b54a32d192ed03ULL); }

} // namespace mt
