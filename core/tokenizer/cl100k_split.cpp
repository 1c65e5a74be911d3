#include "core/tokenizer/cl100k_split.h"

#include "core/tokenizer/split_char_class.h"

namespace mt::tok {

namespace {

bool is_newline(char32_t c) {
  return c == U'\r' || c == U'\n';
}

char32_t ascii_lower(char32_t c) {
  return c >= U'A' && c <= U'Z' ? c + 32 : c;
}

// The alternatives of the pattern tried in order at one position, as the regex engine does
// (the first that matches wins, not the longest), each written with the backtracking it
// implies.
class Cl100kMatcher {
public:
  Cl100kMatcher(std::u32string_view text, size_t max_digits)
      : text_(text), max_digits_(max_digits) {
    classes_.reserve(text.size());
    for (char32_t c : text)
      classes_.push_back(classify(c));
  }

  // The end of the piece starting at `i` (> i).
  size_t match(size_t i) const {
    if (size_t end = contraction(i)) return end;
    // "[^\r\n\p{L}\p{N}]?\p{L}+": a letter run, or one character that is neither a line break,
    // a letter nor a number followed by a letter run.
    if (classes_[i] == CharClass::Letter) return run_end(i, CharClass::Letter);
    if (classes_[i] != CharClass::Number && !is_newline(text_[i]) && i + 1 < text_.size() &&
        classes_[i + 1] == CharClass::Letter)
      return run_end(i + 1, CharClass::Letter);
    // "\p{N}{1,D}"
    if (classes_[i] == CharClass::Number) {
      size_t end = i;
      while (end < text_.size() && end - i < max_digits_ && classes_[end] == CharClass::Number)
        ++end;
      return end;
    }
    // " ?[^\s\p{L}\p{N}]+[\r\n]*"
    size_t start = i;
    if (text_[start] == U' ' && start + 1 < text_.size() && classes_[start + 1] == CharClass::Other)
      ++start;
    if (classes_[start] == CharClass::Other) {
      size_t end = run_end(start, CharClass::Other);
      while (end < text_.size() && is_newline(text_[end]))
        ++end;
      return end;
    }
    // Here text_[i] is whitespace. "\s*[\r\n]+": the run up to its last line break.
    const size_t end = run_end(i, CharClass::Space);
    for (size_t k = end; k > i; --k)
      if (is_newline(text_[k - 1])) return k;
    // "\s+(?!\S)": the run, backing off by one when a non-space follows (the run keeps at
    // least one character, else "\s+" applies).
    if (end == text_.size() || end - i >= 2) return end == text_.size() ? end : end - 1;
    return end; // "\s+"
  }

private:
  // "(?i:'s|'t|'re|'ve|'m|'ll|'d)": ASCII letters in either case (the crate's engine folds
  // no other character onto them here: "'ſ" is not a contraction).
  size_t contraction(size_t i) const {
    if (text_[i] != U'\'' || i + 1 >= text_.size()) return 0;
    const char32_t a = ascii_lower(text_[i + 1]);
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return i + 2;
    if (i + 2 >= text_.size()) return 0;
    const char32_t b = ascii_lower(text_[i + 2]);
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
  size_t max_digits_;
  std::vector<CharClass> classes_;
};

} // namespace

std::vector<std::pair<size_t, size_t>> cl100k_split(std::u32string_view text, size_t max_digits) {
  std::vector<std::pair<size_t, size_t>> pieces;
  const Cl100kMatcher matcher(text, max_digits);
  for (size_t i = 0; i < text.size();) {
    const size_t end = matcher.match(i);
    pieces.emplace_back(i, end);
    i = end;
  }
  return pieces;
}

std::optional<size_t> cl100k_digits(std::string_view regex) {
  constexpr std::string_view head = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|)";
  constexpr std::string_view tail = R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (!regex.starts_with(head) || !regex.ends_with(tail) ||
      regex.size() < head.size() + tail.size())
    return std::nullopt;
  const std::string_view digits =
      regex.substr(head.size(), regex.size() - head.size() - tail.size());
  if (digits == R"(\p{N}{1,3})") return 3;
  if (digits == R"(\p{N})") return 1;
  return std::nullopt;
}

} // namespace mt::tok
