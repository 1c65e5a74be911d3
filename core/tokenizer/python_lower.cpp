// Python's str.lower() (see python_lower.h).
#include "core/tokenizer/python_lower.h"

#include <algorithm>
#include <array>

#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"

namespace mt::tok {
namespace {

constexpr char32_t kCapitalSigma = 0x03A3, kSmallSigma = 0x03C3, kFinalSigma = 0x03C2;

bool is_cased(char32_t c) {
  const GeneralCategory g = general_category(c);
  return g == GeneralCategory::Lu || g == GeneralCategory::Ll || g == GeneralCategory::Lt;
}

// Unicode's Case_Ignorable: marks, format characters, modifiers, and the characters whose
// Word_Break is MidLetter, MidNumLet or Single_Quote (an apostrophe or a period inside a word
// does not end it).
bool is_case_ignorable(char32_t c) {
  static constexpr std::array<char32_t, 17> kWordInner = {
      0x0027, 0x002E, 0x003A, 0x00B7, 0x0387, 0x055F, 0x05F4, 0x2018, 0x2019,
      0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
  switch (general_category(c)) {
  case GeneralCategory::Mn:
  case GeneralCategory::Me:
  case GeneralCategory::Cf:
  case GeneralCategory::Lm:
  case GeneralCategory::Sk:
    return true;
  default:
    return std::find(kWordInner.begin(), kWordInner.end(), c) != kWordInner.end();
  }
}

// Final_Sigma: a cased letter before the sigma and none after it, case-ignorable characters
// skipped on both sides.
bool ends_word(const std::u32string& chars, size_t i) {
  size_t j = i;
  while (j > 0 && is_case_ignorable(chars[j - 1]))
    --j;
  if (j == 0 || !is_cased(chars[j - 1])) return false;
  size_t k = i + 1;
  while (k < chars.size() && is_case_ignorable(chars[k]))
    ++k;
  return k == chars.size() || !is_cased(chars[k]);
}

} // namespace

std::string python_lower(std::string_view text) {
  const std::u32string chars = decode_utf8(text);
  std::string out;
  out.reserve(text.size());
  char32_t buffer[kMaxLowercaseLength];
  for (size_t i = 0; i < chars.size(); ++i) {
    if (chars[i] == kCapitalSigma) {
      append_utf8(out, ends_word(chars, i) ? kFinalSigma : kSmallSigma);
      continue;
    }
    const size_t n = lowercase(chars[i], buffer);
    for (size_t k = 0; k < n; ++k)
      append_utf8(out, buffer[k]);
  }
  return out;
}

} // namespace mt::tok
