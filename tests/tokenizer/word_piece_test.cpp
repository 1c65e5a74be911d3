// BERT WordPiece (core/tokenizer/word_piece.h) against a naive one written here: the BERT
// normalizer and pre-tokenizer over an alphabet whose Unicode facts (category, lowercase,
// canonical decomposition) are written out by hand below, special tokens split off first, and
// WordPiece as "the longest vocabulary entry from the left, by code points". The vocab.txt
// and tokenizer.json are written by the test; texts mix accents, CJK, Hangul, kana, emoji,
// control and format characters, Unicode spaces, punctuation and over-long words.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8_codec.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using json = nlohmann::json;
using testing::TempDir;

enum class Kind { Letter, Punctuation, Space, Control, Mark, Cjk, Other };

struct Fact {
  Kind kind;
  std::u32string nfd;   // empty: itself
  std::u32string lower; // empty: itself
};

// The non-ASCII characters of the test alphabet, from the Unicode Character Database.
const std::map<char32_t, Fact>& facts() {
  static const std::map<char32_t, Fact> f = {
      {0x00E9, {Kind::Letter, U"e\u0301", {}}},            // é
      {0x00C9, {Kind::Letter, U"E\u0301", U"\u00e9"}},     // É
      {0x00FC, {Kind::Letter, U"u\u0308", {}}},            // ü
      {0x00F1, {Kind::Letter, U"n\u0303", {}}},            // ñ
      {0x00C5, {Kind::Letter, U"A\u030a", U"\u00e5"}},     // Å
      {0x00DF, {Kind::Letter, {}, {}}},                    // ß
      {0x0130, {Kind::Letter, U"I\u0307", U"i\u0307"}},    // İ
      {0x03A3, {Kind::Letter, {}, U"\u03c3"}},             // Σ
      {0x03C3, {Kind::Letter, {}, {}}},                    // σ
      {0x03AC, {Kind::Letter, U"\u03b1\u0301", {}}},       // ά
      {0x03B1, {Kind::Letter, {}, {}}},                    // α
      {0x0391, {Kind::Letter, {}, U"\u03b1"}},             // Α
      {0x0416, {Kind::Letter, {}, U"\u0436"}},             // Ж
      {0x0436, {Kind::Letter, {}, {}}},                    // ж
      {0x4E2D, {Kind::Cjk, {}, {}}},                       // 中
      {0x6587, {Kind::Cjk, {}, {}}},                       // 文
      {0x5B57, {Kind::Cjk, {}, {}}},                       // 字
      {0x3072, {Kind::Letter, {}, {}}},                    // ひ (Hiragana: not padded)
      {0x3073, {Kind::Letter, U"\u3072\u3099", {}}},       // び: ひ + a non-spacing voicing mark
      {0xD55C, {Kind::Letter, U"\u1112\u1161\u11ab", {}}}, // 한: three jamo
      {0x1112, {Kind::Letter, {}, {}}},
      {0x1161, {Kind::Letter, {}, {}}},
      {0x11AB, {Kind::Letter, {}, {}}},
      {0x1F600, {Kind::Other, {}, {}}}, // 😀 (So)
      {0x0301, {Kind::Mark, {}, {}}},   // combining acute
      {0x0303, {Kind::Mark, {}, {}}},
      {0x0307, {Kind::Mark, {}, {}}},
      {0x0308, {Kind::Mark, {}, {}}},
      {0x030A, {Kind::Mark, {}, {}}},
      {0x3099, {Kind::Mark, {}, {}}},
      {0x00A0, {Kind::Space, {}, {}}},                 // NBSP
      {0x3000, {Kind::Space, {}, {}}},                 // ideographic space
      {0x2028, {Kind::Space, {}, {}}},                 // line separator
      {0x0007, {Kind::Control, {}, {}}},               // BEL (Cc)
      {0x001C, {Kind::Control, {}, {}}},               // Cc, though Python's isspace() says space
      {0x0085, {Kind::Control, {}, {}}},               // NEL: Cc (and White_Space; Cc wins)
      {0x200B, {Kind::Control, {}, {}}},               // zero width space (Cf)
      {0xFEFF, {Kind::Control, {}, {}}},               // BOM (Cf)
      {0x00AD, {Kind::Control, {}, {}}},               // soft hyphen (Cf)
      {0xE000, {Kind::Control, {}, {}}},               // private use (Co)
      {0xFFFD, {Kind::Control, {}, {}}},               // dropped by clean_text
      {0x00AB, {Kind::Punctuation, {}, {}}},           // « (Pi)
      {0x00BB, {Kind::Punctuation, {}, {}}},           // » (Pf)
      {0x2014, {Kind::Punctuation, {}, {}}},           // — (Pd)
      {0x3002, {Kind::Punctuation, {}, {}}},           // 。 (Po)
      {0x00BF, {Kind::Punctuation, {}, {}}},           // ¿ (Po)
      {0x20AC, {Kind::Other, {}, {}}},                 // € (Sc: not punctuation)
      {0x00B2, {Kind::Other, {}, {}}},                 // ² (No; compatibility only)
      {0xFB01, {Kind::Letter, {}, {}}},                // ﬁ (compatibility only)
      {0x212B, {Kind::Letter, U"A\u030a", U"\u00e5"}}, // ANGSTROM SIGN
      {0x212A, {Kind::Letter, U"K", U"k"}},            // KELVIN SIGN
      {0x2126, {Kind::Letter, U"\u03a9", U"\u03c9"}},  // OHM SIGN
      {0x03A9, {Kind::Letter, {}, U"\u03c9"}},
      {0x03C9, {Kind::Letter, {}, {}}},
      {0x00E5, {Kind::Letter, U"a\u030a", {}}},
  };
  return f;
}

