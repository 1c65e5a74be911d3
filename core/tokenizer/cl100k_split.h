// The pre-tokenizer split of Llama 3 and Qwen2 (tiktoken's cl100k pattern, GPT-4's), written
// out by hand: the pieces that the regular expression
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
// finds one after another, D = 3 (Llama 3) or 1 (Qwen2: "\p{N}"), as the tokenizers crate's
// Split pre-tokenizer (behavior Isolated) does with it. tokenizer.json spells the pattern out;
// cl100k_digits() recognises the two spellings, and anything else is refused by the loader.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace mt::tok {

// [begin, end) code-point offsets of the pieces of `text`; together they cover all of it.
// `max_digits`: the longest run of numbers one piece holds (1 or 3).
std::vector<std::pair<size_t, size_t>> cl100k_split(std::u32string_view text, size_t max_digits);

// The D of `regex` when it is the pattern above as Llama 3's (D = 3) or Qwen2's (D = 1)
// tokenizer.json writes it; empty for any other pattern.
std::optional<size_t> cl100k_digits(std::string_view regex);

} // namespace mt::tok
