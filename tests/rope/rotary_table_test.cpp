// rope.RotaryTable against cos and sin computed in double: default and Llama-3 bases, offsets
// into the thousands (where a plain f32 angle would already be off by 1e-4), the width taken
// from the input when dim is 0, and bad fields refused with their values.
#include "rope_test_util.h"

namespace mt {
namespace {

using namespace rope_test;

void check_table(int64_t dim, double theta, int64_t offset, double tol) {
  SCOPED_TRACE("dim " + std::to_string(dim) + " theta " + std::to_string(theta) + " offset " +
               std::to_string(offset));
  const size_t B = 2, S = 9, half = static_cast<size_t>(dim / 2);
  json cfg = {
      {"kind", "rope.RotaryTable"}, {"dim", dim}, {"theta", theta}, {"position_offset", offset}};
  ModelRun run(cfg, std::vector<int64_t>{2, 9, 3});
  std::vector<Matrix> out = run_all(run, {input(B * S * 3)});
  ASSERT_EQ(out.size(), 2u);
  Rotary r{static_cast<size_t>(dim), false, theta, offset};
  Matrix cos(B * S * half), sin(B * S * half);
  for (size_t b = 0; b < B; ++b)
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < half; ++i) {
        cos[(b * S + s) * half + i] = std::cos(angle(r, static_cast<int64_t>(s), i));
        sin[(b * S + s) * half + i] = std::sin(angle(r, static_cast<int64_t>(s), i));
      }
  double ec = max_abs_error(out[0], cos), es = max_abs_error(out[1], sin);
  EXPECT_LE(ec, tol);
  EXPECT_LE(es, tol);
  std::printf("rope.RotaryTable dim %lld theta %g offset %lld: max |error| cos %.3g sin %.3g\n",
              static_cast<long long>(dim), theta, static_cast<long long>(offset), ec, es);
}

TEST(RotaryTable, MatchesDoublePrecisionCosAndSin) {
  check_table(16, 10000.0, 0, 1e-6);
  check_table(6, 10000.0, 0, 1e-6);
  check_table(128, 500000.0, 0, 1e-6);
}

TEST(RotaryTable, OffsetPositionsKeepTheirPrecision) {
  check_table(16, 10000.0, 37, 1e-6);
  check_table(128, 500000.0, 3000, 1e-6);
  check_table(64, 10000.0, 8000, 1e-6);
}

TEST(RotaryTable, WidthZeroIsTheInputsLastAxis) {
  ModelRun run({{"kind", "rope.RotaryTable"}, {"dim", 0}}, std::vector<int64_t>{1, 4, 10});
  std::vector<Matrix> out = run_all(run, {input(40)});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].size(), 4u * 5u);
  Rotary r{10, false, 10000.0, 0};
  EXPECT_NEAR(out[1][3 * 5 + 1], std::sin(angle(r, 3, 1)), 1e-6);
  EXPECT_NEAR(out[0][2 * 5 + 4], std::cos(angle(r, 2, 4)), 1e-6);
}

std::string build_error(const json& cfg, const std::vector<int64_t>& shape) {
  try {
    instantiate_model(host(), cfg, {te::placeholder(shape, DType::f32(), "x")});
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(RotaryTable, RefusesOddWidthsAndBadTheta) {
  EXPECT_NE(build_error({{"kind", "rope.RotaryTable"}, {"dim", 7}}, {1, 4, 3})
                .find("dim 7 must "
                      "be even"),
            std::string::npos);
  EXPECT_NE(build_error({{"kind", "rope.RotaryTable"}, {"dim", 0}}, {1, 4, 5})
                .find("rotary width 5 must be even"),
            std::string::npos);
  EXPECT_NE(build_error({{"kind", "rope.RotaryTable"}, {"dim", 8}, {"theta", -1.0}}, {1, 4, 3})
                .find("must be positive"),
            std::string::npos);
}

} // namespace
} // namespace mt
