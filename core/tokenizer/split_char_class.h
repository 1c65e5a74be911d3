// The four classes the pre-tokenizer split patterns (gpt2_split.h, cl100k_split.h) tell
// characters apart by: \p{L}, \p{N}, \s (White_Space) and everything else.
#pragma once

#include "core/tokenizer/unicode_tables.h"

namespace mt::tok {

enum class CharClass { Letter, Number, Space, Other };

inline CharClass classify(char32_t c) {
  // ASCII first: most text is, and the table lookup is a binary search.
  if (c < 0x80) {
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return CharClass::Letter;
    if (c >= '0' && c <= '9') return CharClass::Number;
    if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return CharClass::Space;
    return CharClass::Other;
  }
  if (is_white_space(c)) return CharClass::Space;
  const GeneralCategory g = general_category(c);
  if (is_letter(g)) return CharClass::Letter;
  if (is_number(g)) return CharClass::Number;
  return CharClass::Other;
}

} // namespace mt::tok
