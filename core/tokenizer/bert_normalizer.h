// BERT's normalizer (the tokenizers crate's BertNormalizer, BertWordPieceTokenizer's
// defaults): clean text (drop U+0000, U+FFFD and control characters -- Cc, Cf, Co except tab,
// newline and carriage return -- and turn every whitespace character into a space), put
// spaces around CJK ideographs, strip accents (NFD, then drop the non-spacing marks Mn), and
// lowercase, in that order.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mt::tok {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  std::optional<bool> strip_accents; // unset: as `lowercase` (bert-base-uncased strips them)
  bool lowercase = true;
};

class BertNormalizer {
public:
  explicit BertNormalizer(BertNormalizerOptions options = {}) : options_(options) {}
  // Throws std::invalid_argument for ill-formed UTF-8.
  std::string operator()(std::string_view text) const;
  const BertNormalizerOptions& options() const { return options_; }

private:
  BertNormalizerOptions options_;
};

// The CJK ideograph blocks BERT pads with spaces (its _is_chinese_char): Hangul, Hiragana and
// Katakana are not among them.
bool is_cjk_ideograph(char32_t c);

} // namespace mt::tok
