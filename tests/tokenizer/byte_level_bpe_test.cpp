// The byte-level BPE (core/tokenizer/byte_level_bpe.h) against a naive one written here: GPT-2's
// bytes_to_unicode as its Python source writes it, the pieces of std::regex running the GPT-2
// pattern (gpt2_split_test.cpp's mapping), and BPE as "apply the lowest-rank merge, leftmost
// first, until none applies", over merges that a naive trainer in the test learns from a small
// corpus. The tokenizer.json files are written by the test; texts mix scripts, emoji,
// combining marks, whitespace runs, contractions and special tokens.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using json = nlohmann::json;
using testing::TempDir;

// GPT-2's bytes_to_unicode(), line by line.
std::map<int, std::string> bytes_to_unicode() {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b)
    bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b)
    bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b)
    bs.push_back(b);
  std::vector<int> cs = bs;
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
      bs.push_back(b);
      cs.push_back(256 + n++);
    }
  std::map<int, std::string> m;
  for (size_t i = 0; i < bs.size(); ++i) {
    std::string s;
    append_utf8(s, static_cast<char32_t>(cs[i]));
    m[bs[i]] = s;
  }
  return m;
}

// The GPT-2 pattern by std::regex over the characters mapped to ASCII of their class.
std::vector<std::string> regex_pieces(const std::string& text) {
  static const std::wregex pattern(
      L"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\\s A-Za-z0-9]+|\\s+(?!\\S)|\\s+");
  const std::u32string chars = decode_utf8(text);
  std::wstring mapped;
  for (char32_t c : chars)
    mapped.push_back(c < 0x80                         ? static_cast<wchar_t>(c)
                     : is_white_space(c)              ? L'\t'
                     : is_letter(general_category(c)) ? L'x'
                     : is_number(general_category(c)) ? L'7'
                                                      : L'#');
  std::vector<std::string> pieces;
  for (std::wsregex_iterator it(mapped.begin(), mapped.end(), pattern), end; it != end; ++it)
    pieces.push_back(encode_utf8(std::u32string_view(chars).substr(
        static_cast<size_t>(it->position()), static_cast<size_t>(it->length()))));
  return pieces;
}

// A piece as its byte characters, one string per byte.
std::vector<std::string> byte_symbols(const std::string& piece) {
  static const std::map<int, std::string> map = bytes_to_unicode();
  std::vector<std::string> symbols;
  for (unsigned char b : piece)
    symbols.push_back(map.at(b));
  return symbols;
}

using Merges = std::vector<std::pair<std::string, std::string>>;

// Naive BPE: repeatedly the lowest-rank pair present, leftmost occurrence, merged.
std::vector<std::string> naive_bpe(std::vector<std::string> symbols, const Merges& merges) {
  std::map<std::pair<std::string, std::string>, size_t> rank;
  for (size_t r = 0; r < merges.size(); ++r)
    rank.emplace(merges[r], r);
  for (;;) {
    size_t best = SIZE_MAX, at = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = rank.find({symbols[i], symbols[i + 1]});
      if (it != rank.end() && it->second < best) best = it->second, at = i;
    }
    if (best == SIZE_MAX) return symbols;
    symbols[at] += symbols[at + 1];
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
}

// Naive training: the most frequent adjacent pair over all pieces of `corpus`, `count` times.
Merges train(const std::vector<std::string>& corpus, size_t count) {
  std::vector<std::vector<std::string>> words;
  for (const std::string& line : corpus)
    for (const std::string& piece : regex_pieces(line))
      words.push_back(byte_symbols(piece));
  Merges merges;
  while (merges.size() < count) {
    std::map<std::pair<std::string, std::string>, int> freq;
    for (const auto& w : words)
      for (size_t i = 0; i + 1 < w.size(); ++i)
        ++freq[{w[i], w[i + 1]}];
    if (freq.empty()) break;
    auto best = freq.begin();
    for (auto it = freq.begin(); it != freq.end(); ++it)
      if (it->second > best->second) best = it;
    merges.push_back(best->first);
    for (auto& w : words)
      w = naive_bpe(w, {best->first});
  }
  return merges;
}

struct Reference {
  std::map<std::string, TokenId> vocab;
  Merges merges;
  std::map<std::string, TokenId> specials;

