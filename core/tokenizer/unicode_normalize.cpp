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

} // namespace mt::tok
