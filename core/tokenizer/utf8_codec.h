// UTF-8 to code points and back, for the tokenizers: decoding is strict (text to tokenize must
// be well-formed), and the lossy decoding of byte-level tokens replaces ill-formed sequences
// with U+FFFD the way Rust's String::from_utf8_lossy does, as the tokenizers crate's
// ByteLevel decoder does.
#pragma once

#include <string>
#include <string_view>

namespace mt::tok {

// The code points of `text`. Throws std::invalid_argument naming the byte offset of the first
// ill-formed sequence (overlong forms, surrogates, above U+10FFFF, truncated).
std::u32string decode_utf8(std::string_view text);

void append_utf8(std::string& out, char32_t c);
std::string encode_utf8(std::u32string_view text);

// `bytes` as UTF-8 text, each maximal ill-formed subpart (Unicode's "substitution of maximal
// subparts", which Rust follows) replaced by one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

} // namespace mt::tok