  std::vector<TokenId> encode(const std::string& text, bool add_prefix_space) const {
    std::vector<TokenId> ids;
    // Special tokens first (the longest at the leftmost position), then each piece between.
    size_t done = 0;
    auto piece = [&](const std::string& s) {
      if (s.empty()) return;
      const std::string p = add_prefix_space && s[0] != ' ' ? " " + s : s;
      for (const std::string& w : regex_pieces(p))
        for (const std::string& t : naive_bpe(byte_symbols(w), merges))
          ids.push_back(vocab.at(t));
    };
    for (size_t i = 0; i < text.size();) {
      std::string found;
      for (const auto& [s, id] : specials)
        if (text.compare(i, s.size(), s) == 0 && s.size() > found.size()) found = s;
      if (found.empty()) {
        ++i;
        continue;
      }
      piece(text.substr(done, i - done));
      ids.push_back(specials.at(found));
      i += found.size();
      done = i;
    }
    piece(text.substr(done));
    return ids;
  }
};

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> lines = {
      "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs.",
      "It's what they've said: we're here, you'll see, I'm sure he'd agree.",
      "Tokenizers turn text into tokens; tokens turn into ids, and ids into text again.",
      "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe \u00c5ngstr\u00f6m",
      "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0440\u0443\u0441\u0441\u043a\u0438\u0439 "
      "\u0442\u0435\u043a\u0441\u0442 \u4e2d\u6587\u5b57\u7b26 \u65e5\u672c\u8a9e",
      "emoji \U0001F600\U0001F389\U0001F44D\U0001F3FD and numbers 12345 3.14 1,000,000",
      "    def encode(self, text):\n        return [self.vocab[t] for t in text]",
      "\t\tindented\twith\ttabs   and   spaces  ",
  };
  return lines;
}

// Writes a tokenizer.json of the vocabulary: the 256 byte characters, the merged tokens, then
// <|endoftext|> as a special added token.
std::string write_tokenizer(const TempDir& dir, const Reference& ref, bool add_prefix_space,
                            const std::string& name) {
  json vocab = json::object();
  for (const auto& [t, id] : ref.vocab)
    vocab[t] = id;
  for (const auto& [t, id] : ref.specials)
    vocab[t] = id;
  json merges = json::array();
  for (size_t i = 0; i < ref.merges.size(); ++i) {
    // Both formats tokenizers writes: "a b" strings (older) and [a, b] pairs.
    if (i % 2)
      merges.push_back(ref.merges[i].first + " " + ref.merges[i].second);
    else
      merges.push_back(json::array({ref.merges[i].first, ref.merges[i].second}));
  }
  json added = json::array();
  for (const auto& [t, id] : ref.specials)
    added.push_back({{"id", id},
                     {"content", t},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  json doc = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"},
        {"add_prefix_space", add_prefix_space},
        {"trim_offsets", true},
        {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}, {"trim_offsets", false}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"vocab", vocab},
        {"merges", merges}}},
  };
  return dir.write(name + "/tokenizer.json", doc.dump(2));
}

Reference make_reference() {
  Reference ref;
  for (const auto& [b, s] : bytes_to_unicode())
    ref.vocab.emplace(s, ref.vocab.size());
  ref.merges = train(corpus(), 250); // about all this corpus has
  for (const auto& [a, b] : ref.merges)
    ref.vocab.emplace(a + b, ref.vocab.size());
  ref.specials["<|endoftext|>"] = static_cast<TokenId>(ref.vocab.size());
  return ref;
}

std::vector<std::string> test_texts() {
  std::vector<std::string> texts = corpus();
  const std::vector<std::string> edge = {
      "",
      " ",
      "  ",
      "\n",
      "  \n",
      "x  \n",
      "\t",
      "a\tb",
      "trailing   ",
      "   leading",
      "<|endoftext|>",
      "a<|endoftext|>b",
      "<|endoftext|><|endoftext|>",
      " <|endoftext|> ",
      "<|endoftext",
      "it's IT'S 'll '",
      "e\u0301 \u0301",
      "\U0001F468\u200D\U0001F469",
      "\u00a0\u3000 x",
      "\r\n\r",
      "unassigned \u0378\U000E0080",
      std::string("\0nul", 4),
      "ab\u00ad",
      "\u0085\u2028",
  };
  texts.insert(texts.end(), edge.begin(), edge.end());
  // Random strings over pieces of the corpus and the edge cases.
  const std::vector<std::string> parts = {
      "the", "The",           " fox",   "'s",     "'ve",        "  ",         " ",      "\t",  "\n",
      "\r",  "caf\u00e9",     "\u4e2d", "\u6587", "\U0001F600", "\U0001F3FD", "12",     "3.5", "!",
      "?!",  "<|endoftext|>", "\u0301", "\u00a0", "\u0394",     "\u0436",     "tokens", "ids", "x",
  };
  std::mt19937 rng(11);
  std::uniform_int_distribution<size_t> pick(0, parts.size() - 1), length(1, 12);
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (size_t n = length(rng); n; --n)
      s += parts[pick(rng)];
    texts.push_back(s);
  }
  return texts;
}

