// Loading tokenizers (core/tokenizer/tokenizer.h): which file a folder gives, and every
// malformed or unsupported file refused with a TokenizerError whose message names the file and
// the field at fault.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_error.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using json = nlohmann::json;
using testing::bpe_json;
using testing::kLlama3Pattern;
using testing::TempDir;

// The message of the TokenizerError that loading `doc` (written as DIR/tokenizer.json) throws,
// and that it names the file first.
std::string load_error_text(const TempDir& dir, const std::string& text) {
  const std::string path = dir.write("t/tokenizer.json", text);
  try {
    Tokenizer::load(dir.path("t"));
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    EXPECT_EQ(e.path(), path);
    return e.what();
  }
  ADD_FAILURE() << "loaded: " << text;
  return "";
}

std::string load_error(const TempDir& dir, const json& doc) {
  return load_error_text(dir, doc.dump());
}

TEST(TokenizerLoad, AValidFileLoads) {
  const TempDir dir;
  dir.write("t/tokenizer.json", bpe_json().dump());
  const Tokenizer tok = Tokenizer::load(dir.path("t"));
  EXPECT_EQ(tok.encode("abab<|endoftext|>a"), (std::vector<TokenId>{2, 2, 3, 0}));
  EXPECT_EQ(tok.vocab_size(), 4u);
  // The file itself can be given too.
  EXPECT_EQ(Tokenizer::load(dir.path("t/tokenizer.json")).encode("ab"), std::vector<TokenId>{2});
}

