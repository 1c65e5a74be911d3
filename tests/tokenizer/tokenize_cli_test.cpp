// `metatune tokenize` (hosts/cli/cmd_tokenize.cpp) against the library it calls: one line of
// ids per input line (cut at "\n" only, "\r" kept), --json, --decode back to the text,
// --add-special-tokens, --pieces, and errors (exit 1, the file named) for a bad tokenizer
// folder, ill-formed UTF-8 and ids that are not numbers.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using json = nlohmann::json;
using testing::TempDir;

struct CliRun {
  int status;
  std::string out;
};

CliRun run(const std::string& args) {
  const std::string command = std::string(METATUNE_CLI) + " tokenize " + args + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, p)) > 0;)
    out.append(buffer, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  EXPECT_EQ(start, text.size()) << "output does not end with a newline";
  return lines;
}

std::string quote(const std::string& s) {
  return "'" + s + "'";
}

// A byte-level BPE over the ASCII bytes with a few merges and <|endoftext|>.
std::string write_bpe(const TempDir& dir) {
  json vocab = json::object();
  TokenId next = 0;
  // The printable ASCII bytes stand for themselves; space, tab, CR and LF are U+0120,
  // U+0109, U+010D and U+010A in GPT-2's byte characters.
  for (char c = '!'; c <= '~'; ++c)
    vocab[std::string(1, c)] = next++;
  for (const char* s : {"\u0120", "\u0109", "\u010a", "\u010d", "\u0120t", "he", "\u0120the"})
    vocab[s] = next++;
  vocab["<|endoftext|>"] = next++;
  const json doc = {
      {"added_tokens",
       json::array({{{"id", next - 1}, {"content", "<|endoftext|>"}, {"special", true}}})},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", json::array({"\u0120 t", "h e", "\u0120t he"})}}}};
  dir.write("bpe/tokenizer.json", doc.dump());
  return dir.path("bpe");
}

TEST(TokenizeCli, OneLineOfIdsPerInputLine) {
  const TempDir dir;
  const std::string bpe = write_bpe(dir);
  const Tokenizer tok = Tokenizer::load(bpe);
  const std::vector<std::string> input = {
      "the cat", "", "  two  spaces ", "tab\there", "cr\r", "<|endoftext|>the end", "x"};
  std::string text;
  for (const std::string& l : input)
    text += l + "\n";
  const std::string file = dir.write("in.txt", text);

  const CliRun plain = run("--tokenizer " + bpe + " --file " + file);
  ASSERT_EQ(plain.status, 0) << plain.out;
  const std::vector<std::string> got = lines_of(plain.out);
  ASSERT_EQ(got.size(), input.size());
  const CliRun as_json = run("--tokenizer " + bpe + " --file " + file + " --json");
  ASSERT_EQ(as_json.status, 0) << as_json.out;
  const std::vector<std::string> got_json = lines_of(as_json.out);
  ASSERT_EQ(got_json.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    const std::vector<TokenId> ids = tok.encode(input[i]);
    std::string spaced;
    for (size_t k = 0; k < ids.size(); ++k)
      spaced += (k ? " " : "") + std::to_string(ids[k]);
    EXPECT_EQ(got[i], spaced) << quote(input[i]);
    EXPECT_EQ(json::parse(got_json[i]).get<std::vector<TokenId>>(), ids) << quote(input[i]);
  }

  // --decode reads either form back; --json prints each text as a JSON string (it may hold
  // "\r" or special tokens), --keep-special-tokens keeps <|endoftext|>.
  const std::string ids_file = dir.write("ids.txt", as_json.out);
  const CliRun decoded =
      run("--tokenizer " + bpe + " --decode --json --keep-special-tokens --file " + ids_file);
  ASSERT_EQ(decoded.status, 0) << decoded.out;
  const std::vector<std::string> texts = lines_of(decoded.out);
  ASSERT_EQ(texts.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i)
    EXPECT_EQ(json::parse(texts[i]).get<std::string>(), input[i]);
  const std::string spaced_file = dir.write("spaced.txt", plain.out);
  const CliRun skipped = run("--tokenizer " + bpe + " --decode --file " + spaced_file);
  ASSERT_EQ(skipped.status, 0);
  EXPECT_NE(skipped.out.find("\nthe end\n"), std::string::npos) << skipped.out;

  // --pieces: the GPT-2 pieces in byte characters.
  const CliRun pieces = run("--tokenizer " + bpe + " --pieces --text " + quote("the  cat"));
  EXPECT_EQ(pieces.out, "[\"the\",\"\xc4\xa0\",\"\xc4\xa0"
                        "cat\"]\n");
}

TEST(TokenizeCli, TextOptionAndSpecialTokens) {
  const TempDir dir;
  dir.write("bert/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n##s\n");
  const Tokenizer tok = Tokenizer::load(dir.path("bert"));
  CliRun r = run("--tokenizer " + dir.path("bert") + " --text " + quote("Hellos world"));
  EXPECT_EQ(r.out, "4 5 1\n");
  r = run("--tokenizer " + dir.path("bert") + " --add-special-tokens --json --text " +
          quote("Hellos"));
  EXPECT_EQ(json::parse(r.out).get<std::vector<TokenId>>(), tok.encode("Hellos", true));
  r = run("--tokenizer " + dir.path("bert") + " --text ''");
  EXPECT_EQ(r.out, "\n"); // an empty text is one empty line of ids
  r = run("--tokenizer " + dir.path("bert") + " --info");
  EXPECT_EQ(r.out, "WordPiece from " + dir.path("bert/vocab.txt") + ", 6 tokens\n");
}

// --pair and --pair-file: each line with its second sequence, ids | type ids (or JSON), as the
// library's encode_pair gives them; line counts that differ are refused.
TEST(TokenizeCli, PairsGiveIdsAndTypeIds) {
  const TempDir dir;
  dir.write("bert/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n##s\n");
  const Tokenizer tok = Tokenizer::load(dir.path("bert"));
  const std::string bert = "--tokenizer " + dir.path("bert");
  CliRun r = run(bert + " --text hello --pair hellos --add-special-tokens");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "2 4 3 4 5 3 | 0 0 0 1 1 1\n");
  const std::string a = dir.write("a.txt", "hello\nhellos hello\n");
  const std::string b = dir.write("b.txt", "hellos\nhello\n");
  r = run(bert + " --file " + a + " --pair-file " + b + " --add-special-tokens --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u);
  const std::vector<std::pair<std::string, std::string>> texts = {{"hello", "hellos"},
                                                                  {"hellos hello", "hello"}};
  for (size_t i = 0; i < 2; ++i) {
    const Encoding e = tok.encode_pair(texts[i].first, texts[i].second, true);
    const json got = json::parse(lines[i]);
    EXPECT_EQ(got.at("ids").get<std::vector<TokenId>>(), e.ids) << lines[i];
    EXPECT_EQ(got.at("type_ids").get<std::vector<uint32_t>>(), e.type_ids) << lines[i];
  }
  const std::string one = dir.write("one.txt", "hello\n");
  r = run(bert + " --file " + a + " --pair-file " + one);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("2 input lines but 1 second sequences"), std::string::npos) << r.out;
}