const Fact& fact(char32_t c) {
  auto it = facts().find(c);
  if (it == facts().end())
    throw std::out_of_range("no fact for U+" + std::to_string(static_cast<uint32_t>(c)));
  return it->second;
}

Kind kind_of(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r' || c == U' ') return Kind::Space;
  if (c == 0) return Kind::Control;
  if (c < 0x80) {
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126))
      return Kind::Punctuation;
    if (c < 32 || c == 127) return Kind::Control;
    return Kind::Letter;
  }
  return fact(c).kind;
}

std::u32string decompose(char32_t c) {
  if (c < 0x80) return std::u32string(1, c);
  const Fact& f = fact(c);
  if (f.nfd.empty()) return std::u32string(1, c);
  std::u32string out;
  for (char32_t d : f.nfd)
    out += decompose(d);
  return out;
}

std::u32string lower(char32_t c) {
  if (c < 0x80) return std::u32string(1, c >= 'A' && c <= 'Z' ? c + 32 : c);
  const Fact& f = fact(c);
  return f.lower.empty() ? std::u32string(1, c) : f.lower;
}

struct Reference {
  std::map<std::string, TokenId> vocab;
  std::set<std::string> specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

  // BERT's normalizer then pre-tokenizer: the words.
  std::vector<std::u32string> words(const std::string& piece) const {
    std::u32string text;
    for (char32_t c : decode_utf8(piece)) {
      const Kind k = kind_of(c);
      if (k == Kind::Control) continue;
      if (k == Kind::Space) {
        text += U' ';
      } else if (k == Kind::Cjk) {
        text += U' ';
        text += c;
        text += U' ';
      } else {
        text += c;
      }
    }
    std::u32string stripped;
    for (char32_t c : text)
      for (char32_t d : decompose(c))
        if (d < 0x80 || fact(d).kind != Kind::Mark) stripped += d;
    std::u32string lowered;
    for (char32_t c : stripped)
      lowered += lower(c);
    std::vector<std::u32string> out;
    std::u32string word;
    for (char32_t c : lowered) {
      const Kind k = kind_of(c);
      if (k == Kind::Space || k == Kind::Punctuation) {
        if (!word.empty()) out.push_back(word);
        word.clear();
        if (k == Kind::Punctuation) out.push_back(std::u32string(1, c));
      } else {
        word += c;
      }
    }
    if (!word.empty()) out.push_back(word);
    return out;
  }

  std::vector<TokenId> word_piece(const std::u32string& word) const {
    const TokenId unk = vocab.at("[UNK]");
    if (word.size() > 100) return {unk};
    std::vector<TokenId> ids;
    for (size_t start = 0; start < word.size();) {
      size_t end = word.size();
      for (; end > start; --end) {
        const std::string candidate =
            (start ? "##" : "") + encode_utf8(word.substr(start, end - start));
        if (auto it = vocab.find(candidate); it != vocab.end()) {
          ids.push_back(it->second);
          break;
        }
      }
      if (end == start) return {unk};
      start = end;
    }
    return ids;
  }

  std::vector<TokenId> encode(const std::string& text) const {
    std::vector<TokenId> ids;
    auto piece = [&](const std::string& s) {
      for (const std::u32string& w : words(s))
        for (TokenId id : word_piece(w))
          ids.push_back(id);
    };
    size_t done = 0;
    for (size_t i = 0; i < text.size();) {
      std::string found;
      for (const std::string& s : specials)
        if (text.compare(i, s.size(), s) == 0 && s.size() > found.size()) found = s;
      if (found.empty()) {
        ++i;
        continue;
      }
      piece(text.substr(done, i - done));
      ids.push_back(vocab.at(found));
      i += found.size();
      done = i;
    }
    piece(text.substr(done));
    return ids;
  }
};