TEST(TokenizerLoad, UnsupportedComponentsAreRefusedByName) {
  const TempDir dir;
  const std::string p = dir.path("t/tokenizer.json");
  json doc = bpe_json();
  doc["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_EQ(load_error(dir, doc),
            p + ": pre_tokenizer 'Whitespace' is not supported (supported: ByteLevel, or Sequence "
                "[Split, ByteLevel] as Llama 3 and Qwen2 write it, or Sequence [Digits, "
                "ByteLevel] as SmolLM and StarCoder do)");
  // A Metaspace pre-tokenizer makes it a SentencePiece BPE, whose decoders are others.
  doc["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  EXPECT_EQ(load_error(dir, doc),
            p + ": decoder 'ByteLevel' is not supported with a SentencePiece BPE (supported: "
                "Replace, ByteFallback, Fuse, Strip, Metaspace, a Sequence of them)");
  doc = bpe_json();
  doc["pre_tokenizer"] = nullptr;
  EXPECT_EQ(load_error(dir, doc),
            p + ": pre_tokenizer (none) is not supported (supported: ByteLevel, or Sequence "
                "[Split, ByteLevel] as Llama 3 and Qwen2 write it, or Sequence [Digits, "
                "ByteLevel] as SmolLM and StarCoder do)");
  doc = bpe_json();
  doc["normalizer"] = {{"type", "NFKC"}};
  EXPECT_EQ(
      load_error(dir, doc),
      p + ": normalizer 'NFKC' is not supported with a byte-level BPE (supported: none, NFC)");
  // Llama 3's pre-tokenizer with what differs from it.
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", false}};
  const auto sequence = [&](json split, json second) {
    json d = bpe_json();
    d["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {split, second}}};
    return d;
  };
  const json split = {{"type", "Split"},
                      {"pattern", {{"Regex", kLlama3Pattern}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  dir.write("ok/tokenizer.json", sequence(split, byte_level).dump());
  EXPECT_NO_THROW(Tokenizer::load(dir.path("ok")));
  json other = split;
  other["pattern"]["Regex"] = R"(\s+|\w+)";
  EXPECT_EQ(load_error(dir, sequence(other, byte_level)),
            p + R"(: pre_tokenizer.pretokenizers[0].pattern.Regex "\s+|\w+" is not supported )"
                "(Llama 3's and Qwen2's patterns)");
  other = split;
  other["behavior"] = "Removed";
  EXPECT_EQ(load_error(dir, sequence(other, byte_level)),
            p + ": pre_tokenizer.pretokenizers[0].behavior 'Removed' is not supported (Isolated)");
  other = split;
  other["pattern"] = {{"String", " "}};
  EXPECT_NE(load_error(dir, sequence(other, byte_level))
                .find("pre_tokenizer.pretokenizers[0].pattern {\"String\":\" \"} is not "
                      "supported (a Regex)"),
            std::string::npos);
  json regex_too = byte_level;
  regex_too["use_regex"] = true;
  EXPECT_EQ(load_error(dir, sequence(split, regex_too)),
            p + ": pre_tokenizer.pretokenizers[1].use_regex true after a Split is not supported "
                "(Llama 3 and Qwen2 set it false)");
  EXPECT_NE(load_error(dir, sequence(byte_level, split)).find("pre_tokenizer.pretokenizers"),
            std::string::npos);
  doc = bpe_json();
  doc["decoder"] = {{"type", "WordPiece"}};
  EXPECT_EQ(load_error(dir, doc),
            p + ": decoder 'WordPiece' is not supported (supported: ByteLevel)");
  doc["decoder"] = {{"type", "Metaspace"}};
  EXPECT_EQ(load_error(dir, doc), p + ": pre_tokenizer 'ByteLevel' is not supported with a "
                                      "SentencePiece BPE (supported: none, Metaspace, Split on a string)");
  doc = bpe_json();
  doc["model"]["type"] = "Unigram";
  EXPECT_EQ(load_error(dir, doc),
            p + ": model.type 'Unigram' is not supported (supported: BPE, WordPiece)");
  doc = bpe_json();
  doc["model"]["dropout"] = 0.1;
  EXPECT_EQ(load_error(dir, doc),
            p + ": model.dropout is set: BPE dropout is random, not supported");
  doc = bpe_json();
  doc["model"]["continuing_subword_prefix"] = "##";
  EXPECT_EQ(load_error(dir, doc),
            p + ": model.continuing_subword_prefix is set: not supported with a byte-level BPE");
  doc = bpe_json();
  doc["post_processor"] = {{"type", "Splitter"}};
  EXPECT_NE(load_error(dir, doc).find(": post_processor 'Splitter' is not supported"),
            std::string::npos);
}

TEST(TokenizerLoad, MalformedFilesNameTheField) {
  const TempDir dir;
  const std::string p = dir.path("t/tokenizer.json");
  json doc = bpe_json();
  doc["model"]["merges"] = json::array({"a b c"});
  EXPECT_EQ(load_error(dir, doc),
            p + ": model.merges[0] is not two tokens separated by one space: \"a b c\"");
  doc["model"]["merges"] = json::array({"a b", json::array({"a"})});
  EXPECT_EQ(load_error(dir, doc), p + ": model.merges[1] is neither \"a b\" nor [\"a\", \"b\"]");
  doc["model"]["merges"] = json::array({"a x"});
  EXPECT_EQ(load_error(dir, doc), p + ": model.merges[0] 'x' is not in model.vocab");
  doc["model"]["merges"] = json::array({"a b", "b a"});
  EXPECT_EQ(load_error(dir, doc), p + ": model.merges[1] merged 'ba' is not in model.vocab");
  doc = bpe_json();
  doc["model"]["vocab"]["c"] = "seven";
  EXPECT_EQ(load_error(dir, doc), p + ": model.vocab entry 'c' is not a token id");
  doc = bpe_json();
  doc["model"].erase("vocab");
  EXPECT_EQ(load_error(dir, doc), p + ": model.vocab is missing");
  doc = bpe_json();
  doc["added_tokens"][0].erase("id");
  EXPECT_EQ(load_error(dir, doc), p + ": added_tokens[0].id is missing");
  doc = bpe_json();
  doc["pre_tokenizer"]["add_prefix_space"] = "yes";
  EXPECT_EQ(load_error(dir, doc),
            p + ": pre_tokenizer.add_prefix_space is a string, not a boolean");
  doc = bpe_json();
  doc["model"]["unk_token"] = "<unk>";
  EXPECT_EQ(load_error(dir, doc), p + ": model.unk_token '<unk>' is not in model.vocab");
  EXPECT_EQ(load_error_text(dir, "{\"model\": ")
                .rfind(p + ": is not valid JSON: parse error at line 1", 0),
            0u);
  EXPECT_EQ(load_error_text(dir, "[1, 2]"), p + ": is not a JSON object");
  EXPECT_EQ(load_error(dir, json{{"version", "1.0"}}), p + ": model is missing");
}

TEST(TokenizerLoad, WordPieceFilesNameTheField) {
  const TempDir dir;
  const std::string p = dir.path("t/tokenizer.json");
  const json wordpiece = {{"normalizer", {{"type", "BertNormalizer"}}},
                          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                          {"decoder", {{"type", "WordPiece"}}},
                          {"model", {{"type", "WordPiece"}, {"vocab", {{"[UNK]", 0}, {"a", 1}}}}}};
  dir.write("t/tokenizer.json", wordpiece.dump());
  EXPECT_EQ(Tokenizer::load(dir.path("t")).encode("A a b"), (std::vector<TokenId>{1, 1, 0}));
  json doc = wordpiece;
  doc["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_EQ(load_error(dir, doc),
            p + ": pre_tokenizer 'Whitespace' is not supported (supported: BertPreTokenizer)");
  doc = wordpiece;
  doc["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_EQ(load_error(dir, doc),
            p + ": normalizer 'Lowercase' is not supported (supported: BertNormalizer)");
  doc = wordpiece;
  doc["normalizer"]["strip_accents"] = "no";
  EXPECT_EQ(load_error(dir, doc), p + ": normalizer.strip_accents is not a boolean or null");
  doc = wordpiece;
  doc["model"]["unk_token"] = "<unk>";
  EXPECT_EQ(load_error(dir, doc), p + ": model.unk_token '<unk>' is not in model.vocab");
}

TEST(TokenizerLoad, FoldersAndVocabTxt) {
  const TempDir dir;
  std::filesystem::create_directories(dir.path("empty"));
  try {
    Tokenizer::load(dir.path("empty"));
    ADD_FAILURE();
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()), dir.path("empty") + ": has no tokenizer.json or vocab.txt");
  }
  try {
    Tokenizer::load(dir.path("missing"));
    ADD_FAILURE();
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()), dir.path("missing") + ": does not exist");
  }
  const std::string no_unk = dir.write("v/vocab.txt", "a\nb\n");
  try {
    Tokenizer::load(dir.path("v"));
    ADD_FAILURE();
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()), no_unk + ": unk_token '[UNK]' is not in the vocabulary");
  }
  const std::string bad = dir.write("w/vocab.txt", "[UNK]\nok\nbad\xFF\n");
  try {
    Tokenizer::load(dir.path("w"));
    ADD_FAILURE();
  } catch (const TokenizerError& e) {
    EXPECT_EQ(std::string(e.what()), bad + ": line 3 has ill-formed UTF-8 at byte 3");
  }
  // Windows line ends and trailing spaces are not part of the tokens; ids are line numbers.
  dir.write("x/vocab.txt", "[UNK]\r\nhello \r\n##s\r\n[CLS]\n[SEP]\n");
  const Tokenizer tok = Tokenizer::load(dir.path("x"));
  EXPECT_EQ(tok.token_to_id("hello"), 1u);
  EXPECT_EQ(tok.encode("Hellos"), (std::vector<TokenId>{1, 2}));
  EXPECT_EQ(tok.encode("Hellos", true), (std::vector<TokenId>{3, 1, 2, 4}));
  EXPECT_EQ(tok.encode("[CLS]x"), (std::vector<TokenId>{3, 0}));
}

} // namespace
} // namespace mt::tok
