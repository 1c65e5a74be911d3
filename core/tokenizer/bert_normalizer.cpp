#include "core/tokenizer/bert_normalizer.h"

#include "core/tokenizer/unicode_normalize.h"
#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"

namespace mt::tok {

namespace {

bool is_tab_or_line_break(char32_t c) {
  return c == U'\t' || c == U'\n' || c == U'\r';
}

bool is_control(char32_t c) {
  if (is_tab_or_line_break(c)) return false; // they count as whitespace
  const GeneralCategory g = general_category(c);
  return g == GeneralCategory::Cc || g == GeneralCategory::Cf || g == GeneralCategory::Co;
}

} // namespace

bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::string BertNormalizer::operator()(std::string_view text) const {
  std::u32string chars = decode_utf8(text);
  if (options_.clean_text) {
    std::u32string cleaned;
    cleaned.reserve(chars.size());
    for (char32_t c : chars) {
      if (c == 0 || c == 0xFFFD || is_control(c)) continue;
      cleaned.push_back(is_tab_or_line_break(c) || is_white_space(c) ? U' ' : c);
    }
    chars = std::move(cleaned);
  }
  if (options_.handle_chinese_chars) {
    std::u32string spaced;
    spaced.reserve(chars.size());
    for (char32_t c : chars) {
      if (is_cjk_ideograph(c)) {
        spaced.push_back(U' ');
        spaced.push_back(c);
        spaced.push_back(U' ');
      } else {
        spaced.push_back(c);
      }
    }
    chars = std::move(spaced);
  }
  if (options_.strip_accents.value_or(options_.lowercase)) {
    std::u32string stripped;
    for (char32_t c : nfd(chars))
      if (general_category(c) != GeneralCategory::Mn) stripped.push_back(c);
    chars = std::move(stripped);
  }
  if (options_.lowercase) {
    std::u32string lowered;
    lowered.reserve(chars.size());
    char32_t buffer[kMaxLowercaseLength];
    for (char32_t c : chars) {
      const size_t n = lowercase(c, buffer);
      lowered.append(buffer, n);
    }
    chars = std::move(lowered);
  }
  return encode_utf8(chars);
}

} // namespace mt::tok
