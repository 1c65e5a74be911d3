// python_lower() against Python 3.11's str.lower() (Unicode 14.0) on the same texts, pasted
// below as `[text, text.lower()]`: full lowercase mappings, and capital sigma at the end of a
// word -- after a letter, apostrophes, periods, marks and joiners skipped on both sides.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tokenizer/python_lower.h"

namespace mt::tok {
namespace {

const char* const kPythonLower = R"json([
["A man is eating food.", "a man is eating food."], 
["\u039f\u0394\u039f\u03a3", "\u03bf\u03b4\u03bf\u03c2"], ["\u03a3", "\u03c3"], 
["\u0391\u03a3\u0391", "\u03b1\u03c3\u03b1"], ["\u0391\u03a3.", "\u03b1\u03c2."], 
["\u0391\u03a3.\u0391", "\u03b1\u03c3.\u03b1"], ["\u0391\u03a3'\u0391", "\u03b1\u03c3'\u03b1"], 
["\u0391\u0301\u03a3", "\u03b1\u0301\u03c2"], ["\u0391\u03a3 \u0392", "\u03b1\u03c2 \u03b2"], 
["\u0130STANBUL", "i\u0307stanbul"], ["\u00c0\u00c9\u00ce \u01c5", "\u00e0\u00e9\u00ee \u01c6"], 
["1\u03a3", "1\u03c3"], ["\u0391\u03a3\u0301", "\u03b1\u03c2\u0301"], 
["\u0391\u03a3:\u0391", "\u03b1\u03c3:\u03b1"], ["\u0391\u03a3-\u0391", "\u03b1\u03c2-\u03b1"], 
["\u03a3\u0391\u03a3 \u03a3\u0391\u03a3.", "\u03c3\u03b1\u03c2 \u03c3\u03b1\u03c2."], 
["\u0391\u03a3\u200d\u0392", "\u03b1\u03c3\u200d\u03b2"], 
["\u01c4\u01c5\u01c6\u1e9e\u03a9", "\u01c6\u01c6\u01c6\u00df\u03c9"], 
["\u0391\u03a3\u0301\u0392", "\u03b1\u03c3\u0301\u03b2"], 
["Stra\u00dfe GRO\u1e9e", "stra\u00dfe gro\u00df"], ["\u0391\u03a3)", "\u03b1\u03c2)"], 
["\u0391\u03a3\u2019", "\u03b1\u03c2\u2019"], ["\u0130\u03a3", "i\u0307\u03c2"], 
["\ua640\u0416\u042f \u216b \u24d0\u24b6", "\ua641\u0436\u044f \u217b \u24d0\u24d0"], 
["x\ud801\udc00y", "x\ud801\udc28y"], ["", ""]
])json";

TEST(PythonLower, MatchesPythonsStrLower) {
  const nlohmann::json cases = nlohmann::json::parse(kPythonLower);
  ASSERT_GT(cases.size(), 20u);
  for (const nlohmann::json& c : cases) {
    const std::string text = c[0].get<std::string>();
    EXPECT_EQ(python_lower(text), c[1].get<std::string>()) << text;
  }
}

TEST(PythonLower, IllFormedTextIsRefusedWithItsOffset) {
  try {
    python_lower("ab\xC3(");
    FAIL() << "accepted ill-formed UTF-8";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at byte 2"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace mt::tok