// Specials, whole words, prefixes and continuations that overlap (so that longest-first
// matters), and most single characters with and without "##" -- not z, ж or 😀 after the
// first character, so that some words have no split and become [UNK].
std::vector<std::string> vocab_lines() {
  std::vector<std::string> lines = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (const char* w : {"the",
                        "quick",
                        "brown",
                        "fox",
                        "un",
                        "unb",
                        "##believ",
                        "##believable",
                        "##able",
                        "##s",
                        "##es",
                        "cafe",
                        "caf",
                        "##e",
                        "uber",
                        "stra",
                        "##ße",
                        "token",
                        "##izer",
                        "##ize",
                        "##r",
                        "i",
                        "'",
                        "s",
                        "\u03c3\u03b1\u03c3",
                        "\u4e2d",
                        "\u6587",
                        "\u3072",
                        "\u1112\u1161",
                        "##\u11ab",
                        "ok",
                        "##k",
                        "ohm",
                        "\u03c9",
                        "\u20ac",
                        "\u00b2",
                        "\ufb01",
                        "\u00df",
                        "a",
                        "\u00e5ngstrom"})
    lines.push_back(w);
  for (char c = 'a'; c <= 'y'; ++c) {
    lines.push_back(std::string(1, c));
    lines.push_back("##" + std::string(1, c));
  }
  for (char c = '0'; c <= '9'; ++c)
    lines.push_back(std::string(1, c));
  for (const char* p : {".",      ",",      "!",      "?",      "$",      "^",          "`",
                        "~",      "|",      "+",      "<",      "=",      ">",          "(",
                        ")",      "-",      "\u00ab", "\u2014", "\u3002", "\u00bf",     "\u1112",
                        "\u1161", "\u11ab", "\u03b1", "\u03c3", "\u0436", "\U0001F600", "z"})
    lines.push_back(p);
  return lines;
}

std::vector<std::string> test_texts() {
  std::vector<std::string> texts = {
      "",
      " ",
      "\t\n",
      "The quick brown fox",
      "unbelievable UNBELIEVABLE unbelievables",
      "Caf\u00e9 \u00fcber Stra\u00dfe",
      "CAF\u00c9",
      "tokenizer tokenizers tokenize",
      "it's I'm he'd",
      "\u03a3\u0391\u03a3 \u03c3\u03ac\u03c3",
      "\u4e2d\u6587\u5b57",
      "\u4e2dx\u6587",
      "\u3072\u3073 \ud55c",
      "\U0001F600\U0001F600 x\U0001F600",
      "e\u0301 \u0301",
      "\u0130",
      "a\u0007b a\u200bb a\ufeffb a\u00adb a\ue000b a\ufffdb",
      "a\u001cb a\u0085b",
      "a\u00a0b a\u3000b a\u2028b",
      "\u00abquoted\u00bb\u2014dash\u3002 \u00bfque?",
      "$5 a^b `c` ~d| 1+2<3=4>5",
      "\u20ac100 x\u00b2 \ufb01ne",
      "\u212b\u212a\u2126",
      "[CLS] hello [SEP]",
      "[MASK][MASK]x",
      "a[UNK]b",
      "[cls] [Mask]",
      "[CLS",
      "  multiple   spaces  ",
      "\r\n\r",
      std::string("nul\0byte", 8),
      "zzz fox\u0436",
      std::string(100, 'a'),
      std::string(101, 'a'),
      std::string(99, 'b') + "\u00e9",
  };
  const std::vector<std::string> parts = {
      "the",    "The ",   "FOX",    " ",      "  ",     "\t",         "\n",     "\u00e9",
      "\u00c9", "\u00fc", ".",      ",",      "!?",     "'s",         "[CLS]",  "[SEP]",
      "[MASK]", "\u4e2d", "\u6587", "\u3073", "\ud55c", "\U0001F600", "\u0301", "\u00a0",
      "\u200b", "\u0007", "\u03a3", "\u0416", "\u212a", "un",         "believ", "able",
      "\u2014", "\u00ab", "$",      "z",      "42",     "\u20ac",     "\u0130", "\ufffd",
  };
  std::mt19937 rng(5);
  std::uniform_int_distribution<size_t> pick(0, parts.size() - 1), length(1, 14);
  for (int i = 0; i < 600; ++i) {
    std::string s;
    for (size_t n = length(rng); n; --n)
      s += parts[pick(rng)];
    texts.push_back(s);
  }
  return texts;
}

