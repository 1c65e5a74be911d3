// The SDK's program tree (sdk/include/metatune/sdk/program.hpp): constructors, type coercion of
// literals, queries and printing.
#include <gtest/gtest.h>

#include "metatune/sdk/program.hpp"

namespace mt::sdk::program {
namespace {

TEST(SdkProgram, LiteralsTakeTheTypeOfTheOtherOperand) {
  auto A = make_buffer("A", DType::f16(), {4});
  auto i = make_var("i");
  Expr e = make_load(A, {i}) * 2;
  EXPECT_EQ(e->dtype, DType::f16());
  EXPECT_EQ(e->args[1]->kind, ExprKind::FloatImm);
  EXPECT_EQ(e->args[1]->float_value, 2.0);
  EXPECT_EQ((i < 3)->dtype, DType::boolean());
  EXPECT_EQ((i / 2)->kind, ExprKind::FloorDiv); // integer division is floor division
  EXPECT_THROW(make_load(A, {i}) + make_var("x", DType::i32()), std::invalid_argument);
  EXPECT_THROW(make_load(A, {i, i}), std::invalid_argument);
  EXPECT_THROW(make_call(MathFn::Pow, {make_load(A, {i})}), std::invalid_argument);
}

TEST(SdkProgram, VariablesAndBuffersHaveUniqueIds) {
  auto a = make_var("x"), b = make_var("x");
  EXPECT_NE(a->var_id, b->var_id);
  EXPECT_EQ(make_var("y", DType::index(), 42)->var_id, 42);
  EXPECT_NE(make_buffer("B", DType::f32(), {1})->id, make_buffer("B", DType::f32(), {1})->id);
  EXPECT_TRUE(uses_var(a * 2 + b, b->var_id));
  EXPECT_FALSE(uses_var(a * 2, b->var_id));
}

TEST(SdkProgram, SeqFlattensAndOutputMaskAndFreeBuffers) {
  auto X = make_buffer("X", DType::f32(), {8});
  auto Y = make_buffer("Y", DType::f32(), {8});
  auto T = make_buffer("T", DType::f32(), {8}, "local");
  auto U = make_buffer("U", DType::f32(), {8});
  auto i = make_var("i"), j = make_var("j");
  Stmt inner = make_seq({make_store(T, {i}, make_load(X, {i})), nullptr});
  EXPECT_EQ(inner->kind, StmtKind::Store); // a single statement is unwrapped
  Stmt body = make_seq(
      {make_allocate(T, make_for(i, 8, make_seq({inner, make_store(U, {i}, make_load(T, {i}))}))),
       make_seq({make_for(j, 8, make_store(Y, {j}, make_load(U, {j}) + 1.0))})});
  EXPECT_EQ(body->stmts.size(), 2u);
  Program p{"f", {X, Y}, body};
  EXPECT_EQ(output_mask(p), (std::vector<bool>{false, true}));
  auto free = free_buffers(p);
  ASSERT_EQ(free.size(), 1u);
  EXPECT_EQ(free[0]->name, "U");
  Program q = with_free_buffers_allocated(p);
  EXPECT_TRUE(free_buffers(q).empty());
  EXPECT_EQ(q.body->kind, StmtKind::Allocate);
  std::string text = to_string(q);
  EXPECT_NE(text.find("def f(X: f32[8], Y: f32[8]):"), std::string::npos) << text;
  EXPECT_NE(text.find("allocate T: f32[8] local"), std::string::npos) << text;
  EXPECT_NE(text.find("Y[j] = (U[j] + 1)"), std::string::npos) << text;
}

} // namespace
} // namespace mt::sdk::program
