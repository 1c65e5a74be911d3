#include "core/tokenizer/unicode_normalize.h"

#include <algorithm>

#include "core/tokenizer/unicode_tables.h"

namespace mt::tok {

namespace {

constexpr char32_t kHangulFirst = 0xAC00, kLeadFirst = 0x1100, kVowelFirst = 0x1161,
                   kTrailFirst = 0x11A7;
constexpr char32_t kVowelCount = 21, kTrailCount = 28, kSyllableCount = 19 * 21 * 28;

void decompose(char32_t c, std::u32string& out) {
  if (c >= kHangulFirst && c < kHangulFirst + kSyllableCount) {
    const char32_t index = c - kHangulFirst;
    out.push_back(kLeadFirst + index / (kVowelCount * kTrailCount));
    out.push_back(kVowelFirst + (index % (kVowelCount * kTrailCount)) / kTrailCount);
    if (index % kTrailCount) out.push_back(kTrailFirst + index % kTrailCount);
    return;
  }
  const std::u32string_view d = canonical_decomposition(c);
  if (d.empty())
    out.push_back(c);
  else
    out.append(d);
}

// The composite of a starter and the next character, Hangul by the algorithm: a leading
// consonant and a vowel make an LV syllable, an LV syllable and a trailing consonant an LVT one.
char32_t compose(char32_t first, char32_t second) {
  constexpr char32_t kLeadCount = 19;
  if (first >= kLeadFirst && first < kLeadFirst + kLeadCount && second >= kVowelFirst &&
      second < kVowelFirst + kVowelCount)
    return kHangulFirst +
           ((first - kLeadFirst) * kVowelCount + (second - kVowelFirst)) * kTrailCount;
  if (first >= kHangulFirst && first < kHangulFirst + kSyllableCount &&
      (first - kHangulFirst) % kTrailCount == 0 && second > kTrailFirst &&
      second < kTrailFirst + kTrailCount)
    return first + (second - kTrailFirst);
  return primary_composite(first, second);
}

} // namespace

std::u32string nfd(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text)
    decompose(c, out);
  // Canonical ordering: only runs of two or more non-starters can be out of order.
  for (size_t i = 0; i < out.size();) {
    if (canonical_combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < out.size() && canonical_combining_class(out[end]) != 0)
      ++end;
    if (end - i > 1)
      std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(i),
                       out.begin() + static_cast<std::ptrdiff_t>(end), [](char32_t a, char32_t b) {
                         return canonical_combining_class(a) < canonical_combining_class(b);
                       });
    i = end;
  }
  return out;
}

std::u32string nfc(std::u32string_view text) {
  std::u32string out = nfd(text);
  if (out.empty()) return out;
  size_t starter = 0, kept = 1;
  // The combining class of the last character kept after the starter; 256 blocks everything
  // when the text does not begin with a starter.
  int last_class = canonical_combining_class(out[0]) == 0 ? 0 : 256;
  for (size_t i = 1; i < out.size(); ++i) {
    const char32_t c = out[i];
    const int c_class = canonical_combining_class(c);
    // Not blocked: the last character kept is the starter itself (class 0: composed
    // characters are gone), or all kept since it have a lower class than c.
    const char32_t composite =
        last_class == 0 || last_class < c_class ? compose(out[starter], c) : 0;
    if (composite) {
      out[starter] = composite;
      continue;
    }
    if (c_class == 0) starter = kept;
    last_class = c_class;
    out[kept++] = c;
  }
  out.resize(kept);
  return out;
}

} // namespace mt::tok
