#include "core/tokenizer/gpt2_split.h"

#include "core/tokenizer/split_char_class.h"

namespace mt::tok {

namespace {

// The alternatives of the pattern tried in order at one position, as the regex engine does
// (the first that matches wins, not the longest).
class Gpt2Matcher {
public:
  explicit Gpt2Matcher(std::u32string_view text) : t_(text) {}

  // The end of the piece starting at `i` (> i).
  size_t operator()(size_t i) const {
    // "'s|'t|'re|'ve|'m|'ll|'d" (case-sensitive, as written).
    if (size_t end = t_.contraction(i, false)) return end;
    // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional space, then a run of one class.
    for (CharClass k : {CharClass::Letter, CharClass::Number, CharClass::Other}) {
      size_t start = i;
      if (t_.at(start) == U' ' && start + 1 < t_.size() && t_.cls(start + 1) == k) ++start;
      if (t_.cls(start) != k) continue;
      return t_.run_end(start, k);
    }
    return t_.spaces_end(i); // here t_.at(i) is whitespace
  }

private:
  ClassedText t_;
};

} // namespace

std::vector<std::pair<size_t, size_t>> gpt2_split(std::u32string_view text) {
  return pieces_of(text.size(), Gpt2Matcher(text));
}

} // namespace mt::tok
