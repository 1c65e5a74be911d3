#include "core/tokenizer/bert_pre_tokenizer.h"

#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"

namespace mt::tok {

bool is_bert_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126))
    return true;
  return is_punctuation(general_category(c));
}

std::vector<std::string> bert_pre_tokenize(std::string_view text) {
  std::vector<std::string> words;
  std::u32string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(encode_utf8(word));
    word.clear();
  };
  for (char32_t c : decode_utf8(text)) {
    if (is_white_space(c)) {
      flush();
    } else if (is_bert_punctuation(c)) {
      flush();
      word.push_back(c);
      flush();
    } else {
      word.push_back(c);
    }
  }
  flush();
  return words;
}

} // namespace mt::tok
