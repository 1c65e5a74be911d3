// Canonical decomposition and composition (Unicode normalization forms D and C) over the
// generated tables: NFD for the BERT normalizer's accent stripping (NFD, then drop the
// non-spacing marks), NFC for tokenizer.json's NFC normalizer (Qwen2's).
#pragma once

#include <string>
#include <string_view>

namespace mt::tok {

// NFD: every character fully decomposed (Hangul syllables by the algorithm of Unicode's
// section 3.12), then each run of non-starters put in canonical order (a stable sort by
// combining class).
std::u32string nfd(std::u32string_view text);

// NFC: NFD, then canonical composition (Unicode's section 3.11): each character joined to the
// last starter before it when they have a primary composite and no character between them
// blocks it (a starter, or one of a combining class not lower than its own).
std::u32string nfc(std::u32string_view text);

} // namespace mt::tok
