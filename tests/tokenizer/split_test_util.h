// Shared by the split tests (gpt2_split_test.cpp, cl100k_split_test.cpp): text mapped to ASCII
// by character class, so that std::regex, which knows no \p{..}, can run the patterns.
#pragma once

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tokenizer/unicode_tables.h"

namespace mt::tok::testing {

// ASCII stays as it is (the contractions and the optional space are literal); other letters
// become 'x' (not a contraction letter), numbers '7', White_Space '\t', anything else '#'.
inline std::wstring ascii_classes(std::u32string_view text) {
  std::wstring out;
  for (char32_t c : text) {
    if (c < 0x80)
      out.push_back(static_cast<wchar_t>(c));
    else if (is_white_space(c))
      out.push_back(L'\t');
    else if (is_letter(general_category(c)))
      out.push_back(L'x');
    else if (is_number(general_category(c)))
      out.push_back(L'7');
    else
      out.push_back(L'#');
  }
  return out;
}

// The [begin, end) pieces `pattern` finds one after another in ascii_classes(text); a
// character the matches skip fails the test.
inline std::vector<std::pair<size_t, size_t>> regex_pieces(std::u32string_view text,
                                                           const std::wregex& pattern) {
  const std::wstring mapped = ascii_classes(text);
  std::vector<std::pair<size_t, size_t>> pieces;
  size_t covered = 0;
  for (std::wsregex_iterator it(mapped.begin(), mapped.end(), pattern), end; it != end; ++it) {
    const size_t begin = static_cast<size_t>(it->position()),
                 len = static_cast<size_t>(it->length());
    EXPECT_EQ(begin, covered) << "the pattern skipped characters";
    pieces.emplace_back(begin, begin + len);
    covered = begin + len;
  }
  EXPECT_EQ(covered, text.size());
  return pieces;
}

} // namespace mt::tok::testing
