// Conversion of safetensors element types to f32 (core/model/convert_to_f32.h), checked for
// every bit pattern of the 16- and 8-bit float types against a plain decode of their sign,
// exponent and mantissa fields in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/model/convert_to_f32.h"

namespace mt {
namespace {

struct MiniFloat {
  int exponent_bits, mantissa_bits;
  // IEEE-style: the all-ones exponent is infinity (mantissa 0) or NaN. Otherwise (the "fn"
  // types) only the all-ones pattern is NaN and there is no infinity.
  bool ieee_specials;
};

// The value of `bits` read as `f`, in double; NaN for the NaN patterns.
double decode(uint32_t bits, MiniFloat f) {
  const uint32_t mantissa = bits & ((1u << f.mantissa_bits) - 1);
  const uint32_t exponent = (bits >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
  const bool negative = (bits >> (f.mantissa_bits + f.exponent_bits)) & 1;
  const uint32_t max_exponent = (1u << f.exponent_bits) - 1;
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  double magnitude;
  if (f.ieee_specials && exponent == max_exponent) {
    if (mantissa != 0) return std::numeric_limits<double>::quiet_NaN();
    magnitude = std::numeric_limits<double>::infinity();
  } else if (!f.ieee_specials && exponent == max_exponent &&
             mantissa == (1u << f.mantissa_bits) - 1) {
    return std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - bias - f.mantissa_bits);
  } else {
    magnitude = std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -f.mantissa_bits),
                           static_cast<int>(exponent) - bias);
  }
  return negative ? -magnitude : magnitude;
}

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

// `got` is the f32 `expected` (double), with its sign (zeros included); a NaN only needs to be
// a NaN of the same sign.
void expect_same(float got, double expected, bool negative, uint32_t pattern) {
  if (std::isnan(expected)) {
    ASSERT_TRUE(std::isnan(got)) << std::hex << pattern;
    ASSERT_EQ(std::signbit(got), negative) << std::hex << pattern;
    ASSERT_TRUE(bits_of(got) & 0x00400000u) << "NaN not quiet: " << std::hex << pattern;
    return;
  }
  ASSERT_EQ(static_cast<double>(got), expected) << std::hex << pattern;
  ASSERT_EQ(std::signbit(got), std::signbit(expected)) << std::hex << pattern;
}

TEST(ConvertToF32, EveryF16Pattern) {
  const MiniFloat f16{5, 10, true};
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = f16_bits_to_f32(static_cast<uint16_t>(h));
    ASSERT_NO_FATAL_FAILURE(expect_same(got, decode(h, f16), h & 0x8000, h));
    // A NaN keeps its payload, moved to the top of the f32 mantissa.
    if (std::isnan(got)) {
      ASSERT_EQ((bits_of(got) >> 13) & 0x1FF, h & 0x1FF) << std::hex << h;
    }
  }
}

TEST(ConvertToF32, EveryBF16Pattern) {
  const MiniFloat bf16{8, 7, true};
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = bf16_bits_to_f32(static_cast<uint16_t>(h));
    ASSERT_NO_FATAL_FAILURE(expect_same(got, decode(h, bf16), h & 0x8000, h));
    if (std::isnan(got)) {
      ASSERT_EQ((bits_of(got) >> 16) & 0x3F, h & 0x3F) << std::hex << h;
    }
  }
}

TEST(ConvertToF32, EveryF8Pattern) {
  const MiniFloat e5m2{5, 2, true}, e4m3fn{4, 3, false};
  for (uint32_t b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    ASSERT_NO_FATAL_FAILURE(expect_same(f8_e5m2_bits_to_f32(byte), decode(b, e5m2), b & 0x80, b));
    ASSERT_NO_FATAL_FAILURE(expect_same(f8_e4m3_bits_to_f32(byte), decode(b, e4m3fn), b & 0x80, b));
    // E8M0: an unsigned power of two, 2^(b - 127); 0xFF is NaN.
    const double e8m0 = b == 255 ? std::numeric_limits<double>::quiet_NaN()
                                 : std::ldexp(1.0, static_cast<int>(b) - 127);
    ASSERT_NO_FATAL_FAILURE(expect_same(f8_e8m0_bits_to_f32(byte), e8m0, false, b));
  }
  // The largest finite E4M3FN value is 448, the smallest subnormal 2^-9.
  EXPECT_EQ(f8_e4m3_bits_to_f32(0x7E), 448.0f);
  EXPECT_EQ(f8_e4m3_bits_to_f32(0x01), std::ldexp(1.0f, -9));
}

TEST(ConvertToF32, BuffersAtAnyAlignment) {
  // All f16 patterns at an odd offset: the buffer conversion agrees with the scalar decode.
  const MiniFloat f16{5, 10, true};
  std::vector<std::byte> raw(1 + 2 * 65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    raw[1 + 2 * h] = static_cast<std::byte>(h & 0xFF);
    raw[2 + 2 * h] = static_cast<std::byte>(h >> 8);
  }
  std::vector<float> out(65536);
  convert_to_f32(SafetensorsDtype::F16, std::span(raw).subspan(1), out);
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_NO_FATAL_FAILURE(expect_same(out[h], decode(h, f16), h & 0x8000, h));

  // Integers and BOOL.
  const std::vector<int16_t> i16 = {-32768, -1, 0, 7, 32767};
  std::vector<float> i16_out(i16.size());
  convert_to_f32(SafetensorsDtype::I16, std::as_bytes(std::span(i16)), i16_out);
  for (size_t i = 0; i < i16.size(); ++i)
    EXPECT_EQ(static_cast<double>(i16_out[i]), i16[i]);
  const std::vector<uint8_t> flags = {0, 1, 2, 255};
  std::vector<float> flag_out(flags.size());
  convert_to_f32(SafetensorsDtype::BOOL, std::as_bytes(std::span(flags)), flag_out);
  for (size_t i = 0; i < flags.size(); ++i)
    EXPECT_EQ(flag_out[i], flags[i] ? 1.0f : 0.0f);
  const std::vector<uint32_t> u32 = {0, 16777217u, 4294967295u};
  std::vector<float> u32_out(u32.size());
  convert_to_f32(SafetensorsDtype::U32, std::as_bytes(std::span(u32)), u32_out);
  for (size_t i = 0; i < u32.size(); ++i) {
    // Nearest: neither f32 neighbour of the result is closer.
    const double err = std::fabs(static_cast<double>(u32_out[i]) - u32[i]);
    EXPECT_LE(err, std::fabs(static_cast<double>(std::nextafter(u32_out[i], INFINITY)) - u32[i]));
    EXPECT_LE(err, std::fabs(static_cast<double>(std::nextafter(u32_out[i], -INFINITY)) - u32[i]));
  }
}

TEST(ConvertToF32, RefusesMismatchedSizesAndComplex) {
  std::vector<std::byte> raw(6);
  std::vector<float> out(2);
  EXPECT_THROW(convert_to_f32(SafetensorsDtype::F32, raw, out), std::invalid_argument);
  EXPECT_THROW(
      convert_to_f32(SafetensorsDtype::C64, std::span(raw).first(0), std::span(out).first(0)),
      std::invalid_argument);
  EXPECT_FALSE(converts_to_f32(SafetensorsDtype::C64));
  EXPECT_TRUE(converts_to_f32(SafetensorsDtype::BF16));
}

} // namespace
} // namespace mt
