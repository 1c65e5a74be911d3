// Helpers shared by the LLVM target tests: typed host buffers, random fill, comparison.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "metatune/llvm_cpu/compiler.hpp"
#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu::test {

namespace P = mt::sdk::program;

// A gtest parameter name made of a workload spec: its letters and digits, the rest '_'.
inline std::string name_of(const ::testing::TestParamInfo<std::string>& info) {
  std::string n;
  for (char c : info.param)
    n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  while (!n.empty() && n.back() == '_')
    n.pop_back();
  return n;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = d(rng);
  return v;
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         double rtol = 1e-5, double atol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = atol + rtol * std::fabs(want[i]);
    bool ok = std::fabs(static_cast<double>(got[i]) - want[i]) <= tol ||
              (std::isnan(got[i]) && std::isnan(want[i]));
    if (!ok && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << "mismatching elements";
}

// Compiles and runs `p` on the given argument pointers with the default runtime.
inline void run(const P::Program& p, std::vector<void*> args, const CompileOptions& o = {}) {
  auto k = jit_compile(p, o);
  ASSERT_EQ((*k)(args.data()), 0);
}

inline bool ir_contains(const P::Program& p, const std::string& needle) {
  return emit_ir(p).find(needle) != std::string::npos;
}

// IEEE half <-> float, written out here independently of the code generator.
inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(h);
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  uint32_t x = exp == 31 ? (sign | 0x7f800000 | (mant << 13))
                         : (sign | ((exp - 15 + 127) << 23) | (mant << 13));
  std::memcpy(&f, &x, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  uint32_t lsb = (x >> 16) & 1;
  return static_cast<uint16_t>((x + 0x7fff + lsb) >> 16);
}

inline float bf16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

} // namespace mt::llvm_cpu::test
