// rope.RotaryTable against cos and sin computed in double: default and Llama-3 bases, offsets
// into the thousands (where a plain f32 angle would already be off by 1e-4), linear and Llama
// 3.1 frequency scaling, the width taken from the input when dim is 0, and bad fields refused
// with their values.
#include "rope_test_util.h"

namespace mt {
namespace {

using namespace rope_test;

void check_table(int64_t dim, double theta, int64_t offset, double tol, json scaling = {},
                 Rotary r = {}) {
  SCOPED_TRACE("dim " + std::to_string(dim) + " theta " + std::to_string(theta) + " offset " +
               std::to_string(offset) + " scaling " + scaling.dump());
  const size_t B = 2, S = 9, half = static_cast<size_t>(dim / 2);
  json cfg = {
      {"kind", "rope.RotaryTable"}, {"dim", dim}, {"theta", theta}, {"position_offset", offset}};
  if (scaling.is_object()) cfg.update(scaling);
  ModelRun run(cfg, std::vector<int64_t>{2, 9, 3});
  std::vector<Matrix> out = run_all(run, {input(B * S * 3)});
  ASSERT_EQ(out.size(), 2u);
  r.rotary_dim = static_cast<size_t>(dim);
  r.theta = theta;
  r.offset = offset;
  Matrix cos(B * S * half), sin(B * S * half);
  for (size_t b = 0; b < B; ++b)
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < half; ++i) {
        cos[(b * S + s) * half + i] = r.amplitude * std::cos(angle(r, static_cast<int64_t>(s), i));
        sin[(b * S + s) * half + i] = r.amplitude * std::sin(angle(r, static_cast<int64_t>(s), i));
      }
  double ec = max_abs_error(out[0], cos), es = max_abs_error(out[1], sin);
  EXPECT_LE(ec, tol);
  EXPECT_LE(es, tol);
  std::printf("rope.RotaryTable dim %lld theta %g offset %lld: max |error| cos %.3g sin %.3g\n",
              static_cast<long long>(dim), theta, static_cast<long long>(offset), ec, es);
}

// The scaling of `scaled` (against the same base unscaled) keeps some frequency, divides some
// by `factor` and blends some between: every part of the rule is read by the table.
void expect_kept_divided_and_blended(const Rotary& scaled, double factor) {
  const Rotary plain{.rotary_dim = scaled.rotary_dim, .theta = scaled.theta};
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < scaled.rotary_dim / 2; ++i) {
    const double ratio = angle(plain, 1, i) / angle(scaled, 1, i);
    kept += std::abs(ratio - 1) < 1e-12;
    divided += std::abs(ratio - factor) < 1e-9;
    blended += ratio > 1 + 1e-9 && ratio < factor - 1e-9;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
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

// Linear scaling divides every frequency; Llama 3.1's (Llama 3.2 1B's fields: factor 32,
// original context 8192) keeps the fast ones, divides the slow ones and blends the band
// between -- with theta 500000 and width 64 all three kinds occur.
TEST(RotaryTable, ScaledFrequenciesMatchTheirDefinitions) {
  check_table(16, 10000.0, 40, 1e-6, {{"scaling", "linear"}, {"factor", 4.0}},
              Rotary{.linear_factor = 4.0});
  json llama3 = {{"scaling", "llama3"},
                 {"factor", 32.0},
                 {"low_freq_factor", 1.0},
                 {"high_freq_factor", 4.0},
                 {"original_max_positions", 8192}};
  check_table(64, 500000.0, 3000, 1e-6, llama3, Rotary{.llama3_factor = 32.0});
  // The band between: some frequency of the table is neither kept nor divided.
  Rotary scaled{.rotary_dim = 64, .theta = 500000.0, .llama3_factor = 32.0};
  expect_kept_divided_and_blended(scaled, 32.0);
  // A factor below 2 and an original context close to the positions: the smooth band is where
  // the table is read.
  check_table(32, 10000.0, 0, 1e-6,
              {{"scaling", "llama3"},
               {"factor", 1.5},
               {"low_freq_factor", 2.0},
               {"high_freq_factor", 8.0},
               {"original_max_positions", 64}},
              Rotary{.llama3_factor = 1.5, .low = 2.0, .high = 8.0, .original = 64});
}

// YaRN (Qwen2.5's and Qwen3's long-context setting, DeepSeek's): an original context of 64 and
// width 32 so that kept, divided and blended frequencies all occur, the attention factor
// derived (0.1 ln(factor) + 1), given, or from mscale / mscale_all_dim; the band's ends kept
// fractional (truncate false). LongRoPE (Phi-3.5, Phi-4): one divisor per frequency and
// sqrt(1 + ln(factor) / ln(original)) on cos and sin.
TEST(RotaryTable, YarnAndLongRopeMatchTheirDefinitions) {
  json yarn = {{"scaling", "yarn"}, {"factor", 4.0}, {"original_max_positions", 64}};
  Rotary y{.original = 64, .yarn_factor = 4.0, .amplitude = 0.1 * std::log(4.0) + 1};
  check_table(32, 10000.0, 5, 1e-6, yarn, y);
  Rotary scaled = y;
  scaled.rotary_dim = 32;
  expect_kept_divided_and_blended(scaled, 4.0);
  json loose = yarn;
  loose.update({{"truncate", false},
                {"beta_fast", 16.0},
                {"beta_slow", 2.0},
                {"mscale", 1.0},
                {"mscale_all_dim", 0.5}});
  Rotary yl = y;
  yl.truncate = false;
  yl.beta_fast = 16;
  yl.beta_slow = 2;
  yl.amplitude = (0.1 * std::log(4.0) + 1) / (0.05 * std::log(4.0) + 1);
  check_table(32, 10000.0, 0, 1e-6, loose, yl);
  json given = yarn;
  given["attention_factor"] = 0.75;
  Rotary yg = y;
  yg.amplitude = 0.75;
  check_table(32, 10000.0, 0, 1e-6, given, yg);

  std::vector<double> divisors;
  for (int i = 0; i < 16; ++i)
    divisors.push_back(1.0 + 0.37 * i);
  json longrope = {{"scaling", "longrope"},
                   {"factor", 32.0},
                   {"original_max_positions", 4096},
                   {"factors", divisors}};
  Rotary lr{.divisors = divisors, .amplitude = std::sqrt(1 + std::log(32.0) / std::log(4096.0))};
  check_table(32, 10000.0, 3000, 1e-6, longrope, lr);
  // The factors must match the width: refused with both counts.
  try {
    ModelRun run(
        {{"kind", "rope.RotaryTable"}, {"dim", 16}, {"scaling", "longrope"}, {"factors", divisors}},
        std::vector<int64_t>{1, 2, 3});
    FAIL() << "built";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("16 factors for 8 frequencies"), std::string::npos)
        << e.what();
  }
  EXPECT_ANY_THROW(ModelRun({{"kind", "rope.RotaryTable"}, {"scaling", "longrope"}},
                            std::vector<int64_t>{1, 2, 8}));
  EXPECT_ANY_THROW(ModelRun({{"kind", "rope.RotaryTable"}, {"scaling", "yarn"}, {"beta_slow", 0.0}},
                            std::vector<int64_t>{1, 2, 8}));
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
  EXPECT_NE(build_error({{"kind", "rope.RotaryTable"}, {"scaling", "ntk"}}, {1, 4, 4})
                .find("scaling 'ntk' (none, linear, llama3, yarn or longrope)"),
            std::string::npos);
  EXPECT_NE(
      build_error({{"kind", "rope.RotaryTable"}, {"scaling", "linear"}, {"factor", 0.5}}, {1, 4, 4})
          .find("factor 0.500000 must be at least 1"),
      std::string::npos);
  EXPECT_NE(build_error({{"kind", "rope.RotaryTable"},
                         {"scaling", "llama3"},
                         {"low_freq_factor", 4.0},
                         {"high_freq_factor", 4.0}},
                        {1, 4, 4})
                .find("low_freq_factor < high_freq_factor"),
            std::string::npos);
}

} // namespace
} // namespace mt
