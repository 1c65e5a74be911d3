// The generated Unicode tables (core/tokenizer/unicode_tables.h) and NFD
// (unicode_normalize.h) against facts of the Unicode Character Database written out here by
// hand: the categories, lowercase mappings, decompositions and combining classes of
// characters picked from every part of the tables (ASCII, Latin-1, other planes, ranges the
// tables compress, unassigned code points).
#include <gtest/gtest.h>

#include <string>

#include "core/tokenizer/unicode_normalize.h"
#include "core/tokenizer/unicode_tables.h"

namespace mt::tok {
namespace {

using GC = GeneralCategory;

TEST(UnicodeTables, GeneralCategories) {
  const std::pair<char32_t, GC> facts[] = {
      {U'\0', GC::Cc},    {U'\t', GC::Cc},    {U' ', GC::Zs},    {U'!', GC::Po},
      {U'$', GC::Sc},     {U'(', GC::Ps},     {U')', GC::Pe},    {U'+', GC::Sm},
      {U'-', GC::Pd},     {U'0', GC::Nd},     {U'A', GC::Lu},    {U'^', GC::Sk},
      {U'_', GC::Pc},     {U'a', GC::Ll},     {U'~', GC::Sm},    {0x7F, GC::Cc},
      {0x85, GC::Cc},     {0xA0, GC::Zs},     {0xAD, GC::Cf},    {0xAB, GC::Pi},
      {0xBB, GC::Pf},     {0xB2, GC::No},     {0xE9, GC::Ll},    {0x1C5, GC::Lt},
      {0x2B0, GC::Lm},    {0x301, GC::Mn},    {0x378, GC::Cn},   {0x3A3, GC::Lu},
      {0x488, GC::Me},    {0x5D0, GC::Lo},    {0x903, GC::Mc},   {0x16EE, GC::Nl},
      {0x2028, GC::Zl},   {0x2029, GC::Zp},   {0x200B, GC::Cf},  {0x3000, GC::Zs},
      {0x3042, GC::Lo},   {0x4E00, GC::Lo},   {0x9FA5, GC::Lo},  {0xAC00, GC::Lo},
      {0xD800, GC::Cs},   {0xE000, GC::Co},   {0xFEFF, GC::Cf},  {0xFFFD, GC::So},
      {0xFFFF, GC::Cn},   {0x1D400, GC::Lu},  {0x1F600, GC::So}, {0x1F3FD, GC::Sk},
      {0x20000, GC::Lo},  {0xE0001, GC::Cf},  {0xF0000, GC::Co}, {0x10FFFD, GC::Co},
      {0x10FFFF, GC::Cn}, {0x110000, GC::Cn},
  };
  for (const auto& [c, g] : facts)
    EXPECT_EQ(static_cast<int>(general_category(c)), static_cast<int>(g))
        << "U+" << std::hex << static_cast<uint32_t>(c);
}

std::u32string lower(char32_t c) {
  char32_t out[kMaxLowercaseLength];
  const size_t n = lowercase(c, out);
  return std::u32string(out, n);
}

TEST(UnicodeTables, LowercaseOfOneCharacter) {
  EXPECT_EQ(lower(U'A'), U"a");
  EXPECT_EQ(lower(U'a'), U"a");
  EXPECT_EQ(lower(U'1'), U"1");
  EXPECT_EQ(lower(0xC9), std::u32string(1, 0xE9));        // É
  EXPECT_EQ(lower(0x3A3), std::u32string(1, 0x3C3));      // Σ -> σ (no final-sigma context)
  EXPECT_EQ(lower(0x130), (std::u32string{U'i', 0x307})); // İ -> i + combining dot above
  EXPECT_EQ(lower(0x1C5), std::u32string(1, 0x1C6));      // ǅ (titlecase) -> ǆ
  EXPECT_EQ(lower(0x212A), U"k");                         // KELVIN SIGN
  EXPECT_EQ(lower(0x1E9E), std::u32string(1, 0xDF));      // ẞ -> ß
  EXPECT_EQ(lower(0x410), std::u32string(1, 0x430));      // Cyrillic А
  EXPECT_EQ(lower(0x10400), std::u32string(1, 0x10428));  // Deseret, another plane
  EXPECT_EQ(lower(0xDF), std::u32string(1, 0xDF));        // ß has no lowercase other than itself
  EXPECT_EQ(lower(0x4E00), std::u32string(1, 0x4E00));
}

TEST(UnicodeTables, WhiteSpaceIsTheWhiteSpaceProperty) {
  for (char32_t c : {U'\t', U'\n', U'\v', U'\f', U'\r', U' ', char32_t(0x85), char32_t(0xA0),
                     char32_t(0x1680), char32_t(0x2000), char32_t(0x200A), char32_t(0x2028),
                     char32_t(0x2029), char32_t(0x202F), char32_t(0x205F), char32_t(0x3000)})
    EXPECT_TRUE(is_white_space(c)) << std::hex << static_cast<uint32_t>(c);
  // Python's isspace() counts U+001C..U+001F; White_Space (Rust's is_whitespace) does not.
  for (char32_t c : {char32_t(0x1C), char32_t(0x1F), char32_t(0x200B), char32_t(0xFEFF),
                     char32_t(0x180E), U'a', U'\0'})
    EXPECT_FALSE(is_white_space(c)) << std::hex << static_cast<uint32_t>(c);
}

TEST(UnicodeTables, CanonicalDecompositionAndCombiningClass) {
  EXPECT_EQ(canonical_decomposition(0xE9), (std::u32string{U'e', 0x301}));
  // Recursive: U+1E17 (ḗ) -> e + macron + acute, through U+0113.
  EXPECT_EQ(canonical_decomposition(0x1E17), (std::u32string{U'e', 0x304, 0x301}));
  EXPECT_EQ(canonical_decomposition(0x212B), (std::u32string{U'A', 0x30A})); // ANGSTROM SIGN
  EXPECT_EQ(canonical_decomposition(0xFB01), U""); // ﬁ: compatibility only, not canonical
  EXPECT_EQ(canonical_decomposition(U'a'), U"");
  EXPECT_EQ(canonical_combining_class(U'a'), 0);
  EXPECT_EQ(canonical_combining_class(0x301), 230); // above
  EXPECT_EQ(canonical_combining_class(0x323), 220); // below
  EXPECT_EQ(canonical_combining_class(0x334), 1);   // overlay
  EXPECT_EQ(canonical_combining_class(0x1D165), 216);
}

TEST(UnicodeNormalize, NfdDecomposesHangulAndOrdersMarks) {
  EXPECT_EQ(nfd(U"caf\u00e9"), (std::u32string{U'c', U'a', U'f', U'e', 0x301}));
  // 한 = HIEUH + A + NIEUN (Unicode section 3.12); 가 has no trailing consonant.
  EXPECT_EQ(nfd(std::u32string(1, 0xD55C)), (std::u32string{0x1112, 0x1161, 0x11AB}));
  EXPECT_EQ(nfd(std::u32string(1, 0xAC00)), (std::u32string{0x1100, 0x1161}));
  // Marks below (220) go before marks above (230), whatever order they were written in;
  // marks of the same class keep their order.
  const std::u32string expected{U'a', 0x323, 0x308};
  EXPECT_EQ(nfd(std::u32string{U'a', 0x308, 0x323}), expected);
  EXPECT_EQ(nfd(std::u32string{U'a', 0x323, 0x308}), expected);
  EXPECT_EQ(nfd(std::u32string{U'a', 0x301, 0x300}), (std::u32string{U'a', 0x301, 0x300}));
  // ḉ (U+1E09) = c + cedilla (202) + acute (230), then a loose dot below (220) sorts between.
  EXPECT_EQ(nfd(std::u32string{0x1E09, 0x323}), (std::u32string{U'c', 0x327, 0x323, 0x301}));
  EXPECT_EQ(nfd(U""), U"");
}

} // namespace
} // namespace mt::tok
