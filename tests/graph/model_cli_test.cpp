// `metatune model run` end to end on a small config tree: it instantiates, fuses, builds and
// runs the model and names the next token; a misspelt field fails with the file, the path and
// a did-you-mean, and a non-zero exit status.
#include <gtest/gtest.h>

#include <string>

#include "cli_run.h"

namespace {

using mt::graph_test::metatune;
using Result = mt::graph_test::CliResult;

const std::string kData = std::string(METATUNE_SOURCE_DIR) + "/tests/graph/data/";

TEST(ModelCli, RunsASmallDecoder) {
  Result r = metatune("model run --config " + kData + "tiny-gpt.json --seq 5 --repeats 1");
  EXPECT_EQ(r.status, 0) << r.output;
  // 2 embedding tables + 2 layers x 16 (2 norms, q/k/v and output projections, 2 linears,
  // each weight and bias) + the output norm's 2.
  EXPECT_NE(r.output.find("std.Decoder: 36 parameter tensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("latency"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("next token after the last position: "), std::string::npos) << r.output;
  // The same seed, the same weights, the same answer.
  Result again = metatune("model run --config " + kData + "tiny-gpt.json --seq 5 --repeats 1");
  auto token = [](const std::string& s) { return s.substr(s.find("next token")); };
  EXPECT_EQ(token(r.output), token(again.output));
}

TEST(ModelCli, MisspeltFieldIsNamedWithTheFile) {
  Result r = metatune("model run --config " + kData + "tiny-gpt-typo.json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("tiny-gpt-typo.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean 'num_heads'"), std::string::npos) << r.output;
}

} // namespace
