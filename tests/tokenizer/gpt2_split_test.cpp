// The hand-written GPT-2 split (core/tokenizer/gpt2_split.h) against the regular expression
// itself: std::regex (ECMAScript) runs the GPT-2 pattern on the text with every non-ASCII
// character replaced by an ASCII one of its class (letter, number, whitespace, other), which
// std::regex can match without \p{..}; the pieces must be the same, on hand-picked edge cases
// and on random strings over an alphabet of all the classes.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "core/tokenizer/gpt2_split.h"
#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"
#include "tests/tokenizer/split_test_util.h"

namespace mt::tok {
namespace {

using testing::regex_pieces;
using Pieces = std::vector<std::pair<size_t, size_t>>;

Pieces regex_split(std::u32string_view text) {
  static const std::wregex pattern(
      L"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\\s A-Za-z0-9]+|\\s+(?!\\S)|\\s+");
  return regex_pieces(text, pattern);
}

std::string show(std::u32string_view text, const Pieces& pieces) {
  std::string s;
  for (const auto& [b, e] : pieces)
    s += "[" + encode_utf8(text.substr(b, e - b)) + "]";
  return s;
}

TEST(Gpt2Split, EdgeCasesMatchTheRegex) {
  const char* cases[] = {
      "Hello world",
      "  leading",
      "trailing  ",
      "a  b",
      "a \tb",
      "\t\ttabs",
      "x  \n",
      "  \n",
      "\n\n  \n",
      "I'm you're they've he'll she'd it's 'S 'LL",
      "''s",
      "'",
      "?'s!",
      "don't",
      "123 4567 8.9",
      "abc123def",
      " 3 apples",
      "a\u00a0b",
      "a\u00a0 b",
      "\u3000\u3000x",
      "caf\u00e9 na\u00efve",
      "e\u0301",
      " \u0301",
      "\u4e2d\u6587 \u5b57",
      "\U0001F600\U0001F389 ok",
      "x\U0001F600",
      "\u00b2\u00bd\u2167",
      " !!!",
      "a!!!b??c",
      "  !",
      "\r\n",
      "end\r",
      " ",
      "",
      "\x0b\x0c",
      "\u0085x",
      "\u2028",
      "@user #tag",
  };
  for (const char* c : cases) {
    const std::u32string text = decode_utf8(c);
    EXPECT_EQ(show(text, gpt2_split(text)), show(text, regex_split(text))) << c;
  }
}

TEST(Gpt2Split, RandomStringsMatchTheRegex) {
  const std::u32string alphabet =
      U"abzAZ09'srtevmld \t\n\r\v!?.,-_()\u00a0\u2003\u3000\u00e9\u00df\u03a3\u0436"
      U"\u4e2d\u3042\u0661\u00b2\u2167\u0301\u200b\ufeff\U0001F600\U0001F3FD\u0085\u0007";
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1), length(0, 24);
  for (int i = 0; i < 3000; ++i) {
    std::u32string text;
    for (size_t n = length(rng); n; --n)
      text.push_back(alphabet[pick(rng)]);
    ASSERT_EQ(show(text, gpt2_split(text)), show(text, regex_split(text))) << encode_utf8(text);
  }
}

} // namespace
} // namespace mt::tok
