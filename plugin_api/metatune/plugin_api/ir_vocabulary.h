/* The IR vocabulary, written once: element-type kinds, statement, expression, math-function,
 * loop, iteration-variable and reduction kinds, each as an X-macro list. The C enums below,
 * core's enums (core/ir, core/workload) and the SDK's (sdk/program.hpp, sdk/ir.hpp) are all
 * made from these lists, and so are the members' names, so the three cannot drift apart.
 *
 * Each list calls X(NAME, CppName, value, "text") once per member: NAME makes the C enumerator
 * (MT_EXPR_ + NAME, ...), CppName the C++ one, value is what crosses the ABI, text is the
 * member's name in the IR's text form and in messages. The values are frozen (ABI 1.0): a new
 * member goes at the end of its list with the next free value, nothing is renumbered.
 * Plain C99. */
#ifndef METATUNE_PLUGIN_API_IR_VOCABULARY_H
#define METATUNE_PLUGIN_API_IR_VOCABULARY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element-type kinds. The value is DLPack's type code; the text is the prefix of a dtype's
 * name, followed by its bit width (f32, bf16, i8, u8), except bool, which has none. Core and
 * the SDK number the kinds by their position in this list (their files store that position),
 * so the order is as frozen as the values. */
#define MT_DTYPE_KINDS(X)                                                                          \
  X(INT, Int, 0, "i")                                                                              \
  X(UINT, UInt, 1, "u")                                                                            \
  X(FLOAT, Float, 2, "f")                                                                          \
  X(BFLOAT, BFloat, 4, "bf")                                                                       \
  X(BOOL, Bool, 6, "bool")

/* Statement kinds (text: the keyword of the IR text form; a store has none). */
#define MT_STMT_KINDS(X)                                                                           \
  X(FOR, For, 0, "for")                                                                            \
  X(SEQ, Seq, 1, "seq")                                                                            \
  X(STORE, Store, 2, "store")                                                                      \
  X(IF_THEN_ELSE, IfThenElse, 3, "if")                                                             \
  X(BLOCK_REALIZE, BlockRealize, 4, "block")                                                       \
  X(ALLOCATE, Allocate, 5, "alloc")

/* Expression kinds (text: the operator or keyword of the IR text form). The binary kinds are
 * Add..Or, args = {a, b}: Div is true division (floats only), FloorDiv / FloorMod are integer
 * floor division / modulo (the result takes the sign of the divisor), comparisons take
 * operands of one type and give bool, And / Or take bools. Not: args = {a}. Select: args =
 * {cond, true_value, false_value}, both values evaluated. Cast: args = {value}, the dtype is
 * the target type (float to int truncates toward zero). Load: a buffer, args = one i64 index
 * per dimension. Call: a math function, args (float). */
#define MT_EXPR_KINDS(X)                                                                           \
  X(INT_IMM, IntImm, 0, "IntImm")                                                                  \
  X(FLOAT_IMM, FloatImm, 1, "FloatImm")                                                            \
  X(VAR, Var, 2, "Var")                                                                            \
  X(ADD, Add, 3, "+")                                                                              \
  X(SUB, Sub, 4, "-")                                                                              \
  X(MUL, Mul, 5, "*")                                                                              \
  X(DIV, Div, 6, "/")                                                                              \
  X(FLOOR_DIV, FloorDiv, 7, "//")                                                                  \
  X(FLOOR_MOD, FloorMod, 8, "%")                                                                   \
  X(MIN, Min, 9, "min")                                                                            \
  X(MAX, Max, 10, "max")                                                                           \
  X(EQ, EQ, 11, "==")                                                                              \
  X(NE, NE, 12, "!=")                                                                              \
  X(LT, LT, 13, "<")                                                                               \
  X(LE, LE, 14, "<=")                                                                              \
  X(GT, GT, 15, ">")                                                                               \
  X(GE, GE, 16, ">=")                                                                              \
  X(AND, And, 17, "&&")                                                                            \
  X(OR, Or, 18, "||")                                                                              \
  X(NOT, Not, 19, "!")                                                                             \
  X(SELECT, Select, 20, "select")                                                                  \
  X(CAST, Cast, 21, "cast")                                                                        \
  X(LOAD, Load, 22, "load")                                                                        \
  X(CALL, Call, 23, "call")

/* Math functions of a Call expression (text: the function's name in the IR text form). All
 * take one argument but pow, which takes two (mt_math_fn_arity). */
#define MT_MATH_FNS(X)                                                                             \
  X(EXP, Exp, 0, "exp")                                                                            \
  X(LOG, Log, 1, "log")                                                                            \
  X(TANH, Tanh, 2, "tanh")                                                                         \
  X(ERF, Erf, 3, "erf")                                                                            \
  X(SQRT, Sqrt, 4, "sqrt")                                                                         \
  X(RSQRT, Rsqrt, 5, "rsqrt")                                                                      \
  X(POW, Pow, 6, "pow")                                                                            \
  X(ABS, Abs, 7, "abs")                                                                            \
  X(SIGMOID, Sigmoid, 8, "sigmoid")

/* Loop kinds (text: the keyword of the IR text form). */
#define MT_FOR_KINDS(X)                                                                            \
  X(SERIAL, Serial, 0, "serial")                                                                   \
  X(PARALLEL, Parallel, 1, "parallel")                                                             \
  X(VECTORIZED, Vectorized, 2, "vectorized")                                                       \
  X(UNROLLED, Unrolled, 3, "unrolled")                                                             \
  X(THREAD_BINDING, ThreadBinding, 4, "thread_binding")

