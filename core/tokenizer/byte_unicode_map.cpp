#include "core/tokenizer/byte_unicode_map.h"

namespace mt::tok {

namespace {

bool stands_for_itself(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

} // namespace

ByteUnicodeMap::ByteUnicodeMap() {
  bytes_.fill(-1);
  char32_t next = 0x100;
  for (unsigned b = 0; b < 256; ++b) {
    chars_[b] = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
    bytes_[chars_[b]] = static_cast<int16_t>(b);
  }
}

std::optional<uint8_t> ByteUnicodeMap::to_byte(char32_t c) const {
  if (c >= bytes_.size() || bytes_[c] < 0) return std::nullopt;
  return static_cast<uint8_t>(bytes_[c]);
}

const ByteUnicodeMap& byte_unicode_map() {
  static const ByteUnicodeMap map;
  return map;
}

} // namespace mt::tok
