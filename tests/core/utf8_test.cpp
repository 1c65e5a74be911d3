// UTF-8 validation (core/support/utf8.h) against a straightforward decoder written here: every
// string of one to three bytes, and the four-byte sequences around each boundary.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "core/support/utf8.h"

namespace mt {
namespace {

// Decodes the sequence at the start of `s` by value: its length from the lead byte, the code
// point from the payload bits, then the rules: continuation bytes 10xxxxxx, the shortest
// form, no surrogates, at most U+10FFFF. Returns the length, or 0 if ill-formed.
size_t reference_sequence_length(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  size_t length;
  uint32_t cp;
  if (b0 < 0x80) return 1;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    const auto b = static_cast<uint8_t>(s[i]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  const uint32_t shortest_min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < shortest_min[length]) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  if (cp > 0x10FFFF) return 0;
  return length;
}

std::optional<size_t> reference_first_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = reference_sequence_length(s.substr(i));
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

TEST(Utf8, EveryStringUpToThreeBytes) {
  std::string s;
  for (uint32_t v = 0; v < (1u << 24); ++v) {
    for (size_t len = 1; len <= 3; ++len) {
      if (len < 3 && (v >> (8 * len)) != 0) continue;
      s.resize(len);
      for (size_t i = 0; i < len; ++i)
        s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
      ASSERT_EQ(first_invalid_utf8(s), reference_first_invalid(s))
          << std::hex << v << " len " << len;
    }
  }
}

TEST(Utf8, FourByteSequencesAndPositions) {
  std::mt19937 rng(3);
  std::string s(4, '\0');
  for (uint32_t lead = 0xE8; lead <= 0xFF; ++lead)
    for (uint32_t second = 0; second < 256; ++second)
      for (int k = 0; k < 64; ++k) {
        s[0] = static_cast<char>(lead);
        s[1] = static_cast<char>(second);
        // Mostly continuation bytes, sometimes anything.
        s[2] = static_cast<char>(k % 8 ? 0x80 | (rng() & 0x3F) : rng() & 0xFF);
        s[3] = static_cast<char>(k % 8 ? 0x80 | (rng() & 0x3F) : rng() & 0xFF);
        ASSERT_EQ(first_invalid_utf8(s), reference_first_invalid(s))
            << std::hex << lead << " " << second;
      }
  // The offset is that of the first bad sequence, after good multi-byte ones.
  EXPECT_EQ(first_invalid_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z"), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("a\xC3\xA9\xED\xA0\x80"), std::optional<size_t>(3)); // surrogate
  EXPECT_EQ(first_invalid_utf8("ab\xE2\x82"), std::optional<size_t>(2));            // truncated
}

} // namespace
} // namespace mt
