#include "core/tokenizer/gpt2_split.h"

#include "core/tokenizer/split_char_class.h"

namespace mt::tok {

namespace {

// The alternatives of the pattern tried in order at one position, as the regex engine does
// (the first that matches wins, not the longest).
class Gpt2Matcher {
public:
  explicit Gpt2Matcher(std::u32string_view text) : text_(text) {
    classes_.reserve(text.size());
    for (char32_t c : text)
      classes_.push_back(classify(c));
  }

  // The end of the piece starting at `i` (> i).
  size_t match(size_t i) const {
    if (size_t end = contraction(i)) return end;
    // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional space, then a run of one class.
    for (CharClass k : {CharClass::Letter, CharClass::Number, CharClass::Other}) {
      size_t start = i;
      if (text_[start] == U' ' && start + 1 < text_.size() && classes_[start + 1] == k) ++start;
      if (classes_[start] != k) continue;
      return run_end(start, k);
    }
    // Here text_[i] is whitespace. "\s+(?!\S)": the run, backing off by one when a non-space
    // follows (the run keeps at least one character, else the next alternative applies).
    const size_t end = run_end(i, CharClass::Space);
    if (end == text_.size() || end - i >= 2) return end == text_.size() ? end : end - 1;
    return end; // "\s+"
  }

private:
  // "'s|'t|'re|'ve|'m|'ll|'d" (case-sensitive, as written).
  size_t contraction(size_t i) const {
    if (text_[i] != U'\'' || i + 1 >= text_.size()) return 0;
    const char32_t a = text_[i + 1];
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return i + 2;
    if (i + 2 >= text_.size()) return 0;
    const char32_t b = text_[i + 2];
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l'))
      return i + 3;
    return 0;
  }

  size_t run_end(size_t i, CharClass k) const {
    while (i < text_.size() && classes_[i] == k)
      ++i;
    return i;
  }

  std::u32string_view text_;
  std::vector<CharClass> classes_;
};

} // namespace

std::vector<std::pair<size_t, size_t>> gpt2_split(std::u32string_view text) {
  std::vector<std::pair<size_t, size_t>> pieces;
  const Gpt2Matcher matcher(text);
  for (size_t i = 0; i < text.size();) {
    const size_t end = matcher.match(i);
    pieces.emplace_back(i, end);
    i = end;
  }
  return pieces;
}

} // namespace mt::tok