TEST(TokenizeCli, ErrorsNameTheFile) {
  const TempDir dir;
  const std::string bpe = write_bpe(dir);
  CliRun r = run("--tokenizer " + dir.path("nowhere") + " --text x");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "metatune: error: " + dir.path("nowhere") + ": does not exist\n");
  const std::string bad = dir.write("bad.txt", "fine\nnot \xC3(\n");
  r = run("--tokenizer " + bpe + " --file " + bad);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "metatune: error: " + bad + ": line 2: ill-formed UTF-8 at byte 4\n");
  const std::string ids = dir.write("ids.txt", "1 2 x\n");
  r = run("--tokenizer " + bpe + " --decode --file " + ids);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "metatune: error: " + ids + ": line 1: not a token id: 'x'\n");
}

} // namespace
} // namespace mt::tok

namespace mt::tok {
namespace {

// --chat / --messages: the chat template's prompt (--render) and its ids, which are the
// tokenizer's ids of that text with no special tokens added (the template wrote them).
TEST(TokenizeCli, ChatRendersTheTemplateAndEncodesItsText) {
  const TempDir dir;
  const std::string bpe = write_bpe(dir);
  dir.write("bpe/tokenizer_config.json",
            json{{"eos_token", "<|endoftext|>"},
                 {"chat_template",
                  "{% for m in messages %}{{ m.role }}: {{ m.content | trim }}\n{% endfor %}"
                  "{% if add_generation_prompt %}assistant:{% endif %}{{ eos_token }}"}}
                .dump());
  const CliRun text = run("--tokenizer " + bpe + " --chat ' the cat ' --system sys --render");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_EQ(text.out, "system: sys\nuser: the cat\nassistant:<|endoftext|>");
  const Tokenizer tok = Tokenizer::load(bpe);
  const CliRun ids = run("--tokenizer " + bpe + " --chat ' the cat ' --system sys --json");
  ASSERT_EQ(ids.status, 0) << ids.out;
  EXPECT_EQ(ids.out, json(tok.encode(text.out)).dump() + "\n");
  EXPECT_EQ(json::parse(ids.out).back(), tok.token_to_id("<|endoftext|>").value());

  dir.write("conv.json", R"({"messages": [{"role": "user", "content": "a"},
                                          {"role": "assistant", "content": "b"}]})");
  const CliRun conv = run("--tokenizer " + bpe + " --messages " + dir.path("conv.json") +
                          " --render --no-generation-prompt");
  ASSERT_EQ(conv.status, 0) << conv.out;
  EXPECT_EQ(conv.out, "user: a\nassistant: b\n<|endoftext|>");

  dir.write("bad.json", R"({"messages": [{"content": "no role"}]})");
  const CliRun bad = run("--tokenizer " + bpe + " --messages " + dir.path("bad.json"));
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("bad.json: messages[0] has no \"role\""), std::string::npos) << bad.out;

  const CliRun from_file = run("--tokenizer " + dir.path("bpe/tokenizer.json") + " --chat x");
  EXPECT_EQ(from_file.status, 0) << from_file.out; // the file's folder has the template
  dir.write("plain/tokenizer.json", testing::bpe_json().dump());
  const CliRun missing = run("--tokenizer " + dir.path("plain") + " --chat x");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("has no chat template"), std::string::npos) << missing.out;
}

} // namespace
} // namespace mt::tok
