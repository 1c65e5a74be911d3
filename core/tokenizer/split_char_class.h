// What the pre-tokenizer split patterns (gpt2_split.h, cl100k_split.h) share: the four classes
// they tell characters apart by (\p{L}, \p{N}, \s as White_Space, everything else), a text
// with each character's class, and the alternatives both patterns have -- the contractions and
// the trailing "\s+(?!\S)|\s+".
#pragma once

#include <string_view>
#include <utility>
#include <vector>

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

class ClassedText {
public:
  explicit ClassedText(std::u32string_view text) : text_(text) {
    classes_.reserve(text.size());
    for (char32_t c : text)
      classes_.push_back(classify(c));
  }

  size_t size() const { return text_.size(); }
  char32_t at(size_t i) const { return text_[i]; }
  CharClass cls(size_t i) const { return classes_[i]; }

  // The end of the run of class k from i.
  size_t run_end(size_t i, CharClass k) const {
    while (i < text_.size() && classes_[i] == k)
      ++i;
    return i;
  }

  // "'s|'t|'re|'ve|'m|'ll|'d" at i: its end, or 0. `fold_case`: "(?i:...)", ASCII letters in
  // either case (the tokenizers crate's engine folds no other character onto them: "'ſ" is not
  // a contraction).
  size_t contraction(size_t i, bool fold_case) const {
    if (text_[i] != U'\'' || i + 1 >= text_.size()) return 0;
    const auto letter = [&](size_t k) {
      const char32_t c = text_[k];
      return fold_case && c >= U'A' && c <= U'Z' ? c + 32 : c;
    };
    const char32_t a = letter(i + 1);
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return i + 2;
    if (i + 2 >= text_.size()) return 0;
    const char32_t b = letter(i + 2);
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l'))
      return i + 3;
    return 0;
  }

  // "\s+(?!\S)|\s+" at whitespace i: the run, backing off by one when a non-space follows (the
  // run keeps at least one character, else "\s+" takes it whole).
  size_t spaces_end(size_t i) const {
    const size_t end = run_end(i, CharClass::Space);
    if (end == text_.size() || end - i >= 2) return end == text_.size() ? end : end - 1;
    return end;
  }

private:
  std::u32string_view text_;
  std::vector<CharClass> classes_;
};

// The pieces of a text that `match(i)` (the end of the piece at i, > i) cuts one after another.
template <typename Match>
std::vector<std::pair<size_t, size_t>> pieces_of(size_t size, const Match& match) {
  std::vector<std::pair<size_t, size_t>> pieces;
  for (size_t i = 0; i < size;) {
    const size_t end = match(i);
    pieces.emplace_back(i, end);
    i = end;
  }
  return pieces;
}

} // namespace mt::tok