/* Kinds of a block's iteration variables (text: the letter of the IR text form). */
#define MT_ITER_KINDS(X)                                                                           \
  X(SPATIAL, Spatial, 0, "S")                                                                      \
  X(REDUCE, Reduce, 1, "R")

/* Reductions of a tensor-expression compute. */
#define MT_REDUCE_KINDS(X)                                                                         \
  X(SUM, Sum, 0, "sum")                                                                            \
  X(MAX, Max, 1, "max")                                                                            \
  X(MIN, Min, 2, "min")

/* ---- the C enums -------------------------------------------------------------------------- */
#define MT_VOCAB_C_DTYPE_(name, cpp, value, text) MT_DTYPE_##name = value,
#define MT_VOCAB_C_STMT_(name, cpp, value, text) MT_STMT_##name = value,
#define MT_VOCAB_C_EXPR_(name, cpp, value, text) MT_EXPR_##name = value,
#define MT_VOCAB_C_MATH_(name, cpp, value, text) MT_MATH_##name = value,
#define MT_VOCAB_C_FOR_(name, cpp, value, text) MT_FOR_##name = value,
#define MT_VOCAB_C_ITER_(name, cpp, value, text) MT_ITER_##name = value,
#define MT_VOCAB_C_REDUCE_(name, cpp, value, text) MT_REDUCE_##name = value,

typedef int32_t mt_dtype_code;
enum { MT_DTYPE_KINDS(MT_VOCAB_C_DTYPE_) };
typedef int32_t mt_stmt_kind;
enum { MT_STMT_KINDS(MT_VOCAB_C_STMT_) };
typedef int32_t mt_expr_kind;
enum { MT_EXPR_KINDS(MT_VOCAB_C_EXPR_) };
typedef int32_t mt_math_fn;
enum { MT_MATH_FNS(MT_VOCAB_C_MATH_) };
typedef int32_t mt_for_kind;
enum { MT_FOR_KINDS(MT_VOCAB_C_FOR_) };
typedef int32_t mt_iter_kind;
enum { MT_ITER_KINDS(MT_VOCAB_C_ITER_) };
typedef int32_t mt_reduce_kind;
enum { MT_REDUCE_KINDS(MT_VOCAB_C_REDUCE_) };

/* ---- names and conversions ------------------------------------------------------------------
 * The text of a member by its value, NULL for a value the list does not have (a repeated value
 * in a list is a duplicate case label here, so it does not compile). */
#define MT_VOCAB_TEXT_CASE_(name, cpp, value, text)                                                \
  case value:                                                                                      \
    return text;

static inline const char* mt_dtype_code_text(mt_dtype_code c) {
  switch (c) {
    MT_DTYPE_KINDS(MT_VOCAB_TEXT_CASE_)
  default:
    return NULL;
  }
}
static inline const char* mt_stmt_kind_text(mt_stmt_kind k) {
  switch (k) {
    MT_STMT_KINDS(MT_VOCAB_TEXT_CASE_)
  default:
    return NULL;
  }
}
static inline const char* mt_expr_kind_text(mt_expr_kind k) {
  switch (k) {
    MT_EXPR_KINDS(MT_VOCAB_TEXT_CASE_)
  default:
    return NULL;
  }
}
static inline const char* mt_math_fn_text(mt_math_fn f) {
  switch (f) {
    MT_MATH_FNS(MT_VOCAB_TEXT_CASE_)
  default:
    return NULL;
  }
}
static inline const char* mt_for_kind_text(mt_for_kind k) {
  switch (k) {
    MT_FOR_KINDS(MT_VOCAB_TEXT_CASE_)
  default:
    return NULL;
  }
}
static inline const char* mt_iter_kind_text(mt_iter_kind k) {
  switch (k) {
    MT_ITER_KINDS(MT_VOCAB_TEXT_CASE_)
  default:
    return NULL;
  }
}
static inline const char* mt_reduce_kind_text(mt_reduce_kind k) {
  switch (k) {
    MT_REDUCE_KINDS(MT_VOCAB_TEXT_CASE_)
  default:
    return NULL;
  }
}

/* Number of arguments a math function takes (0 for an unknown one). */
static inline int mt_math_fn_arity(mt_math_fn f) {
  if (mt_math_fn_text(f) == NULL) return 0;
  return f == MT_MATH_POW ? 2 : 1;
}

/* Element-type kinds by position in MT_DTYPE_KINDS (the numbering of core and the SDK) and by
 * DLPack code (the ABI's): -1 where there is no such kind. */
#define MT_VOCAB_VALUE_(name, cpp, value, text) value,
#define MT_VOCAB_COUNT_(name, cpp, value, text) +1
enum { MT_DTYPE_KIND_COUNT_ = 0 MT_DTYPE_KINDS(MT_VOCAB_COUNT_) };
static inline mt_dtype_code mt_dtype_code_at(int position) {
  static const mt_dtype_code codes[] = {MT_DTYPE_KINDS(MT_VOCAB_VALUE_)};
  return position >= 0 && position < MT_DTYPE_KIND_COUNT_ ? codes[position] : -1;
}
static inline int mt_dtype_code_position(mt_dtype_code code) {
  int i;
  for (i = 0; i < MT_DTYPE_KIND_COUNT_; ++i)
    if (mt_dtype_code_at(i) == code) return i;
  return -1;
}

/* ---- for C++ wrappers: enumerators with the ABI's values, or numbered by position ---------- */
#define MT_VOCAB_ENUMERATOR(name, cpp, value, text) cpp = value,
#define MT_VOCAB_POSITIONAL_ENUMERATOR(name, cpp, value, text) cpp,

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* METATUNE_PLUGIN_API_IR_VOCABULARY_H */
