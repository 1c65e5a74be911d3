#include "core/tokenizer/utf8_codec.h"

#include <cstdint>
#include <stdexcept>

namespace mt::tok {

namespace {

// The length of the well-formed sequence at `i`, or 0 with `*subpart` set to the length of
// the maximal ill-formed subpart there (at least 1). RFC 3629's ranges: the second byte's
// allowed range is what rules out overlong forms, surrogates and values above U+10FFFF.
size_t sequence_at(std::string_view s, size_t i, char32_t* value, size_t* subpart) {
  const auto lead = static_cast<uint8_t>(s[i]);
  if (lead < 0x80) {
    *value = lead;
    return 1;
  }
  size_t length;
  uint8_t lo = 0x80, hi = 0xBF;
  char32_t v;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    v = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    v = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    v = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    *subpart = 1;
    return 0;
  }
  for (size_t k = 1; k < length; ++k) {
    if (i + k >= s.size()) {
      *subpart = k;
      return 0;
    }
    const auto b = static_cast<uint8_t>(s[i + k]);
    const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) {
      *subpart = k;
      return 0;
    }
    v = (v << 6) | (b & 0x3F);
  }
  *value = v;
  return length;
}

} // namespace

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char32_t c = 0;
    size_t subpart = 0;
    const size_t n = sequence_at(text, i, &c, &subpart);
    if (n == 0) throw std::invalid_argument("ill-formed UTF-8 at byte " + std::to_string(i));
    out.push_back(c);
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text)
    append_utf8(out, c);
  return out;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    char32_t c = 0;
    size_t subpart = 0;
    const size_t n = sequence_at(bytes, i, &c, &subpart);
    if (n) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      append_utf8(out, 0xFFFD);
      i += subpart;
    }
  }
  return out;
}

} // namespace mt::tok
