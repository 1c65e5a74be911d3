// Pairs of sequences (tokenizer.h encode_pair): ids and type ids as Hugging Face's tokenizers
// gives them for each post-processor -- BERT's vocab.txt and BertProcessing ([CLS] A [SEP] B
// [SEP], B's part type 1), TemplateProcessing's "pair" with its type ids, RobertaProcessing
// (every type 0), none or ByteLevel (A then B, types 0 and 1), a Sequence around one of them --
// written out by hand from those definitions; a pair template that cannot be used refuses
// pairs by file and field, and single sequences still encode.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_error.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using json = nlohmann::json;
using testing::bpe_json;
using testing::TempDir;
using Ids = std::vector<TokenId>;
using Types = std::vector<uint32_t>;

Tokenizer bpe_with(const TempDir& dir, const json& post_processor) {
  json doc = bpe_json();
  doc["post_processor"] = post_processor;
  dir.write("t/tokenizer.json", doc.dump());
  return Tokenizer::load(dir.path("t"));
}

json special(const char* id, int type) {
  return {{"SpecialToken", {{"id", id}, {"type_id", type}}}};
}
json sequence(const char* id, int type) {
  return {{"Sequence", {{"id", id}, {"type_id", type}}}};
}
// Special tokens <|endoftext|> (3) and "b" (1) as the template's [CLS] and [SEP].
json template_with(const json& pair) {
  return {{"type", "TemplateProcessing"},
          {"single", json::array({special("C", 0), sequence("A", 0), special("S", 0)})},
          {"pair", pair},
          {"special_tokens",
           {{"C", {{"id", "C"}, {"ids", {3}}, {"tokens", {"<|endoftext|>"}}}},
            {"S", {{"id", "S"}, {"ids", {1}}, {"tokens", {"b"}}}}}}};
}

void expect_pair(const Encoding& got, const Ids& ids, const Types& types) {
  EXPECT_EQ(got.ids, ids);
  EXPECT_EQ(got.type_ids, types);
}

TEST(PairEncoding, VocabTxtIsBertsClsASepBSep) {
  const TempDir dir;
  dir.write("bert/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n");
  const Tokenizer tok = Tokenizer::load(dir.path("bert"));
  expect_pair(tok.encode_pair("Hello", "worlds", /*add_special_tokens=*/true),
              Ids{2, 4, 3, 5, 6, 3}, Types{0, 0, 0, 1, 1, 1});
  expect_pair(tok.encode_pair("Hello", "worlds"), Ids{4, 5, 6}, Types{0, 1, 1});
}

TEST(PairEncoding, TemplateProcessingsPairWithItsTypeIds) {
  const TempDir dir;
  const Tokenizer tok =
      bpe_with(dir, template_with(json::array({special("C", 0), sequence("A", 0), special("S", 0),
                                               sequence("B", 1), special("S", 1)})));
  expect_pair(tok.encode_pair("ab", "aab", true), Ids{3, 2, 1, 0, 2, 1}, Types{0, 0, 0, 1, 1, 1});
  // B before A, types as the template says.
  const Tokenizer swapped = bpe_with(
      dir, template_with(json::array({sequence("B", 0), special("S", 2), sequence("A", 1)})));
  expect_pair(swapped.encode_pair("ab", "a", true), Ids{0, 1, 2}, Types{0, 2, 1});
  // Without special tokens: A then B, types 0 and 1.
  expect_pair(tok.encode_pair("ab", "aab"), Ids{2, 0, 2}, Types{0, 1, 1});
}

TEST(PairEncoding, BertAndRobertaProcessing) {
  const TempDir dir;
  const Tokenizer bert =
      bpe_with(dir, {{"type", "BertProcessing"}, {"cls", {"<|endoftext|>", 3}}, {"sep", {"b", 1}}});
  expect_pair(bert.encode_pair("a", "ab", true), Ids{3, 0, 1, 2, 1}, Types{0, 0, 0, 1, 1});
  const Tokenizer roberta = bpe_with(
      dir, {{"type", "RobertaProcessing"}, {"cls", {"<|endoftext|>", 3}}, {"sep", {"b", 1}}});
  expect_pair(roberta.encode_pair("a", "ab", true), Ids{3, 0, 1, 1, 2, 1}, Types{0, 0, 0, 0, 0, 0});
  EXPECT_EQ(roberta.encode_pair("a", "ab").type_ids, (Types{0, 0})); // Roberta: always 0
}

TEST(PairEncoding, NoPostProcessorOrByteLevelOrASequenceAroundOne) {
  const TempDir dir;
  for (const json& none : {json(nullptr), json{{"type", "ByteLevel"}, {"trim_offsets", false}}}) {
    const Tokenizer tok = bpe_with(dir, none);
    expect_pair(tok.encode_pair("ab", "a", true), Ids{2, 0}, Types{0, 1});
  }
  const Tokenizer seq = bpe_with(
      dir,
      {{"type", "Sequence"},
       {"processors",
        json::array(
            {json{{"type", "ByteLevel"}, {"trim_offsets", false}},
             {{"type", "BertProcessing"}, {"cls", {"<|endoftext|>", 3}}, {"sep", {"b", 1}}}})}});
  expect_pair(seq.encode_pair("a", "a", true), Ids{3, 0, 1, 0, 1}, Types{0, 0, 0, 1, 1});
}

// What a pair template this cannot use does: the file loads, single sequences encode, a pair
// is refused naming the file and the field.
TEST(PairEncoding, AnUnusablePairTemplateRefusesPairsOnly) {
  const TempDir dir;
  for (const json& pair :
       {json::array(), json(nullptr), json::array({sequence("A", 0), sequence("A", 1)})}) {
    const Tokenizer tok = bpe_with(dir, template_with(pair));
    EXPECT_EQ(tok.encode("ab", true), (Ids{3, 2, 1}));
    try {
      tok.encode_pair("a", "b", true);
      ADD_FAILURE() << "encoded a pair with " << pair.dump();
    } catch (const TokenizerError& e) {
      EXPECT_EQ(e.path(), dir.path("t/tokenizer.json"));
      EXPECT_NE(std::string(e.what()).find("post_processor.pair"), std::string::npos) << e.what();
    }
  }
  // Two processors that add tokens, in a Sequence: single sequences as before, pairs refused.
  const json bert = {{"type", "BertProcessing"}, {"cls", {"<|endoftext|>", 3}}, {"sep", {"b", 1}}};
  const Tokenizer two =
      bpe_with(dir, {{"type", "Sequence"}, {"processors", json::array({bert, bert})}});
  EXPECT_EQ(two.encode("a", true), (Ids{3, 3, 0, 1, 1}));
  EXPECT_THROW(two.encode_pair("a", "a", true), TokenizerError);
}

} // namespace
} // namespace mt::tok
