// The hand-written Llama 3 / Qwen2 split (core/tokenizer/cl100k_split.h) against two
// independent references: the pieces Hugging Face's tokenizers package (0.23.3) gives for
// hand-picked strings under both patterns (its Split pre-tokenizer's pre_tokenize_str, pasted
// below), and std::regex (ECMAScript, a backtracking engine like the package's) running the
// pattern with every non-ASCII character replaced by an ASCII one of its class, on random
// strings. NFC (core/tokenizer/unicode_normalize.h) against the package's NFC normalizer and
// Python's unicodedata on the cases where composition is subtle; and the tokenizer.json form
// Llama 3 and Qwen2 write, end to end.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/byte_unicode_map.h"
#include "core/tokenizer/cl100k_split.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/unicode_normalize.h"
#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"
#include "tests/tokenizer/split_test_util.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using testing::regex_pieces;
using Pieces = std::vector<std::pair<size_t, size_t>>;
using json = nlohmann::json;
using testing::kLlama3Pattern;
using testing::kQwen2Pattern;

std::vector<std::string> texts(std::u32string_view text, const Pieces& pieces) {
  std::vector<std::string> out;
  for (const auto& [b, e] : pieces)
    out.push_back(encode_utf8(text.substr(b, e - b)));
  return out;
}

// [[text, [pieces]], ...] as the package gave them (JSON with \u escapes).
const char* const kPackagePieces3 = R"([
["I'M '\u017f 'S 'Ll 'LL x'Re don't", ["I", "'M", " '", "\u017f", " '", "S", " '", "Ll", " '", "LL", " x", "'Re", " don", "'t"]],
["12345 a1b22c333d4444 \u0663\u0664\u0665\u0666 \u00bd\u00bc", ["123", "45", " a", "1", "b", "22", "c", "333", "d", "444", "4", " ", "\u0663\u0664\u0665", "\u0666", " ", "\u00bd\u00bc"]],
["hello  \n\n  world\r\n x", ["hello", "  \n\n", " ", " world", "\r\n", " x"]],
["  \t\nabc", ["  \t\n", "abc"]],
["a\u0301b \u0301c", ["a", "\u0301b", " \u0301", "c"]],
["!!!\n\n ?", ["!!!\n\n", " ?"]],
["x   ", ["x", "   "]],
["x \u00a0 y", ["x", " \u00a0", " y"]],
["'", ["'"]],
["\tTab\n\nNew \r\rline", ["\tTab", "\n\n", "New", " \r\r", "line"]],
["  ", ["  "]],
["\n", ["\n"]],
["$100,000.50!", ["$", "100", ",", "000", ".", "50", "!"]],
["\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \ud55c\uad6d\uc5b4", ["\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8", " \ud55c\uad6d\uc5b4"]],
["emoji \ud83d\udc4d\ud83c\udffd ok", ["emoji", " \ud83d\udc4d\ud83c\udffd", " ok"]],
["'ve'", ["'ve", "'"]],
["a'", ["a", "'"]],
["...\n", ["...\n"]],
[" \n x", [" \n", " x"]],
["\u3000\u5168\u89d2", ["\u3000\u5168\u89d2"]]])";

// Qwen2's pattern ("\p{N}", one number a piece) where it differs from Llama 3's.
const char* const kPackagePieces1 = R"([
["12345 a1b22c333d4444 \u0663\u0664\u0665\u0666 \u00bd\u00bc", ["1", "2", "3", "4", "5", " a", "1", "b", "2", "2", "c", "3", "3", "3", "d", "4", "4", "4", "4", " ", "\u0663", "\u0664", "\u0665", "\u0666", " ", "\u00bd", "\u00bc"]],
["$100,000.50!", ["$", "1", "0", "0", ",", "0", "0", "0", ".", "5", "0", "!"]],
["I'M '\u017f 'S 'Ll 'LL x'Re don't", ["I", "'M", " '", "\u017f", " '", "S", " '", "Ll", " '", "LL", " x", "'Re", " don", "'t"]]])";

void expect_package_pieces(const char* cases, size_t max_digits) {
  for (const json& c : json::parse(cases)) {
    const std::string text = c[0].get<std::string>();
    const std::u32string chars = decode_utf8(text);
    EXPECT_EQ(texts(chars, cl100k_split(chars, max_digits)), c[1].get<std::vector<std::string>>())
        << text;
  }
}

TEST(Cl100kSplit, PiecesAreThePackagesForLlama3AndQwen2) {
  expect_package_pieces(kPackagePieces3, 3);
  expect_package_pieces(kPackagePieces1, 1);
}

// The pattern in ECMAScript over ascii_classes(): (?i:...) spelled out per letter, \p{L} as
// [A-Za-z], \p{N} as [0-9].
Pieces regex_split(std::u32string_view text, size_t max_digits) {
  static const std::wstring head =
      L"'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\\r\\nA-Za-z0-9]?[A-Za-z]+|";
  static const std::wstring tail = L"| ?[^\\sA-Za-z0-9]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  static const std::wregex three(head + L"[0-9]{1,3}" + tail), one(head + L"[0-9]" + tail);
  const std::wregex& pattern = max_digits == 3 ? three : one;
  return regex_pieces(text, pattern);
}

