#include "core/model/convert_to_f32.h"

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace mt {
namespace {

static_assert(
    std::endian::native == std::endian::little,
    "safetensors data is little-endian; reading it on a big-endian host needs byte swaps");

constexpr uint32_t kF32QuietBit = 0x00400000u;
constexpr uint32_t kF32QuietNaN = 0x7FC00000u;

template <typename T> T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T, typename Convert>
void convert_each(std::span<const std::byte> src, std::span<float> dst, Convert convert) {
  const std::byte* p = src.data();
  for (float& out : dst) {
    out = convert(load<T>(p));
    p += sizeof(T);
  }
}

} // namespace

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa x 2^-24, exact in f32 (a normal number there).
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  uint32_t bits;
  if (exponent == 0x1F) // infinity, or NaN with its payload moved to the top and quieted
    bits = sign | 0x7F800000u | (mantissa << 13) | (mantissa ? kF32QuietBit : 0u);
  else // rebias 15 -> 127
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  return std::bit_cast<float>(bits);
}

float bf16_bits_to_f32(uint16_t h) {
  // bf16 is the top half of an f32.
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu)) bits |= kF32QuietBit;
  return std::bit_cast<float>(bits);
}

float f8_e5m2_bits_to_f32(uint8_t b) {
  // E5M2 is the top byte of an f16 (same exponent bias and special values).
  return f16_bits_to_f32(static_cast<uint16_t>(b << 8));
}

float f8_e4m3_bits_to_f32(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t exponent = (b >> 3) & 0xFu;
  const uint32_t mantissa = b & 0x7u;
  if (exponent == 0xF && mantissa == 0x7) return std::bit_cast<float>(sign | kF32QuietNaN);
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-9f;
    return sign ? -magnitude : magnitude;
  }
  // The fn variant has no infinities: exponent 15 is an ordinary binade. Rebias 7 -> 127.
  return std::bit_cast<float>(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}

float f8_e8m0_bits_to_f32(uint8_t b) {
  if (b == 0xFF) return std::bit_cast<float>(kF32QuietNaN);
  // 2^(b - 127): the same biased exponent as f32, except 2^-127, which is an f32 subnormal.
  if (b == 0) return std::bit_cast<float>(kF32QuietBit);
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 23);
}

bool converts_to_f32(SafetensorsDtype t) {
  return t != SafetensorsDtype::C64;
}

void convert_to_f32(SafetensorsDtype t, std::span<const std::byte> src, std::span<float> dst) {
  const size_t size = item_size(t);
  if (!converts_to_f32(t))
    throw std::invalid_argument(std::string("dtype ") + to_string(t) + " does not convert to f32");
  if (src.size() != dst.size() * size)
    throw std::invalid_argument(std::string("convert_to_f32: ") + std::to_string(src.size()) +
                                " bytes of " + to_string(t) + " are not " +
                                std::to_string(dst.size()) + " elements");
  using D = SafetensorsDtype;
  switch (t) {
  case D::F32:
    if (!dst.empty()) std::memcpy(dst.data(), src.data(), src.size());
    return;
  case D::F16:
    return convert_each<uint16_t>(src, dst, f16_bits_to_f32);
  case D::BF16:
    return convert_each<uint16_t>(src, dst, bf16_bits_to_f32);
  case D::F64:
    return convert_each<double>(src, dst, [](double v) { return static_cast<float>(v); });
  case D::F8_E5M2:
    return convert_each<uint8_t>(src, dst, f8_e5m2_bits_to_f32);
  case D::F8_E4M3:
    return convert_each<uint8_t>(src, dst, f8_e4m3_bits_to_f32);
  case D::F8_E8M0:
    return convert_each<uint8_t>(src, dst, f8_e8m0_bits_to_f32);
  case D::BOOL:
    return convert_each<uint8_t>(src, dst, [](uint8_t v) { return v ? 1.0f : 0.0f; });
  case D::U8:
    return convert_each<uint8_t>(src, dst, [](uint8_t v) { return static_cast<float>(v); });
  case D::I8:
    return convert_each<int8_t>(src, dst, [](int8_t v) { return static_cast<float>(v); });
  case D::I16:
    return convert_each<int16_t>(src, dst, [](int16_t v) { return static_cast<float>(v); });
  case D::U16:
    return convert_each<uint16_t>(src, dst, [](uint16_t v) { return static_cast<float>(v); });
  case D::I32:
    return convert_each<int32_t>(src, dst, [](int32_t v) { return static_cast<float>(v); });
  case D::U32:
    return convert_each<uint32_t>(src, dst, [](uint32_t v) { return static_cast<float>(v); });
  case D::I64:
    return convert_each<int64_t>(src, dst, [](int64_t v) { return static_cast<float>(v); });
  case D::U64:
    return convert_each<uint64_t>(src, dst, [](uint64_t v) { return static_cast<float>(v); });
  case D::C64:
    break;
  }
  throw std::invalid_argument(std::string("dtype ") + to_string(t) + " does not convert to f32");
}

} // namespace mt
