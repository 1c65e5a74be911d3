// What onednn.cpu must not offer, and that structure, not names, decides: workloads oneDNN
// does not implement are rejected by onednn.Supported with a reason (no exception, no crash)
// and build() refuses them with MT_ERROR_UNSUPPORTED; a renamed program is still recognised,
// a program computing something else is not.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>

#include "core/ir/parser.h"
#include "core/ir/printer.h"
#include "core/workload/library.h"
#include "onednn_test_util.h"

namespace mt::onednn_test {
namespace {

void expect_not_offered(const Function& f) {
  std::string why;
  EXPECT_FALSE(offered(f, &why)) << f.name << " was offered";
  EXPECT_FALSE(why.empty());
  std::printf("  not offered: %s\n", why.c_str());
  try {
    target().build(f);
    ADD_FAILURE() << f.name << " was built";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.status(), MT_ERROR_UNSUPPORTED) << e.what();
  }
}

class NotOffered : public ::testing::TestWithParam<const char*> {};

TEST_P(NotOffered, RejectedWithoutError) {
  expect_not_offered(make_workload(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, NotOffered,
    ::testing::Values("capsule_conv2d(N=1,H=6,W=6,C=3,F=4,K=3,stride=2,padding=1,cap=2)",
                      "conv2d_transpose(N=1,C=4,H=5,W=5,F=3,KH=4,KW=4,stride=2,padding=1)",
                      "conv2d_transpose(N=1,C=2,H=5,W=4,F=3,KH=3,KW=3,stride=1,padding=1)",
                      "rmsnorm(M=8,N=32)"));

// An elementwise chain with a step oneDNN has no primitive or post-op for: x / (x + 1).
TEST(NotOfferedText, OddElementwiseChain) {
  expect_not_offered(parse_function(R"(func odd(x: f32[4, 5], y: f32[4, 5]) {
  for i in 4 {
    for j in 5 {
      block odd(vi: S[4] = i, vj: S[5] = j) {
        y[vi, vj] = x[vi, vj] / (x[vi, vj] + 1f32)
      }
    }
  }
})"));
}

// A scheduled (split) matmul is no longer the plain nest the recogniser knows.
TEST(NotOfferedText, ScheduledProgramIsNotOffered) {
  Function f = make_workload("matmul(M=8,N=8,K=8)");
  Schedule sch(f);
  auto blk = sch.get_block("matmul");
  auto loops = sch.get_loops(blk);
  sch.split(loops[0], {int64_t{2}, int64_t{4}});
  expect_not_offered(sch.func());
}

// Identifiers (buffers, blocks, loop and block vars, the function) replaced throughout.
std::string rename_all(std::string text,
                       const std::vector<std::pair<std::string, std::string>>& m) {
  for (const auto& [from, to] : m)
    text = std::regex_replace(text, std::regex("\\b" + from + "\\b"), to);
  return text;
}

TEST(Structure, RenamedMatmulIsStillRecognised) {
  std::string text = print(make_workload("matmul(M=12,N=10,K=7)"));
  std::string renamed = rename_all(text, {{"matmul", "zq"},
                                          {"A", "lhs"},
                                          {"B", "rhs"},
                                          {"vi", "aa"},
                                          {"vj", "bb"},
                                          {"vk", "cc"},
                                          {"i", "p"},
                                          {"j", "q"},
                                          {"k", "r"}});
  ASSERT_NE(renamed, text);
  ASSERT_EQ(renamed.find("matmul"), std::string::npos);
  Function f = parse_function(renamed);
  ASSERT_TRUE(offered(f));
  expect_matches_reference(f);
}

TEST(Structure, RenamedConvIsStillRecognised) {
  std::string text =
      print(make_workload("conv2d(N=1,C=4,H=8,W=8,F=6,KH=3,KW=3,stride=1,padding=1,bias=1,"
                          "relu=1)"));
  std::string renamed = rename_all(text, {{"conv2d", "mix"},
                                          {"pad", "border"},
                                          {"data", "img"},
                                          {"weight", "w"},
                                          {"bias_add", "shifted"},
                                          {"bias", "offset"},
                                          {"relu", "clip"}});
  ASSERT_EQ(renamed.find("conv"), std::string::npos);
  Function f = parse_function(renamed);
  ASSERT_TRUE(offered(f));
  expect_matches_reference(f);
}

TEST(Structure, ChangedBodyIsNotRecognised) {
  std::string text = print(make_workload("matmul(M=12,N=10,K=7)"));
  std::string sub = std::regex_replace(text, std::regex("A\\[vi, vk\\] \\* B"), "A[vi, vk] - B");
  ASSERT_NE(sub, text);
  expect_not_offered(parse_function(sub));
  // max-reduction of a product: not a matmul either.
  std::string mx =
      std::regex_replace(text, std::regex("matmul\\[vi, vj\\] = matmul\\[vi, vj\\] \\+ (.*)"),
                         "matmul[vi, vj] = max(matmul[vi, vj], $1)");
  ASSERT_NE(mx, text);
  expect_not_offered(parse_function(mx));
}

TEST(Structure, ChangedConvPaddingValueIsNotRecognised) {
  std::string text =
      print(make_workload("conv2d(N=1,C=2,H=6,W=6,F=2,KH=3,KW=3,stride=1,padding=1)"));
  std::string changed = std::regex_replace(text, std::regex(", 0f32\\)"), ", 1f32)");
  ASSERT_NE(changed, text);
  expect_not_offered(parse_function(changed));
}

} // namespace
} // namespace mt::onednn_test
