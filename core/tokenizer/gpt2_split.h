// The GPT-2 pre-tokenizer split, written out by hand: the pieces that the regular expression
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// finds one after another (the tokenizers crate's ByteLevel pre-tokenizer with use_regex),
// with \p{L}, \p{N} from the generated general categories and \s as White_Space. std::regex
// knows no \p{..}, and this needs no regex library.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace mt::tok {

// [begin, end) code-point offsets of the pieces of `text`; together they cover all of it.
std::vector<std::pair<size_t, size_t>> gpt2_split(std::u32string_view text);

} // namespace mt::tok
