#include "core/support/utf8.h"

#include <cstdint>

namespace mt {

std::optional<size_t> first_invalid_utf8(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto lead = static_cast<uint8_t>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The allowed range of the second byte is what rules out overlong forms, surrogates and
    // code points above U+10FFFF (RFC 3629, section 4); later bytes are plain continuations.
    size_t length;
    uint8_t second_lo = 0x80, second_hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_lo = 0xA0;
      if (lead == 0xED) second_hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_lo = 0x90;
      if (lead == 0xF4) second_hi = 0x8F;
    } else {
      return i;
    }
    if (n - i < length) return i;
    const auto second = static_cast<uint8_t>(text[i + 1]);
    if (second < second_lo || second > second_hi) return i;
    for (size_t k = 2; k < length; ++k) {
      const auto b = static_cast<uint8_t>(text[i + k]);
      if (b < 0x80 || b > 0xBF) return i;
    }
    i += length;
  }
  return std::nullopt;
}

} // namespace mt
