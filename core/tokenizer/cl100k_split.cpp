#include "core/tokenizer/cl100k_split.h"

#include "core/tokenizer/split_char_class.h"

namespace mt::tok {

namespace {

bool is_newline(char32_t c) {
  return c == U'\r' || c == U'\n';
}

// The alternatives of the pattern tried in order at one position, as the regex engine does
// (the first that matches wins, not the longest), each written with the backtracking it
// implies.
class Cl100kMatcher {
public:
  Cl100kMatcher(std::u32string_view text, size_t max_digits) : t_(text), max_digits_(max_digits) {}

  // The end of the piece starting at `i` (> i).
  size_t operator()(size_t i) const {
    if (size_t end = t_.contraction(i, true)) return end;
    // "[^\r\n\p{L}\p{N}]?\p{L}+": a letter run, or one character that is neither a line break,
    // a letter nor a number followed by a letter run.
    if (t_.cls(i) == CharClass::Letter) return t_.run_end(i, CharClass::Letter);
    if (t_.cls(i) != CharClass::Number && !is_newline(t_.at(i)) && i + 1 < t_.size() &&
        t_.cls(i + 1) == CharClass::Letter)
      return t_.run_end(i + 1, CharClass::Letter);
    // "\p{N}{1,D}"
    if (t_.cls(i) == CharClass::Number) {
      size_t end = i;
      while (end < t_.size() && end - i < max_digits_ && t_.cls(end) == CharClass::Number)
        ++end;
      return end;
    }
    // " ?[^\s\p{L}\p{N}]+[\r\n]*"
    size_t start = i;
    if (t_.at(start) == U' ' && start + 1 < t_.size() && t_.cls(start + 1) == CharClass::Other)
      ++start;
    if (t_.cls(start) == CharClass::Other) {
      size_t end = t_.run_end(start, CharClass::Other);
      while (end < t_.size() && is_newline(t_.at(end)))
        ++end;
      return end;
    }
    // Here t_.at(i) is whitespace. "\s*[\r\n]+": the run up to its last line break.
    const size_t end = t_.run_end(i, CharClass::Space);
    for (size_t k = end; k > i; --k)
      if (is_newline(t_.at(k - 1))) return k;
    return t_.spaces_end(i);
  }

private:
  ClassedText t_;
  size_t max_digits_;
};

} // namespace

std::vector<std::pair<size_t, size_t>> cl100k_split(std::u32string_view text, size_t max_digits) {
  return pieces_of(text.size(), Cl100kMatcher(text, max_digits));
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
