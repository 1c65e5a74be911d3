// Shared by the wgmma probes (wgmma_probe_test.cpp, wgmma_swizzle_probe_test.cpp): operands of
// small integers, whose f16 values and f32 sums are exact, and the exact comparison of a
// product with its double-precision reference, printed as one "[ tag ] layout: correct/wrong"
// line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/runtime/ndarray.h"

namespace mt::wgmma_probe {

inline float a_value(int m, int k) {
  return static_cast<float>((m * 3 + k * 5) % 7 - 3);
}
inline float b_value(int k, int n) {
  return static_cast<float>((k * 2 + n * 7) % 5 - 2);
}

inline std::vector<uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = float_to_half_bits(v[i]);
  return out;
}

// Whether `got` (rows x cols, row-major) equals `want` exactly; prints the probe's line.
inline bool report_exact(const char* tag, const std::string& layout, const std::vector<float>& got,
                         const std::vector<double>& want, int cols) {
  int wrong = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == static_cast<float>(want[i]))) {
      if (first < 0) first = static_cast<int>(i);
      ++wrong;
    }
  std::printf("[ %s ] %-78s %s", tag, layout.c_str(), wrong ? "wrong" : "correct");
  if (wrong)
    std::printf(" (%d of %zu; first at row %d col %d: %g, want %g)", wrong, got.size(),
                first / cols, first % cols, got[first], want[first]);
  std::printf("\n");
  return wrong == 0;
}

} // namespace mt::wgmma_probe
