// Tests of the SDK's index analyses (metatune/sdk/index_analysis.hpp), the ones llvm_cpu and
// onednn_cpu share: every answer is checked against evaluating the expression (a plain int64
// evaluator) on random or all points, on random expressions.
#include "metatune/sdk/index_analysis.hpp"

#include <gtest/gtest.h>

#include "program_expr_gen.h"

namespace mt::test {
namespace {

int64_t eval_form(const P::Affine& a, const std::map<int64_t, int64_t>& env) {
  int64_t v = a.constant;
  for (const auto& [var, c] : a.coef)
    v += c * env.at(var);
  return v;
}

TEST(SdkIndexAnalysis, AffineFormEqualsTheExpression) {
  ExprGen gen(11);
  int found = 0;
  for (int n = 0; n < 2000; ++n) {
    P::Expr e = n % 2 ? gen.index(4) : gen.affine(4);
    std::optional<P::Affine> a = P::affine(e);
    // What only adds, subtracts and scales by constants is always affine.
    if (n % 2 == 0) {
      ASSERT_TRUE(a.has_value()) << P::to_string(e);
    }
    if (!a) continue;
    ++found;
    for (const auto& [var, c] : a->coef)
      EXPECT_NE(c, 0) << "zero coefficient kept in " << P::to_string(e);
    for (int k = 0; k < 8; ++k) {
      auto env = gen.env(-4, 4);
      ASSERT_EQ(eval_form(*a, env), eval(e, env)) << P::to_string(e);
    }
  }
  EXPECT_GE(found, 1000);
}

TEST(SdkIndexAnalysis, AffineRejectsWhatIsNot) {
  ExprGen gen(1);
  P::Expr v = gen.vars[0], w = gen.vars[1];
  EXPECT_FALSE(P::affine(v * w));
  EXPECT_FALSE(P::affine(P::floordiv(v, P::int_imm(2))));
  EXPECT_FALSE(P::affine(P::make_load(gen.bufs[0], {v}) + v));
  EXPECT_FALSE(P::affine(P::min(v, w)));
}

// c = e(x with var + d) - e(x), divided by d, for every x: the stride along var.
TEST(SdkIndexAnalysis, CoefficientIsTheStrideAlongTheVariable) {
  ExprGen gen(12);
  int found = 0;
  for (int n = 0; n < 2000; ++n) {
    P::Expr e = gen.index(4);
    for (const P::Expr& var : gen.vars) {
      std::optional<int64_t> c = P::affine_coefficient(e, var->var_id);
      if (!P::uses_var(e, var->var_id)) {
        ASSERT_EQ(c, std::optional<int64_t>(0));
      }
      if (!c) continue;
      ++found;
      for (int k = 0; k < 6; ++k) {
        auto env = gen.env(-4, 4);
        int64_t base = eval(e, env);
        int64_t d = gen.pick(1, 3);
        env[var->var_id] += d;
        ASSERT_EQ(eval(e, env) - base, *c * d) << P::to_string(e) << " along " << var->name;
      }
    }
  }
  EXPECT_GT(found, 2000);
}

// The other terms may be anything that does not involve the variable.
TEST(SdkIndexAnalysis, CoefficientLooksPastTermsWithoutTheVariable) {
  ExprGen gen(13);
  for (int n = 0; n < 500; ++n) {
    P::Expr v = gen.vars[0];
    P::Expr rest = gen.index(3);
    // rest uses only v2 and v3 once v is substituted away: rebuild it from other variables.
    while (P::uses_var(rest, v->var_id))
      rest = gen.index(3);
    P::Expr e = gen.affine(3) + rest;
    std::optional<int64_t> c = P::affine_coefficient(e, v->var_id);
    ASSERT_TRUE(c.has_value()) << P::to_string(e);
    for (int k = 0; k < 4; ++k) {
      auto env = gen.env(-4, 4);
      int64_t base = eval(e, env);
      env[v->var_id] += 1;
      ASSERT_EQ(eval(e, env) - base, *c) << P::to_string(e);
    }
  }
  P::Expr v = gen.vars[0];
  EXPECT_FALSE(P::affine_coefficient(P::floordiv(v, P::int_imm(2)), v->var_id));
  EXPECT_FALSE(P::affine_coefficient(v * gen.vars[1], v->var_id));
  EXPECT_FALSE(P::affine_coefficient(P::make_load(gen.bufs[0], {v}), v->var_id));
}

// Every value the expression takes on the whole box of variable values lies in its bound.
TEST(SdkIndexAnalysis, BoundContainsEveryValue) {
  ExprGen gen(14);
  P::BoundMap box;
  box[1] = {0, 7};
  box[2] = {-3, 4};
  box[3] = {2, 5};
  int bounded = 0;
  for (int n = 0; n < 600; ++n) {
    P::Expr e = gen.index(3);
    P::Bound b = P::bound_of(e, box);
    ASSERT_LE(b.lo, b.hi) << P::to_string(e);
    if (b.lo > P::Bound::kNegInf && b.hi < P::Bound::kPosInf) ++bounded;
    for (int64_t x = 0; x <= 7; ++x)
      for (int64_t y = -3; y <= 4; ++y)
        for (int64_t z = 2; z <= 5; ++z) {
          int64_t value = eval(e, {{1, x}, {2, y}, {3, z}});
          ASSERT_GE(value, b.lo) << P::to_string(e) << " at " << x << "," << y << "," << z;
          ASSERT_LE(value, b.hi) << P::to_string(e) << " at " << x << "," << y << "," << z;
        }
  }
  EXPECT_GT(bounded, 100);
}

TEST(SdkIndexAnalysis, BoundSaturatesInsteadOfOverflowing) {
  P::Expr v = P::make_var("v", P::DType::i64(), 1);
  P::BoundMap huge;
  huge[1] = {-(int64_t{1} << 40), int64_t{1} << 40};
  P::Bound b = P::bound_of(v * v * v, huge);
  EXPECT_EQ(b.lo, P::Bound::kNegInf);
  EXPECT_EQ(b.hi, P::Bound::kPosInf);
  P::Bound small = P::bound_of(v * P::int_imm(3), huge);
  EXPECT_EQ(small.lo, -3 * (int64_t{1} << 40));
  EXPECT_EQ(small.hi, 3 * (int64_t{1} << 40));
}

// flat_index(buf, idx) == sum(idx[d] * prod(shape[d+1..])), computed here by plain loops.
TEST(SdkIndexAnalysis, FlatIndexIsRowMajor) {
  ExprGen gen(15);
  for (int n = 0; n < 300; ++n) {
    std::vector<int64_t> shape(static_cast<size_t>(gen.pick(1, 4)));
    for (int64_t& s : shape)
      s = gen.pick(1, 5);
    P::Buffer buf = P::make_buffer("T", P::DType::f32(), shape);
    std::vector<P::Expr> idx;
    for (size_t d = 0; d < shape.size(); ++d)
      idx.push_back(gen.pick(0, 2) ? gen.affine(2) : P::int_imm(gen.pick(0, 1)));
    P::Expr flat = P::flat_index(*buf, idx);
    std::vector<int64_t> strides = P::row_major_strides(shape);
    for (int k = 0; k < 4; ++k) {
      auto env = gen.env(-4, 4);
      int64_t expected = 0;
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t stride = 1;
        for (size_t j = d + 1; j < shape.size(); ++j)
          stride *= shape[j];
        ASSERT_EQ(strides[d], stride);
        expected += eval(idx[d], env) * stride;
      }
      ASSERT_EQ(eval(flat, env), expected) << P::to_string(flat);
    }
  }
}

// canonical_index(e) == e everywhere, on random index expressions with non-affine parts too.
TEST(SdkIndexAnalysis, CanonicalIndexEqualsTheExpression) {
  ExprGen gen(16);
  for (int n = 0; n < 2000; ++n) {
    P::Expr e = n % 2 ? gen.index(4) : gen.affine(4);
    P::Expr c = P::canonical_index(e);
    for (int k = 0; k < 8; ++k) {
      auto env = gen.env(-4, 4);
      ASSERT_EQ(eval(c, env), eval(e, env)) << P::to_string(e) << " -> " << P::to_string(c);
    }
  }
}

// What LLVM's alias analysis needs of the rows of a register tile: accesses that differ by a
// constant become "the same variable part + a constant", the constant outermost, whatever
// nesting the indices came with ((7 * x + k) * 8 + 112 * z for row k).
TEST(SdkIndexAnalysis, CanonicalIndexPutsTheConstantOutermost) {
  ExprGen gen(17);
  P::Expr x = gen.vars[0], z = gen.vars[1];
  P::Expr variable_part;
  for (int64_t k = 0; k < 7; ++k) {
    P::Expr row = (x * P::int_imm(7) + P::int_imm(k)) * P::int_imm(8) + z * P::int_imm(112);
    P::Expr c = P::canonical_index(row);
    int64_t offset = 0;
    P::Expr var_part = c;
    if (c->kind == P::ExprKind::Add && P::is_const_int(c->args[1], &offset)) var_part = c->args[0];
    EXPECT_EQ(offset, 8 * k) << P::to_string(c);
    ASSERT_FALSE(P::is_const_int(var_part));
    if (!variable_part) variable_part = var_part;
    EXPECT_EQ(P::to_string(var_part), P::to_string(variable_part));
    auto form = P::affine(var_part);
    ASSERT_TRUE(form.has_value());
    EXPECT_EQ(form->constant, 0);
    EXPECT_EQ(form->coef.at(x->var_id), 56);
    EXPECT_EQ(form->coef.at(z->var_id), 112);
  }
  // Terms that cancel disappear; a constant alone stays a constant.
  EXPECT_TRUE(P::is_const_int(P::canonical_index(x - x + P::int_imm(3))));
  // Non-affine parts are kept whole, with their multiplier.
  P::Expr q = P::floordiv(x, P::int_imm(3));
  P::Expr c = P::canonical_index((q + P::int_imm(1)) * P::int_imm(4));
  int64_t offset = 0;
  ASSERT_EQ(c->kind, P::ExprKind::Add);
  EXPECT_TRUE(P::is_const_int(c->args[1], &offset));
  EXPECT_EQ(offset, 4);
}

} // namespace
} // namespace mt::test
