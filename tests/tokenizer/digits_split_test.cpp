// The Digits pre-tokenizer before ByteLevel (SmolLM's and StarCoder's tokenizer.json: numbers
// cut out, each alone or each run, then GPT-2's split of every stretch between them) against
// the pieces Hugging Face's tokenizers package (0.23.3) gives for the same texts
// (Sequence([Digits(individual_digits), ByteLevel(add_prefix_space=False, use_regex=True)])
// .pre_tokenize_str, pasted below), through a tokenizer.json of that form.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using json = nlohmann::json;

const char* const kPackagePieces = R"json({
"individual": [["abc123def 4567 x", ["abc", "1", "2", "3", "def", "\u0120", "4", "5", "6", "7", "\u0120x"]],
 [" 12 apples", ["\u0120", "1", "2", "\u0120apples"]],
 ["3.14159, 1,000", ["3", ".", "1", "4", "1", "5", "9", ",", "\u0120", "1", ",", "0", "0", "0"]],
 ["\u0663\u0664\u0665 \u00bd\u00bc \u216b", ["\u00d9\u00a3", "\u00d9\u00a4", "\u00d9\u00a5", "\u0120", "\u00c2\u00bd", "\u00c2\u00bc", "\u0120", "\u00e2\u0127\u00ab"]],
 ["a1b2", ["a", "1", "b", "2"]], ["  99  ", ["\u0120\u0120", "9", "9", "\u0120\u0120"]],
 ["I'm 2nd!", ["I", "'m", "\u0120", "2", "nd", "!"]], ["\n1\n", ["\u010a", "1", "\u010a"]], ["", []]],
"runs": [["abc123def 4567 x", ["abc", "123", "def", "\u0120", "4567", "\u0120x"]],
 [" 12 apples", ["\u0120", "12", "\u0120apples"]],
 ["3.14159, 1,000", ["3", ".", "14159", ",", "\u0120", "1", ",", "000"]],
 ["\u0663\u0664\u0665 \u00bd\u00bc \u216b", ["\u00d9\u00a3\u00d9\u00a4\u00d9\u00a5", "\u0120", "\u00c2\u00bd\u00c2\u00bc", "\u0120", "\u00e2\u0127\u00ab"]],
 ["a1b2", ["a", "1", "b", "2"]], ["  99  ", ["\u0120\u0120", "99", "\u0120\u0120"]],
 ["I'm 2nd!", ["I", "'m", "\u0120", "2", "nd", "!"]], ["\n1\n", ["\u010a", "1", "\u010a"]], ["", []]]})json";

TEST(DigitsSplit, PiecesAreThePackages) {
  const testing::TempDir dir;
  const json results = json::parse(kPackagePieces);
  for (const auto& [form, cases] : results.items()) {
    SCOPED_TRACE(form);
    json doc = testing::bpe_json();
    doc["pre_tokenizer"] = {{"type", "Sequence"},
                            {"pretokenizers",
                             {{{"type", "Digits"}, {"individual_digits", form == "individual"}},
                              {{"type", "ByteLevel"},
                               {"add_prefix_space", false},
                               {"trim_offsets", true},
                               {"use_regex", true}}}}};
    dir.write(form + "/tokenizer.json", doc.dump());
    const Tokenizer tok = Tokenizer::load(dir.path(form));
    for (const json& c : cases) {
      std::vector<std::string> got;
      for (const TextPiece& p : tok.pre_tokenize(c[0].get<std::string>()))
        got.push_back(p.text);
      EXPECT_EQ(got, c[1].get<std::vector<std::string>>()) << c[0].get<std::string>();
    }
  }
}

TEST(DigitsSplit, OnlyTheCheckpointsFormIsTaken) {
  const testing::TempDir dir;
  json doc = testing::bpe_json();
  doc["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Digits"}, {"individual_digits", true}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  dir.write("t/tokenizer.json", doc.dump());
  try {
    Tokenizer::load(dir.path("t"));
    ADD_FAILURE() << "loaded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("pre_tokenizer.pretokenizers[1].use_regex false after "
                                         "Digits is not supported"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace mt::tok
