// Tests of the SDK's structural expression equality (metatune/sdk/expr_equal.hpp): a deep copy
// of a random expression is equal to it, and changing any one node of the copy (a payload, the
// kind, the dtype) makes it unequal; variables and buffers are compared by id, not name.
#include "metatune/sdk/expr_equal.hpp"

#include <gtest/gtest.h>

#include "program_expr_gen.h"

namespace mt::test {
namespace {

// A copy sharing no node with `e`; `mutate` (if not null) rewrites the node it is given.
P::Expr deep_copy(const P::Expr& e, int* countdown = nullptr) {
  auto n = std::make_shared<P::ExprNode>(*e);
  for (P::Expr& a : n->args)
    a = deep_copy(a, countdown);
  if (countdown && (*countdown)-- == 0) {
    switch (n->kind) {
    case P::ExprKind::IntImm:
      n->int_value += 1;
      break;
    case P::ExprKind::FloatImm:
      n->float_value += 0.5;
      break;
    case P::ExprKind::Var:
      n->var_id += 100; // same name, another variable
      break;
    case P::ExprKind::Load: {
      auto other = std::make_shared<P::BufferNode>(*n->buffer);
      other->id += 1000; // same name and shape, another buffer
      n->buffer = other;
      break;
    }
    case P::ExprKind::Call:
      if (n->args.size() == 2) { // pow(a, b) -> exp(a)
        n->fn = P::MathFn::Exp;
        n->args.pop_back();
      } else {
        n->fn = n->fn == P::MathFn::Exp ? P::MathFn::Log : P::MathFn::Exp;
      }
      break;
    case P::ExprKind::Cast:
      n->dtype = n->dtype == P::DType::f32() ? P::DType::f16() : P::DType::f32();
      break;
    case P::ExprKind::Add:
      n->kind = P::ExprKind::Sub;
      break;
    default:
      n->kind = P::ExprKind::Add;
      if (n->args.size() != 2) n->args.resize(2, n->args.empty() ? P::Expr(1) : n->args[0]);
      break;
    }
  }
  return P::Expr(n);
}

int count_nodes(const P::Expr& e) {
  int n = 0;
  P::post_order_visit(e, [&](const P::Expr&) { ++n; });
  return n;
}

TEST(SdkExprEqual, CopyIsEqualAndEveryChangeIsSeen) {
  ExprGen gen(21);
  int changes = 0;
  for (int n = 0; n < 300; ++n) {
    P::Expr e = n % 2 ? gen.value(3) : gen.index(3);
    P::Expr copy = deep_copy(e);
    ASSERT_FALSE(copy.same_as(e));
    ASSERT_TRUE(P::expr_equal(e, copy)) << P::to_string(e);
    ASSERT_TRUE(P::expr_equal(copy, e));
    for (int k = 0, nodes = count_nodes(e); k < nodes; ++k) {
      int countdown = k;
      P::Expr changed = deep_copy(e, &countdown);
      ASSERT_FALSE(P::expr_equal(e, changed))
          << "node " << k << " of " << P::to_string(e) << " changed: " << P::to_string(changed);
      ASSERT_FALSE(P::expr_equal(changed, e));
      ++changes;
    }
  }
  EXPECT_GT(changes, 1000);
}

TEST(SdkExprEqual, VariablesAndBuffersByIdNotName) {
  P::Expr a = P::make_var("i", P::DType::i64(), 7), b = P::make_var("i", P::DType::i64(), 8);
  EXPECT_FALSE(P::expr_equal(a, b));
  EXPECT_TRUE(P::expr_equal(a + 1, P::make_var("renamed", P::DType::i64(), 7) + 1));
  P::Buffer x = P::make_buffer("X", P::DType::f32(), {4}, "global", 1);
  P::Buffer y = P::make_buffer("X", P::DType::f32(), {4}, "global", 2);
  EXPECT_FALSE(P::expr_equal(P::make_load(x, {a}), P::make_load(y, {a})));
  EXPECT_FALSE(P::expr_equal(P::int_imm(1), P::int_imm(1, P::DType::i32())));
  EXPECT_FALSE(P::expr_equal(P::Expr(), a));
  EXPECT_TRUE(P::expr_equal(P::Expr(), P::Expr()));
}

TEST(SdkExprEqual, IndexTuples) {
  ExprGen gen(22);
  std::vector<P::Expr> idx = {gen.vars[0] * 4 + gen.vars[1], gen.vars[2]};
  std::vector<P::Expr> same = {deep_copy(idx[0]), deep_copy(idx[1])};
  EXPECT_TRUE(P::exprs_equal(idx, same));
  EXPECT_FALSE(P::exprs_equal(idx, {same[0]}));
  EXPECT_FALSE(P::exprs_equal(idx, {same[1], same[0]}));
  EXPECT_TRUE(P::exprs_equal({}, {}));
}

} // namespace
} // namespace mt::test