Reference reference() {
  Reference ref;
  const std::vector<std::string> lines = vocab_lines();
  for (size_t i = 0; i < lines.size(); ++i)
    ref.vocab[lines[i]] = static_cast<TokenId>(i);
  return ref;
}

std::string vocab_txt() {
  std::string text;
  for (const std::string& l : vocab_lines())
    text += l + "\n";
  return text;
}

// The same tokenizer as tokenizer.json, as the tokenizers package saves a BERT one.
std::string tokenizer_json(const Reference& ref) {
  json vocab = json::object();
  for (const auto& [t, id] : ref.vocab)
    vocab[t] = id;
  json added = json::array();
  for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
    added.push_back({{"id", ref.vocab.at(s)},
                     {"content", s},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  const json cls = {{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}};
  const json sep = {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}};
  const json a = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  return json{{"version", "1.0"},
              {"added_tokens", added},
              {"normalizer",
               {{"type", "BertNormalizer"},
                {"clean_text", true},
                {"handle_chinese_chars", true},
                {"strip_accents", nullptr},
                {"lowercase", true}}},
              {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
              {"post_processor",
               {{"type", "TemplateProcessing"},
                {"single", json::array({cls, a, sep})},
                {"pair", json::array()},
                {"special_tokens",
                 {{"[CLS]", {{"id", "[CLS]"}, {"ids", {ref.vocab.at("[CLS]")}}}},
                  {"[SEP]", {{"id", "[SEP]"}, {"ids", {ref.vocab.at("[SEP]")}}}}}}}},
              {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
              {"model",
               {{"type", "WordPiece"},
                {"unk_token", "[UNK]"},
                {"continuing_subword_prefix", "##"},
                {"max_input_chars_per_word", 100},
                {"vocab", vocab}}}}
      .dump(1);
}

TEST(WordPiece, VocabTxtMatchesTheNaiveWordPiece) {
  const TempDir dir;
  dir.write("bert/vocab.txt", vocab_txt());
  const Tokenizer tok = Tokenizer::load(dir.path("bert"));
  ASSERT_STREQ(tok.kind(), "WordPiece");
  const Reference ref = reference();
  for (const std::string& text : test_texts()) {
    const std::vector<TokenId> expected = ref.encode(text);
    EXPECT_EQ(tok.encode(text), expected) << "'" << text << "'";
    std::vector<TokenId> with = {ref.vocab.at("[CLS]")};
    with.insert(with.end(), expected.begin(), expected.end());
    with.push_back(ref.vocab.at("[SEP]"));
    EXPECT_EQ(tok.encode(text, /*add_special_tokens=*/true), with) << "'" << text << "'";
  }
}

TEST(WordPiece, TokenizerJsonMatchesTheNaiveWordPiece) {
  const TempDir dir;
  const Reference ref = reference();
  // Both files in the folder: tokenizer.json is the one read.
  dir.write("bert/vocab.txt", "[UNK]\n");
  dir.write("bert/tokenizer.json", tokenizer_json(ref));
  const Tokenizer tok = Tokenizer::load(dir.path("bert"));
  EXPECT_EQ(tok.source(), dir.path("bert/tokenizer.json"));
  EXPECT_EQ(tok.vocab_size(), ref.vocab.size());
  for (const std::string& text : test_texts()) {
    const std::vector<TokenId> expected = ref.encode(text);
    EXPECT_EQ(tok.encode(text), expected) << "'" << text << "'";
    std::vector<TokenId> with = {ref.vocab.at("[CLS]")};
    with.insert(with.end(), expected.begin(), expected.end());
    with.push_back(ref.vocab.at("[SEP]"));
    EXPECT_EQ(tok.encode(text, true), with);
  }
}

TEST(WordPiece, DecodeJoinsWordsAndContinuations) {
  const TempDir dir;
  dir.write("bert/vocab.txt", vocab_txt());
  const Tokenizer tok = Tokenizer::load(dir.path("bert"));
  // Lowercase words of the vocabulary, single spaces: decode gives the text back.
  for (const char* text : {"the quick brown fox", "unbelievable tokenizers", "cafe uber"})
    EXPECT_EQ(tok.decode(tok.encode(text, true)), text);
  // Special tokens are skipped unless asked for; the cleanup glues punctuation on.
  EXPECT_EQ(tok.decode(tok.encode("the fox, the fox.", true)), "the fox, the fox.");
  EXPECT_EQ(tok.decode(tok.encode("fox", true), /*skip_special_tokens=*/false), "[CLS] fox [SEP]");
}

} // namespace
} // namespace mt::tok