TEST(Cl100kSplit, RandomStringsMatchTheRegex) {
  const std::u32string alphabet =
      U"abzAZSTRE09'srtevmld \t\n\r\v!?.,-_()\u00a0\u2003\u3000\u00e9\u00df\u03a3\u0436"
      U"\u4e2d\u3042\u0661\u00b2\u2167\u0301\u200b\ufeff\U0001F600\U0001F3FD\u0085\u0007";
  std::mt19937 rng(11);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1), length(0, 24);
  for (size_t digits : {3u, 1u})
    for (int i = 0; i < 3000; ++i) {
      std::u32string text;
      for (size_t n = length(rng); n; --n)
        text.push_back(alphabet[pick(rng)]);
      ASSERT_EQ(texts(text, cl100k_split(text, digits)), texts(text, regex_split(text, digits)))
          << encode_utf8(text) << " (digits " << digits << ")";
    }
}

TEST(Cl100kSplit, OnlyLlama3sAndQwen2sPatternsAreRecognised) {
  EXPECT_EQ(cl100k_digits(kLlama3Pattern), 3u);
  EXPECT_EQ(cl100k_digits(kQwen2Pattern), 1u);
  EXPECT_FALSE(cl100k_digits(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"));
  std::string plus(kLlama3Pattern);
  plus.replace(plus.find(R"(\p{N}{1,3})"), 10, R"(\p{N}+)");
  EXPECT_FALSE(cl100k_digits(plus));
  EXPECT_FALSE(cl100k_digits(std::string(kLlama3Pattern) + "|x"));
}

// [[input, NFC], ...] from the package's normalizers.NFC (and Python's unicodedata, which gave
// the same): composition through reordering, exclusions (U+0958), singletons (U+212B, U+2126),
// Hangul LV and LVT, a blocked mark, two-starter compositions (U+0B47 U+0B3E), a text that
// begins with a mark.
const char* const kPackageNfc = R"([
["e\u0301", "\u00e9"], ["\u0958", "\u0915\u093c"], ["a\u0323\u0302", "\u1ead"],
["a\u0302\u0323", "\u1ead"], ["\u1100\u1161\u11a8", "\uac01"], ["\uac00\u11a8", "\uac01"],
["\u212b", "\u00c5"], ["\u0301a", "\u0301a"], ["A\u030a\u0301", "\u01fa"],
["o\u0308\u0304", "\u022b"], ["\u0e40\u0e01", "\u0e40\u0e01"], ["\u1e9b\u0323", "\u1e9b\u0323"],
["\u00c5\u0327", "\u00c5\u0327"], ["A\u0300\u0316", "\u00c0\u0316"],
["\ud834\udd5e", "\ud834\udd57\ud834\udd65"], ["\u0b47\u0b3e", "\u0b4b"],
["\u09c7\u09be\u0301", "\u09cb\u0301"], ["n\u0303\u0303", "\u00f1\u0303"], ["\u2126", "\u03a9"],
["", ""], ["plain ASCII", "plain ASCII"]])";

TEST(UnicodeNormalize, NfcIsThePackages) {
  for (const json& c : json::parse(kPackageNfc)) {
    const std::string in = c[0].get<std::string>();
    EXPECT_EQ(encode_utf8(nfc(decode_utf8(in))), c[1].get<std::string>()) << in;
  }
}

// Qwen2's tokenizer.json form (NFC, Split with its pattern, ByteLevel without a split) over
// the 256 byte characters and one merge: the pieces are the pattern's, NFC applies before the
// split and to normalized added tokens, and decoding gives the normalized text back.
TEST(Cl100kSplit, TokenizerJsonOfQwen2sFormEncodes) {
  const testing::TempDir dir;
  json vocab = json::object();
  std::vector<std::string> byte_chars;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_unicode_map().to_char(static_cast<uint8_t>(b)));
    vocab[s] = b;
    byte_chars.push_back(s);
  }
  vocab["\xc4\xa0"
        "1"] = 256; // " 1" in byte characters: a space cannot join a number
  vocab["<|im_start|>"] = 257;
  json doc = {
      {"added_tokens",
       json::array({{{"id", 257}, {"content", "<|im_start|>"}, {"special", true}}})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", kQwen2Pattern}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"},
           {"add_prefix_space", false},
           {"trim_offsets", false},
           {"use_regex", false}}}}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"\xc4\xa0 1"})}}}};
  dir.write("t/tokenizer.json", doc.dump());
  const Tokenizer tok = Tokenizer::load(dir.path("t"));
  // "e" + combining acute is NFC "é" (C3 A9): two byte tokens; " 12" is " ", "1", "2" under
  // Qwen2's one-number pieces, so the merge " 1" never applies.
  const std::vector<TokenId> ids = tok.encode("<|im_start|>e\u0301 12");
  EXPECT_EQ(ids, (std::vector<TokenId>{257, 0xC3, 0xA9, 0x20, 0x31, 0x32}));
  EXPECT_EQ(tok.decode(ids, false), "<|im_start|>\u00e9 12");
  EXPECT_EQ(tok.encode("x 1"), (std::vector<TokenId>{0x78, 0x20, 0x31}));
  // Llama 3's pattern: " 1" is not a piece either (numbers stand alone), "12" is one.
  doc["normalizer"] = nullptr;
  doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = kLlama3Pattern;
  dir.write("l/tokenizer.json", doc.dump());
  const Tokenizer llama = Tokenizer::load(dir.path("l"));
  EXPECT_EQ(llama.encode("e\u0301"), (std::vector<TokenId>{0x65, 0xCC, 0x81}));
}

} // namespace
} // namespace mt::tok
