// Tests of the one IR vocabulary (plugin_api/metatune/plugin_api/ir_vocabulary.h): the values
// released with ABI 1.0 stay what they were, the lists used as ranges have no gaps, and core,
// the SDK and the C helpers agree on every member's value and name, and on element types
// crossing the ABI in both directions.
#include "metatune/plugin_api/ir_vocabulary.h"

#include <gtest/gtest.h>

#include <string>

#include "core/ir/dtype.h"
#include "core/ir/expr.h"
#include "core/ir/printer.h"
#include "core/ir/stmt.h"
#include "core/plugin/host_handles.h"
#include "core/workload/te.h"
#include "metatune/sdk/ir.hpp"

namespace mt {
namespace {

namespace S = mt::sdk;

// ---- ABI 1.0: frozen (a plugin built then must read the same numbers) --------------------------
static_assert(MT_DTYPE_INT == 0 && MT_DTYPE_UINT == 1 && MT_DTYPE_FLOAT == 2 &&
              MT_DTYPE_BFLOAT == 4 && MT_DTYPE_BOOL == 6); // DLPack's codes
static_assert(MT_STMT_FOR == 0 && MT_STMT_SEQ == 1 && MT_STMT_STORE == 2 &&
              MT_STMT_IF_THEN_ELSE == 3 && MT_STMT_BLOCK_REALIZE == 4 && MT_STMT_ALLOCATE == 5);
static_assert(MT_EXPR_INT_IMM == 0 && MT_EXPR_FLOAT_IMM == 1 && MT_EXPR_VAR == 2 &&
              MT_EXPR_ADD == 3 && MT_EXPR_SUB == 4 && MT_EXPR_MUL == 5 && MT_EXPR_DIV == 6 &&
              MT_EXPR_FLOOR_DIV == 7 && MT_EXPR_FLOOR_MOD == 8 && MT_EXPR_MIN == 9 &&
              MT_EXPR_MAX == 10 && MT_EXPR_EQ == 11 && MT_EXPR_NE == 12 && MT_EXPR_LT == 13 &&
              MT_EXPR_LE == 14 && MT_EXPR_GT == 15 && MT_EXPR_GE == 16 && MT_EXPR_AND == 17 &&
              MT_EXPR_OR == 18 && MT_EXPR_NOT == 19 && MT_EXPR_SELECT == 20 && MT_EXPR_CAST == 21 &&
              MT_EXPR_LOAD == 22 && MT_EXPR_CALL == 23);
static_assert(MT_MATH_EXP == 0 && MT_MATH_LOG == 1 && MT_MATH_TANH == 2 && MT_MATH_ERF == 3 &&
              MT_MATH_SQRT == 4 && MT_MATH_RSQRT == 5 && MT_MATH_POW == 6 && MT_MATH_ABS == 7 &&
              MT_MATH_SIGMOID == 8);
static_assert(MT_FOR_SERIAL == 0 && MT_FOR_PARALLEL == 1 && MT_FOR_VECTORIZED == 2 &&
              MT_FOR_UNROLLED == 3 && MT_FOR_THREAD_BINDING == 4);
static_assert(MT_ITER_SPATIAL == 0 && MT_ITER_REDUCE == 1);
static_assert(MT_REDUCE_SUM == 0 && MT_REDUCE_MAX == 1 && MT_REDUCE_MIN == 2);

// ---- every member: core, SDK and C agree -------------------------------------------------------
struct Member {
  int position;
  int value;
  const char* text;
};

// The members of a list, numbered by position.
#define MT_TEST_ROW_(name, cpp, value, text) {0, value, text},
#define MT_TEST_ROWS(LIST) numbered({LIST(MT_TEST_ROW_)})
std::vector<Member> numbered(std::vector<Member> rows) {
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i].position = static_cast<int>(i);
  return rows;
}

// `names(m)`: what core and the SDK call member m (the sides that name it).
template <typename Names>
void expect_names_agree(const std::vector<Member>& rows, const char* (*c_text)(int32_t),
                        Names names) {
  for (const Member& m : rows) {
    SCOPED_TRACE(m.text);
    EXPECT_STREQ(c_text(m.value), m.text);
    for (const std::string& name : names(m))
      EXPECT_EQ(name, m.text);
  }
  EXPECT_EQ(c_text(1000), nullptr);
  EXPECT_EQ(c_text(-1), nullptr);
}

using Names = std::vector<std::string>;

TEST(IrVocabulary, NamesAgreeEverywhere) {
  expect_names_agree(MT_TEST_ROWS(MT_EXPR_KINDS), mt_expr_kind_text, [](const Member& m) {
    return Names{to_string(ExprKind(m.value)), S::program::to_string(S::ExprKind(m.value))};
  });
  expect_names_agree(MT_TEST_ROWS(MT_MATH_FNS), mt_math_fn_text, [](const Member& m) {
    return Names{to_string(MathFn(m.value)), S::program::to_string(S::MathFn(m.value))};
  });
  expect_names_agree(MT_TEST_ROWS(MT_FOR_KINDS), mt_for_kind_text, [](const Member& m) {
    return Names{to_string(ForKind(m.value)), S::program::to_string(S::ForKind(m.value))};
  });
  expect_names_agree(MT_TEST_ROWS(MT_ITER_KINDS), mt_iter_kind_text,
                     [](const Member& m) { return Names{to_string(IterKind(m.value))}; });
  expect_names_agree(MT_TEST_ROWS(MT_REDUCE_KINDS), mt_reduce_kind_text,
                     [](const Member& m) { return Names{te::to_string(te::ReduceKind(m.value))}; });
  expect_names_agree(MT_TEST_ROWS(MT_STMT_KINDS), mt_stmt_kind_text,
                     [](const Member&) { return Names{}; });
  // Element-type kinds are numbered by position on both sides, not by the ABI's code.
  expect_names_agree(MT_TEST_ROWS(MT_DTYPE_KINDS), mt_dtype_code_text, [](const Member& m) {
    return Names{to_string(DTypeKind(m.position)), S::program::to_string(S::DTypeKind(m.position))};
  });
}

// Core and the SDK check ranges (is_binary, "a known kind") and loop over these lists by value.
TEST(IrVocabulary, ListsUsedAsRangesHaveNoGaps) {
  for (const auto& rows :
       {MT_TEST_ROWS(MT_EXPR_KINDS), MT_TEST_ROWS(MT_MATH_FNS), MT_TEST_ROWS(MT_FOR_KINDS),
        MT_TEST_ROWS(MT_ITER_KINDS), MT_TEST_ROWS(MT_REDUCE_KINDS), MT_TEST_ROWS(MT_STMT_KINDS)})
    for (const Member& m : rows)
      EXPECT_EQ(m.value, m.position) << m.text;
}

#define MT_TEST_SAME_VALUE_(core_enum, sdk_enum, c_prefix)                                         \
  static_assert(static_cast<int>(core_enum) == c_prefix && static_cast<int>(sdk_enum) == c_prefix);
#define MT_TEST_EXPR_(name, cpp, value, text)                                                      \
  MT_TEST_SAME_VALUE_(ExprKind::cpp, S::ExprKind::cpp, MT_EXPR_##name)
#define MT_TEST_MATH_(name, cpp, value, text)                                                      \
  MT_TEST_SAME_VALUE_(MathFn::cpp, S::MathFn::cpp, MT_MATH_##name)
#define MT_TEST_FOR_(name, cpp, value, text)                                                       \
  MT_TEST_SAME_VALUE_(ForKind::cpp, S::ForKind::cpp, MT_FOR_##name)
#define MT_TEST_STMT_(name, cpp, value, text)                                                      \
  MT_TEST_SAME_VALUE_(StmtKind::cpp, S::StmtKind::cpp, MT_STMT_##name)
#define MT_TEST_ITER_(name, cpp, value, text)                                                      \
  MT_TEST_SAME_VALUE_(IterKind::cpp, S::IterKind::cpp, MT_ITER_##name)
MT_EXPR_KINDS(MT_TEST_EXPR_)
MT_MATH_FNS(MT_TEST_MATH_)
MT_FOR_KINDS(MT_TEST_FOR_)
MT_STMT_KINDS(MT_TEST_STMT_)
MT_ITER_KINDS(MT_TEST_ITER_)

TEST(IrVocabulary, ArityAndParsersFollowTheLists) {
  for (const Member& m : MT_TEST_ROWS(MT_MATH_FNS)) {
    auto core = static_cast<MathFn>(m.value);
    EXPECT_EQ(math_fn_arity(core), mt_math_fn_arity(m.value)) << m.text;
    EXPECT_EQ(S::program::math_fn_arity(static_cast<S::MathFn>(m.value)),
              mt_math_fn_arity(m.value));
    MathFn parsed{};
    ASSERT_TRUE(parse_math_fn(m.text, &parsed)) << m.text;
    EXPECT_EQ(parsed, core);
  }
  EXPECT_EQ(mt_math_fn_arity(MT_MATH_POW), 2);
  EXPECT_EQ(mt_math_fn_arity(MT_MATH_EXP), 1);
  for (const Member& m : MT_TEST_ROWS(MT_FOR_KINDS)) {
    ForKind parsed{};
    ASSERT_TRUE(parse_for_kind(m.text, &parsed)) << m.text;
    EXPECT_EQ(static_cast<int>(parsed), m.value);
  }
  MathFn fn{};
  ForKind fk{};
  EXPECT_FALSE(parse_math_fn("exp2", &fn));
  EXPECT_FALSE(parse_for_kind("vector", &fk));
}

// Element types: every kind, by the ABI's code, through core and the SDK and back, and by name
// through the IR text form.
TEST(IrVocabulary, DTypesCrossTheAbiBothWays) {
  for (const Member& m : MT_TEST_ROWS(MT_DTYPE_KINDS)) {
    SCOPED_TRACE(m.text);
    auto kind = static_cast<DTypeKind>(m.position);
    EXPECT_EQ(to_dtype_code(kind), m.value);
    EXPECT_EQ(from_dtype_code(m.value), kind);
    for (int bits : {1, 8, 16, 32, 64}) {
      DType t{kind, static_cast<uint8_t>(bits)};
      mt_dtype c = plugin_detail::to_c(t);
      EXPECT_EQ(c.code, m.value);
      EXPECT_EQ(c.bits, bits);
      EXPECT_EQ(c.lanes, 1);
      S::DType s = S::from_c(c);
      EXPECT_EQ(static_cast<int>(s.kind), m.position);
      EXPECT_EQ(s.bits, bits);
      EXPECT_EQ(S::program::to_string(s), to_string(t));
      EXPECT_EQ(plugin_detail::from_c(S::to_c(s)), t);
      EXPECT_EQ(ir_text::parse_dtype_name(ir_text::dtype_name(t)), t) << ir_text::dtype_name(t);
    }
  }
  EXPECT_EQ(to_string(DType::bf16()), "bf16");
  EXPECT_EQ(to_string(DType::boolean()), "bool");
  EXPECT_EQ(ir_text::dtype_name(DType{DTypeKind::Bool, 8}), "bool8");
  // DLPack codes the ABI does not use (3: opaque handle, 5: complex) are refused on both sides.
  for (mt_dtype_code unknown : {3, 5, 7, -1}) {
    EXPECT_FALSE(from_dtype_code(unknown).has_value());
    mt_dtype c{static_cast<uint8_t>(unknown), 32, 1};
    if (unknown >= 0) {
      EXPECT_THROW(plugin_detail::from_c(c), std::exception);
      EXPECT_THROW(S::from_c(c), S::Error);
    }
  }
}

} // namespace
} // namespace mt
