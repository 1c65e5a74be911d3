// Shared by the probes (wgmma_probe_test.cpp, wgmma_swizzle_probe_test.cpp, tma_probe_test.cpp):
// the sm_90 device they run on, operands of small integers, whose f16 values and f32 sums are
// exact, and the exact comparison of a product with its double-precision reference, printed as
// one "[ tag ] layout: correct/wrong" line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/runtime/ndarray.h"
#include "cuda_driver.h"
#include "nvrtc_compiler.h"

namespace mt::wgmma_probe {

// NVRTC and a context on device 0 when that is an sm_90 device; nullopt otherwise, with `why`
// the reason to skip (`feature`: what needs sm_90, for the message).
struct Sm90Device {
  cuda::Nvrtc* nvrtc = nullptr;
  cuda::CudaDriver* driver = nullptr;
  std::unique_ptr<cuda::Context> context;
};
inline std::optional<Sm90Device> sm90_device(const std::string& feature, std::string* why) {
  Sm90Device d;
  d.nvrtc = cuda::Nvrtc::get(why);
  if (!d.nvrtc) return std::nullopt;
  d.driver = cuda::CudaDriver::get(why);
  if (!d.driver || d.driver->device_count() == 0) {
    *why = "no CUDA device: " + (why->empty() ? std::string("none found") : *why);
    return std::nullopt;
  }
  d.context = std::make_unique<cuda::Context>(*d.driver, 0);
  if (d.context->device().arch() != "sm_90") {
    *why = feature + " needs sm_90; the device is " + d.context->device().arch();
    return std::nullopt;
  }
  return d;
}

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
