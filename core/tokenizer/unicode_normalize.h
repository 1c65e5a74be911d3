// Canonical decomposition (Unicode normalization form D) over the generated tables, for the
// BERT normalizer's accent stripping (NFD, then drop the non-spacing marks).
#pragma once

#include <string>
#include <string_view>

namespace mt::tok {

// NFD: every character fully decomposed (Hangul syllables by the algorithm of Unicode's
// section 3.12), then each run of non-starters put in canonical order (a stable sort by
// combining class).
std::u32string nfd(std::u32string_view text);

} // namespace mt::tok
