// Math functions: the vectorised polynomial implementations against libm, scalar and vector.
#include <cmath>

#include <gtest/gtest.h>

#include "test_util.h"

namespace mt::llvm_cpu::test {
namespace {

struct MathCase {
  P::MathFn fn;
  double (*ref)(double);
  float lo, hi;
};

double ref_sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double ref_rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
double ref_exp(double x) {
  return std::exp(x);
}
double ref_log(double x) {
  return std::log(x);
}
double ref_tanh(double x) {
  return std::tanh(x);
}
double ref_erf(double x) {
  return std::erf(x);
}
double ref_sqrt(double x) {
  return std::sqrt(x);
}
double ref_abs(double x) {
  return std::fabs(x);
}

// Maximum relative error (with an absolute floor for results near 0) over n points.
double max_error(const std::vector<float>& x, const std::vector<float>& y, double (*ref)(double)) {
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double want = ref(static_cast<double>(x[i]));
    if (std::isinf(want)) {
      EXPECT_EQ(static_cast<double>(y[i]), want) << "at x=" << x[i];
      continue;
    }
    double err = std::fabs(y[i] - want) / std::max(std::fabs(want), 1e-30);
    if (std::fabs(want) < 1e-37) err = std::fabs(y[i] - want) * 1e37;
    worst = std::max(worst, err);
  }
  return worst;
}

P::Program unary_program(P::MathFn fn, int n, bool vectorized) {
  auto X = P::make_buffer("X", P::DType::f32(), {n});
  auto Y = P::make_buffer("Y", P::DType::f32(), {n});
  auto o = P::make_var("o"), v = P::make_var("v");
  auto idx = o * 16 + v;
  auto body =
      P::make_for(o, n / 16,
                  P::make_for(v, 16, P::make_store(Y, {idx}, P::call(fn, P::make_load(X, {idx}))),
                              vectorized ? P::ForKind::Vectorized : P::ForKind::Serial));
  return {std::string("math_") + P::to_string(fn), {X, Y}, body};
}

class LlvmMath : public ::testing::TestWithParam<MathCase> {};

TEST_P(LlvmMath, AccurateToAFewUlpScalarAndVector) {
  const MathCase& mc = GetParam();
  const int n = 1 << 14;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = mc.lo + (mc.hi - mc.lo) * static_cast<float>(i) / (n - 1);
  for (bool vec : {false, true}) {
    auto p = unary_program(mc.fn, n, vec);
    if (vec) {
      EXPECT_TRUE(ir_contains(p, "<16 x float>"));
    }
    std::vector<float> y(n);
    run(p, {x.data(), y.data()});
    double err = max_error(x, y, mc.ref);
    EXPECT_LT(err, 1e-6) << P::to_string(mc.fn) << (vec ? " vector" : " scalar");
  }
}

INSTANTIATE_TEST_SUITE_P(Functions, LlvmMath,
                         ::testing::Values(MathCase{P::MathFn::Exp, ref_exp, -100.f, 88.f},
                                           MathCase{P::MathFn::Exp, ref_exp, -5.f, 5.f},
                                           MathCase{P::MathFn::Log, ref_log, 1e-30f, 1e30f},
                                           MathCase{P::MathFn::Log, ref_log, 0.5f, 2.f},
                                           MathCase{P::MathFn::Tanh, ref_tanh, -12.f, 12.f},
                                           MathCase{P::MathFn::Tanh, ref_tanh, -0.7f, 0.7f},
                                           MathCase{P::MathFn::Erf, ref_erf, -5.f, 5.f},
                                           MathCase{P::MathFn::Erf, ref_erf, -1.2f, 1.2f},
                                           MathCase{P::MathFn::Sigmoid, ref_sigmoid, -30.f, 30.f},
                                           MathCase{P::MathFn::Sqrt, ref_sqrt, 0.f, 1000.f},
                                           MathCase{P::MathFn::Rsqrt, ref_rsqrt, 1e-3f, 1000.f},
                                           MathCase{P::MathFn::Abs, ref_abs, -3.f, 3.f}),
                         [](const auto& info) {
                           return std::string(P::to_string(info.param.fn)) + "_" +
                                  std::to_string(info.index);
                         });

TEST(LlvmMathSpecial, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.f,    -0.f, inf,   -inf,   nan,  1e-42f, -1.f, 89.f,
                          -104.f, 1.f,  100.f, -100.f, 20.f, -20.f,  6.f,  -6.f};
  auto check = [&](P::MathFn fn, double (*ref)(double)) {
    auto p = unary_program(fn, 16, true);
    std::vector<float> y(16);
    run(p, {x.data(), y.data()});
    for (int i = 0; i < 16; ++i) {
      double want = static_cast<float>(ref(x[i]));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << P::to_string(fn) << "(" << x[i] << ") = " << y[i];
      } else if (std::isinf(want)) {
        EXPECT_EQ(static_cast<double>(y[i]), want) << P::to_string(fn) << "(" << x[i] << ")";
      } else {
        EXPECT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-38)
            << P::to_string(fn) << "(" << x[i] << ")";
      }
    }
  };
  check(P::MathFn::Exp, ref_exp);
  check(P::MathFn::Log, ref_log);
  check(P::MathFn::Tanh, ref_tanh);
  check(P::MathFn::Erf, ref_erf);
}

TEST(LlvmMathSpecial, PowAndF64Functions) {
  // pow (f32, lane by lane through libm) and exp/erf in f64.
  auto X = P::make_buffer("X", P::DType::f32(), {8});
  auto Y = P::make_buffer("Y", P::DType::f32(), {8});
  auto D = P::make_buffer("D", P::DType::f64(), {8});
  auto E = P::make_buffer("E", P::DType::f64(), {8});
  auto v = P::make_var("v"), w = P::make_var("w");
  auto body =
      P::make_seq({P::make_for(v, 8, P::make_store(Y, {v}, P::pow(P::make_load(X, {v}), 2.5)),
                               P::ForKind::Vectorized),
                   P::make_for(w, 8,
                               P::make_store(E, {w},
                                             P::call(P::MathFn::Exp, P::make_load(D, {w})) +
                                                 P::call(P::MathFn::Erf, P::make_load(D, {w}))),
                               P::ForKind::Vectorized)});
  P::Program p{"powf64", {X, Y, D, E}, body};
  std::vector<float> x = random_floats(8, 30, 0.1f, 4.f), y(8);
  std::vector<double> d = {-3, -1, -0.5, 0, 0.25, 1, 2, 7}, e(8);
  run(p, {x.data(), y.data(), d.data(), e.data()});
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(y[i], std::pow(x[i], 2.5f), 1e-6 * std::pow(x[i], 2.5f));
    EXPECT_NEAR(e[i], std::exp(d[i]) + std::erf(d[i]), 1e-13 * (std::exp(d[i]) + 1));
  }
}

} // namespace
} // namespace mt::llvm_cpu::test
