// GPT-2's bytes_to_unicode: each of the 256 byte values as a printable character, so that a
// byte-level BPE vocabulary is a set of ordinary strings. The printable bytes '!'..'~',
// U+00A1..U+00AC and U+00AE..U+00FF stand for themselves; the other 68 become U+0100, U+0101,
// ... in byte order (the space 0x20 is U+0120 'Ġ', the newline U+010A 'Ċ').
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace mt::tok {

class ByteUnicodeMap {
public:
  ByteUnicodeMap();
  char32_t to_char(uint8_t byte) const { return chars_[byte]; }
  // The byte `c` stands for, or nullopt for a character that stands for none.
  std::optional<uint8_t> to_byte(char32_t c) const;

private:
  std::array<char32_t, 256> chars_{};
  std::array<int16_t, 324> bytes_{}; // by character (all are below U+0144), -1 for none
};

const ByteUnicodeMap& byte_unicode_map();

} // namespace mt::tok
