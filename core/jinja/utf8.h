// UTF-8 as the template engine needs it: Python's str counts, indexes and slices code points,
// and json.dumps escapes them, so the engine decodes its strings by code point. Malformed
// input is never refused: a lead byte without its continuation bytes is one code point of its
// own value (what the text shows), so every function agrees on where code points start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mt::jinja {

// The code point at s[i] and its length in bytes (1 for a byte that starts no complete one).
inline uint32_t decode_utf8_at(std::string_view s, size_t i, size_t* len) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  if (i + n > s.size()) n = 1;
  uint32_t cp = n == 1 ? c : c & (n == 4 ? 0x07u : n == 3 ? 0x0Fu : 0x1Fu);
  for (size_t k = 1; k < n; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
  *len = n;
  return cp;
}

// Each code point of `s` as its own string.
inline std::vector<std::string> utf8_code_points(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n;
    decode_utf8_at(s, i, &n);
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// How many code points `s` holds: Python's len(str).
inline int64_t utf8_length(std::string_view s) {
  int64_t count = 0;
  for (size_t i = 0; i < s.size(); ++count) {
    size_t n;
    decode_utf8_at(s, i, &n);
    i += n;
  }
  return count;
}

inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

} // namespace mt::jinja