TEST(ByteLevelBpe, MatchesTheNaiveBpe) {
  const TempDir dir;
  const Reference ref = make_reference();
  ASSERT_EQ(ref.merges.size(), 250u);
  for (bool prefix : {false, true}) {
    const Tokenizer tok = Tokenizer::load(
        std::filesystem::path(write_tokenizer(dir, ref, prefix, prefix ? "p" : "n")).parent_path());
    ASSERT_STREQ(tok.kind(), "byte-level BPE");
    for (const std::string& text : test_texts())
      EXPECT_EQ(tok.encode(text), ref.encode(text, prefix))
          << "add_prefix_space " << prefix << ": '" << text << "'";
  }
}

TEST(ByteLevelBpe, DecodeGivesTheTextBack) {
  const TempDir dir;
  const Reference ref = make_reference();
  const Tokenizer tok =
      Tokenizer::load(std::filesystem::path(write_tokenizer(dir, ref, false, "n")).parent_path());
  const TokenId eot = ref.specials.at("<|endoftext|>");
  for (const std::string& text : test_texts()) {
    const std::vector<TokenId> ids = tok.encode(text);
    EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/false), text);
    // Skipping the special token removes exactly its text.
    std::string without = text;
    for (size_t at; (at = without.find("<|endoftext|>")) != std::string::npos;)
      without.erase(at, 13);
    EXPECT_EQ(tok.decode(ids), without);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), eot) > 0, without != text);
  }
  // Ids that cut a character in half decode to U+FFFD, as from_utf8_lossy does.
  const std::vector<TokenId> half = {ref.vocab.at(bytes_to_unicode().at(0xC3))};
  EXPECT_EQ(tok.decode(half), "\xEF\xBF\xBD");
}

TEST(ByteLevelBpe, VocabularyLookups) {
  const TempDir dir;
  const Reference ref = make_reference();
  const Tokenizer tok = Tokenizer::load(write_tokenizer(dir, ref, false, "n"));
  EXPECT_EQ(tok.vocab_size(), ref.vocab.size() + ref.specials.size());
  for (const auto& [t, id] : ref.vocab) {
    EXPECT_EQ(tok.token_to_id(t), id);
    EXPECT_EQ(tok.id_to_token(id), t);
  }
  EXPECT_EQ(tok.token_to_id("<|endoftext|>"), ref.specials.at("<|endoftext|>"));
  EXPECT_EQ(tok.token_to_id("not a token"), std::nullopt);
  EXPECT_EQ(tok.id_to_token(999999), std::nullopt);
  EXPECT_THROW(tok.encode("bad \xC3 utf-8"), std::invalid_argument);
}

// Equal ranks never happen, but overlapping pairs do: "aaa" with the merge (a, a) merges the
// leftmost pair first; a later merge of lower rank created by it wins over an older pair.
TEST(ByteLevelBpe, MergeOrderOnOverlappingPairs) {
  const TempDir dir;
  Reference ref;
  for (const auto& [b, s] : bytes_to_unicode())
    ref.vocab.emplace(s, ref.vocab.size());
  ref.merges = {{"a", "a"}, {"b", "c"}, {"aa", "b"}, {"c", "d"}, {"a", "b"}};
  for (const auto& [a, b] : ref.merges)
    ref.vocab.emplace(a + b, ref.vocab.size());
  const Tokenizer tok = Tokenizer::load(write_tokenizer(dir, ref, false, "m"));
  for (const char* text : {"aaa", "aaaa", "aaab", "aabcd", "abcd", "aaabcd", "bcbc", "ab"})
    EXPECT_EQ(tok.encode(text), ref.encode(text, false)) << text;
}

} // namespace
} // namespace mt::tok
