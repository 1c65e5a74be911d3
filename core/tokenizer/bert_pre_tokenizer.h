// BERT's pre-tokenizer (the tokenizers crate's BertPreTokenizer): words are cut at
// whitespace (White_Space, removed) and at each punctuation character (kept as a word of its
// own). Punctuation is the Unicode P* categories plus all ASCII non-alphanumeric printable
// characters ($, +, <, =, >, ^, `, | and ~ are symbols in Unicode but punctuation here).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mt::tok {

bool is_bert_punctuation(char32_t c);

// The words of `text` (UTF-8). Throws std::invalid_argument for ill-formed UTF-8.
std::vector<std::string> bert_pre_tokenize(std::string_view text);

} // namespace mt::tok
