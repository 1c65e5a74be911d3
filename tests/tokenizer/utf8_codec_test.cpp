// UTF-8 decoding and the lossy decoding of byte-level tokens (core/tokenizer/utf8_codec.h):
// round trips over every scalar value, the ill-formed sequences RFC 3629 names, and the
// U+FFFD substitution of the Unicode Standard's own example (chapter 3, table 3-8, "maximal
// subparts", which Rust's from_utf8_lossy follows).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/tokenizer/utf8_codec.h"

namespace mt::tok {
namespace {

TEST(Utf8Codec, EveryScalarValueRoundTrips) {
  std::u32string all;
  for (char32_t c = 0; c <= 0x10FFFF; ++c)
    if (c < 0xD800 || c > 0xDFFF) all.push_back(c);
  const std::string bytes = encode_utf8(all);
  EXPECT_EQ(decode_utf8(bytes), all);
  EXPECT_EQ(utf8_lossy(bytes), bytes);
}

TEST(Utf8Codec, IllFormedInputIsRefusedWithItsOffset) {
  const std::pair<std::string, size_t> cases[] = {
      {"ab\x80", 2},               // lone continuation
      {"\xC0\xAF", 0},             // overlong '/'
      {"x\xE0\x80\xAF", 1},        // overlong, 3 bytes
      {"\xED\xA0\x80", 0},         // surrogate U+D800
      {"\xF4\x90\x80\x80", 0},     // above U+10FFFF
      {"abc\xE2\x82", 3},          // truncated at the end
      {"\xF8\x88\x80\x80\x80", 0}, // 5-byte form
  };
  for (const auto& [bytes, offset] : cases) {
    try {
      decode_utf8(bytes);
      ADD_FAILURE() << "accepted ill-formed input at " << offset;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "ill-formed UTF-8 at byte " + std::to_string(offset));
    }
  }
}

TEST(Utf8Codec, LossySubstitutesMaximalSubparts) {
  // The Unicode Standard's example: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 decodes to
  // a FFFD FFFD FFFD b FFFD c FFFD FFFD d.
  const std::string bytes = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8_lossy(bytes), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  // A lead byte whose second byte is out of its range is a subpart of one byte.
  EXPECT_EQ(utf8_lossy("\xE0\x80"), r + r);
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), r); // an emoji cut short: one replacement
  EXPECT_EQ(utf8_lossy(""), "");
}

} // namespace
} // namespace mt::tok
