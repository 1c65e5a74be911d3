// Python's str.lower() over UTF-8 text: what sentence-transformers applies to a text before
// tokenizing it when the folder's sentence_bert_config.json sets do_lower_case. Each
// character's full lowercase (U+0130 -> "i" U+0307), and capital sigma to final sigma at the
// end of a word, as Python decides it (Unicode's Final_Sigma condition).
#pragma once

#include <string>
#include <string_view>

namespace mt::tok {

// Throws std::invalid_argument naming the byte offset of ill-formed UTF-8 (utf8_codec.h).
// "Cased" is taken as the letters Lu, Ll and Lt: the few symbols and modifier letters Unicode
// also counts as cased (Other_Lowercase, Other_Uppercase: U+00AA, U+24B6, ...) are not, so a
// sigma after one alone stays U+03C3 where Python writes U+03C2.
std::string python_lower(std::string_view text);

} // namespace mt::tok
