// Tests for the IR text form (core/ir/printer.h, parser.h) and structural equality/hashing
// (core/ir/structural.h): exact round trips over hand-built IR covering every node kind and
// dtype, located parse errors, bounded nesting, and alpha-equivalence of the hash.
#include "core/ir/printer.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/ir/buffer.h"
#include "core/ir/parser.h"
#include "core/ir/structural.h"

#if __has_include("core/workload/library.h")
#include "core/workload/library.h"
#define MT_HAVE_WORKLOAD_LIBRARY 1
#endif

namespace mt {
namespace {

// ---- builders -----------------------------------------------------------------------------------

// C[i, j] += A[i, k] * B[k, j] as one reduction block under three serial loops.
Function matmul(int64_t n, const std::string& prefix = "") {
  Buffer a = make_buffer(prefix + "A", DType::f32(), {n, n});
  Buffer b = make_buffer(prefix + "B", DType::f32(), {n, n});
  Buffer c = make_buffer(prefix + "C", DType::f32(), {n, n});
  Expr i = make_var(prefix + "i"), j = make_var(prefix + "j"), k = make_var(prefix + "k");
  Expr vi = make_var(prefix + "vi"), vj = make_var(prefix + "vj"), vk = make_var(prefix + "vk");
  Block blk;
  blk.name = "C";
  blk.iter_vars = {
      {vi, n, IterKind::Spatial}, {vj, n, IterKind::Spatial}, {vk, n, IterKind::Reduce}};
  blk.init = make_store(c, {vi, vj}, float_imm(0.0));
  blk.body = make_store(c, {vi, vj},
                        make_load(c, {vi, vj}) + make_load(a, {vi, vk}) * make_load(b, {vk, vj}));
  Stmt body = make_block_realize({i, j, k}, Expr(), blk);
  body = make_for(i, n, make_for(j, n, make_for(k, n, body)));
  Function f;
  f.name = "matmul";
  f.params = {a, b, c};
  f.body = body;
  return f;
}

// A raw node, bypassing the folding and coercion of the constructors.
Expr raw(ExprKind kind, DType t, std::vector<Expr> args) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->dtype = t;
  n->args = std::move(args);
  return Expr(n);
}

// Every statement kind, every expression kind, every dtype, special float values, unfolded and
// retyped nodes, awkward names, shadowing and free variables.
Function kitchen_sink() {
  Buffer a = make_buffer("A", DType::f32(), {4, 4});
  Buffer h = make_buffer("H", DType::f16(), {4}, "shared");
  Buffer bf = make_buffer("Bf", DType::bf16(), {4}, "cache");
  Buffer d = make_buffer("D", DType::f64(), {2, 2});
  Buffer i8 = make_buffer("I8", DType::i8(), {4});
  Buffer u8 = make_buffer("U8", DType::u8(), {4});
  Buffer i16 = make_buffer("I16", DType{DTypeKind::Int, 16}, {2});
  Buffer i32 = make_buffer("I32", DType::i32(), {4});
  Buffer u32 = make_buffer("U32", DType{DTypeKind::UInt, 32}, {2});
  Buffer u16 = make_buffer("U16", DType{DTypeKind::UInt, 16}, {2}, "weird scope!");
  Buffer bo = make_buffer("Bo", DType::boolean(), {4});
  Buffer b8 = make_buffer("B8", DType{DTypeKind::Bool, 8}, {1});
  Buffer scalar = make_buffer("S", DType::f32(), {});
  Buffer spaced = make_buffer("my buf", DType::i64(), {3});
  Buffer keyword = make_buffer("for", DType::f32(), {1});
  Buffer dup_a = make_buffer("A", DType::f32(), {4}, "local"); // same name as a param
  Buffer tmp = make_buffer("T", DType::f32(), {4}, "global");
  Buffer stray = make_buffer("stray", DType::f32(), {2}); // used but declared nowhere
  Buffer local = make_buffer("L", DType::f32(), {8}, "local");

  Expr i = make_var("i"), j = make_var("j"), k = make_var("k");
  Expr i_inner = make_var("i"); // shadows i
  Expr i32v = make_var("n", DType::i32());
  Expr free_n = make_var("free_n", DType::i32()); // free in the function
  Expr odd = make_var("for");                     // a keyword as a name
  Expr empty = make_var("");
  Expr vi = make_var("vi"), vk = make_var("vk"), vb = make_var("vb", DType::i32());
  Expr tx = make_var("tx");

  std::vector<Stmt> stmts;
  // Every binary kind on the right types, every math function, casts, select, not.
  Expr x = make_load(a, {i, j});
  Expr fx = x * 2.0 + x / 3.0 - min(x, 1.0) + max(x, -1.0);
  for (MathFn fn : {MathFn::Exp, MathFn::Log, MathFn::Tanh, MathFn::Erf, MathFn::Sqrt,
                    MathFn::Rsqrt, MathFn::Abs, MathFn::Sigmoid})
    fx = fx + make_call(fn, {x});
  fx = fx + pow(x, float_imm(0.5));
  Expr cond = (i < j && j <= 3) || make_not(eq(i, j)) || (ne(i, 2) && i > 0 && j >= 1);
  fx = make_select(cond, fx, make_cast(DType::f32(), make_load(d, {i % 2, floordiv(j, 2)})));
  stmts.push_back(make_store(a, {i, j}, fx));
  // Immediates of every dtype, including out-of-range and special values.
  stmts.push_back(make_store(i8, {i}, int_imm(-128, DType::i8()) + int_imm(300, DType::i8())));
  stmts.push_back(make_store(u8, {i}, int_imm(255, DType::u8())));
  stmts.push_back(make_store(i16, {int_imm(1)}, int_imm(-7, DType{DTypeKind::Int, 16})));
  stmts.push_back(make_store(i32, {i}, make_cast(DType::i32(), i) * int_imm(3, DType::i32())));
  stmts.push_back(make_store(u32, {int_imm(0)}, int_imm(4000000000LL, DType{DTypeKind::UInt, 32})));
  stmts.push_back(make_store(u16, {int_imm(0)}, int_imm(7, DType{DTypeKind::UInt, 16})));
  stmts.push_back(
      make_store(bo, {i}, int_imm(1, DType::boolean()) && int_imm(0, DType::boolean())));
  stmts.push_back(make_store(bo, {i}, int_imm(2, DType::boolean())));
  stmts.push_back(make_store(b8, {int_imm(0)}, int_imm(1, DType{DTypeKind::Bool, 8})));
  stmts.push_back(make_store(h, {i}, float_imm(0.1, DType::f16()) + float_imm(-0.0, DType::f16())));
  stmts.push_back(
      make_store(bf, {i}, float_imm(3.0e38, DType::bf16()) * float_imm(5e-324, DType::bf16())));
  stmts.push_back(
      make_store(d, {int_imm(0), int_imm(1)},
                 float_imm(std::numeric_limits<double>::infinity(), DType::f64()) -
                     float_imm(-std::numeric_limits<double>::infinity(), DType::f64())));
  stmts.push_back(
      make_store(d, {int_imm(1), int_imm(1)},
                 float_imm(std::numeric_limits<double>::quiet_NaN(), DType::f64()) +
                     float_imm(std::bit_cast<double>(0xfff0000000000123ULL), DType::f64()) +
                     float_imm(-std::numeric_limits<double>::quiet_NaN(), DType::f64())));
  stmts.push_back(make_store(spaced, {int_imm(2)},
                             int_imm(std::numeric_limits<int64_t>::min()) +
                                 int_imm(std::numeric_limits<int64_t>::max())));
  stmts.push_back(
      make_store(scalar, {}, float_imm(1.0 / 3.0) + float_imm(1e300) + float_imm(-2.5e-8)));
  // Unfolded constant arithmetic (what substitute() leaves behind) and retyped nodes.
  Expr unfolded = with_args(i + 1, {int_imm(2), int_imm(3)});
  stmts.push_back(
      make_store(spaced, {unfolded}, raw(ExprKind::Sub, DType::i64(), {int_imm(0), int_imm(5)})));
  stmts.push_back(make_store(keyword, {int_imm(0)}, int_imm(3, DType::f32())));
  stmts.push_back(make_store(i32, {int_imm(1)}, float_imm(1.5, DType::i32())));
  stmts.push_back(make_store(i32, {int_imm(2)}, raw(ExprKind::Add, DType::i32(), {i, j})));
  stmts.push_back(make_store(a, {i, j}, raw(ExprKind::Cast, DType::f32(), {x}))); // no-op cast
  stmts.push_back(make_store(a, {i, j}, raw(ExprKind::Div, DType::f32(), {x, x})));
  stmts.push_back(make_store(spaced, {int_imm(0)}, raw(ExprKind::Div, DType::i64(), {i, j})));
  // Precedence: (a - b) - c vs a - (b - c), (a + b) * c, - of negative literal.
  stmts.push_back(make_store(spaced, {int_imm(1)}, (i - j) - k));
  stmts.push_back(make_store(spaced, {int_imm(1)}, i - (j - k)));
  stmts.push_back(make_store(spaced, {int_imm(1)}, (i + j) * k - int_imm(-4) * (j % int_imm(-3))));
  stmts.push_back(make_store(bo, {i}, make_not(make_not(i < j))));
  // Shadowed loop var, keyword-named var, empty name, free variable, stray buffer.
  stmts.push_back(make_for(i_inner, 2, make_store(spaced, {i_inner}, i + i_inner + odd + empty)));
  stmts.push_back(
      make_store(i32, {i}, free_n + make_cast(DType::i32(), make_load(stray, {int_imm(1)}) > 0.0)));

  Stmt inner_seq = make_seq(stmts);
  Stmt loops = make_for(
      i, 4,
      make_for(j, 4,
               make_for(odd, 1, make_for(empty, 1, make_for(k, 2, inner_seq, ForKind::Unrolled)),
                        ForKind::Serial, "",
                        {{"pragma", int64_t(-3)}, {"note", std::string("a \"b\"\n")}}),
               ForKind::Vectorized),
      ForKind::Parallel, "", {{"meta_schedule.parallel", int64_t(16)}});

  // Block with init, predicate, annotations, a quoted name and an i32 iter var; the iter var
  // reuses the outer loop's name.
  Block blk;
  blk.name = "red block";
  Expr vi2 = make_var("i");
  blk.iter_vars = {
      {vi2, 4, IterKind::Spatial}, {vk, 4, IterKind::Reduce}, {vb, 2, IterKind::Spatial}};
  blk.init = make_seq(
      {make_store(tmp, {vi2}, float_imm(0.0)), make_store(tmp, {vi2}, min_value(DType::f32()))});
  blk.body = make_if(eq(make_cast(DType::i64(), vb), 0),
                     make_store(tmp, {vi2}, max(make_load(tmp, {vi2}), make_load(a, {vi2, vk}))));
  blk.annotations = {{"schedule_rule", std::string("none")}, {"x", int64_t(1)}};
  Stmt br = make_block_realize({i, floordiv(k * 2, 2), make_cast(DType::i32(), j)}, i < 3, blk);
  Stmt red = make_for(i, 4, make_for(k, 4, make_for(j, 2, br)));

  // A block without init or body, and one without iter vars.
  Block empty_blk;
  empty_blk.name = "root";
  Stmt br_empty = make_block_realize({}, Expr(), empty_blk);
  Block plain;
  plain.name = "init";
  plain.iter_vars = {{vi, 4, IterKind::Spatial}};
  plain.body = make_store(tmp, {vi}, float_imm(2.0));
  Stmt br_plain = make_for(i, 4, make_block_realize({i}, Expr(), plain));

  // Control flow: if / else-if / else, allocate, explicit and nested Seq, null bodies, threads.
  auto seq1 = std::make_shared<SeqNode>();
  seq1->stmts = {make_store(local, {int_imm(0)}, float_imm(1.0))};
  auto seq0 = std::make_shared<SeqNode>();
  auto nested = std::make_shared<SeqNode>();
  nested->stmts = {seq1, make_store(local, {int_imm(1)}, float_imm(2.0)), seq0};
  Stmt alloc = make_allocate(local, nested);
  Stmt chain = make_if(i < 1, make_store(tmp, {i}, float_imm(1.0)),
                       make_if(i < 2, make_store(tmp, {i}, float_imm(2.0)),
                               make_if(i < 3, nullptr, make_store(tmp, {i}, float_imm(3.0)))));
  Stmt threads =
      make_for(tx, 32,
               make_for(i32v, 2, make_store(tmp, {int_imm(0)}, make_cast(DType::f32(), i32v)),
                        ForKind::ThreadBinding, "threadIdx.x"),
               ForKind::ThreadBinding, "blockIdx.x");
  Stmt tagged_serial = make_for(k, 1, nullptr, ForKind::Serial, "vthread");
  Stmt untagged = make_for(k, 1, make_store(tmp, {k}, float_imm(0.0)), ForKind::ThreadBinding);

  Function f;
  f.name = "kitchen sink";
  f.params = {a, h, bf, d, i8, u8, i16, i32, u32, u16, bo, b8, scalar, spaced, keyword};
  f.buffers = {dup_a, tmp};
  f.body = make_seq({loops, red, br_empty, br_plain, make_for(i, 4, chain), alloc, threads,
                     tagged_serial, untagged});
  return f;
}

void expect_round_trip(const Function& f) {
  std::string text = print(f);
  Function g;
  try {
    g = parse_function(text, "printed");
  } catch (const ParseError& e) {
    FAIL() << e.what() << "\n" << text;
  }
  EXPECT_EQ(print(g), text);
  EXPECT_TRUE(structural_equal(f, g)) << text;
  EXPECT_EQ(structural_hash(f), structural_hash(g));
  EXPECT_EQ(print(g, {.canonical = true}), print(f, {.canonical = true}));
  EXPECT_EQ(g.lowered, f.lowered);
  EXPECT_EQ(g.params.size(), f.params.size());
  EXPECT_EQ(g.buffers.size(), f.buffers.size());
}

// Parses text expected to fail and returns the error.
ParseError parse_error(const std::string& text) {
  try {
    parse_function(text, "t.ir");
  } catch (const ParseError& e) {
    return e;
  }
  ADD_FAILURE() << "parsed without error:\n" << text;
  return ParseError("t.ir", 0, 0, "no error");
}

// ---- Printer ------------------------------------------------------------------------------------

TEST(PrinterTest, MatmulReadsAsDocumented) {
  EXPECT_EQ(print(matmul(64)), R"(func matmul(A: f32[64, 64], B: f32[64, 64], C: f32[64, 64]) {
  for i in 64 {
    for j in 64 {
      for k in 64 {
        block C(vi: S[64] = i, vj: S[64] = j, vk: R[64] = k) {
          init { C[vi, vj] = 0f32 }
          C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        }
      }
    }
  }
}
)");
}

TEST(PrinterTest, LoopKindsAnnotationsAndScopes) {
  Buffer b = make_buffer("B", DType::f16(), {8}, "shared");
  Expr i = make_var("i"), t = make_var("t", DType::i32());
  Stmt s = make_for(i, 8,
                    make_for(t, 4, make_store(b, {i}, make_cast(DType::f16(), t)),
                             ForKind::ThreadBinding, "threadIdx.x"),
                    ForKind::Unrolled, "", {{"k", int64_t(2)}, {"s", std::string("v")}});
  Function f;
  f.name = "f";
  f.lowered = true;
  f.params = {b};
  f.body = s;
  EXPECT_EQ(print(f), R"(lowered func f(B: f16[8] @shared) {
  for i in 8 unrolled attrs("k": 2, "s": "v") {
    for t: i32 in 4 thread_binding("threadIdx.x") {
      B[i] = f16(t)
    }
  }
}
)");
}

TEST(PrinterTest, DistinctVariablesWithOneNameGetDistinctNames) {
  Buffer b = make_buffer("B", DType::i64(), {4});
  Expr outer = make_var("i"), inner = make_var("i"), sibling = make_var("i");
  Stmt nest = make_for(outer, 4, make_for(inner, 4, make_store(b, {outer}, outer + inner)));
  Stmt s = make_seq({nest, make_for(sibling, 4, make_store(b, {sibling}, sibling))});
  std::string text = print(s);
  EXPECT_NE(text.find("for i in 4"), std::string::npos) << text;
  EXPECT_NE(text.find("for i_1 in 4"), std::string::npos) << text;
  EXPECT_NE(text.find("B[i] = i + i_1"), std::string::npos) << text;
  // The sibling loop is not nested in the others: it may reuse the name.
  EXPECT_NE(text.find("B[i] = i\n"), std::string::npos) << text;
}

TEST(PrinterTest, DuplicateBufferNamesAreRenamed) {
  Buffer a1 = make_buffer("A", DType::f32(), {2}), a2 = make_buffer("A", DType::f32(), {2});
  Function f;
  f.name = "dup";
  f.params = {a1, a2};
  f.body = make_store(a2, {int_imm(0)}, make_load(a1, {int_imm(1)}));
  EXPECT_EQ(print(f), "func dup(A: f32[2], A_1: f32[2]) {\n  A_1[0] = A[1]\n}\n");
  expect_round_trip(f);
}

TEST(PrinterTest, ImmediatesShowTheirDtype) {
  EXPECT_EQ(print(int_imm(5)), "5");
  EXPECT_EQ(print(int_imm(-5, DType::i32())), "-5i32");
  EXPECT_EQ(print(int_imm(7, DType::u8())), "7u8");
  EXPECT_EQ(print(int_imm(1, DType::boolean())), "true");
  EXPECT_EQ(print(float_imm(0.1)), "0.1f32");
  EXPECT_EQ(print(float_imm(2.0, DType::bf16())), "2bf16");
  EXPECT_EQ(print(float_imm(-0.0, DType::f64())), "-0f64");
  EXPECT_EQ(print(min_value(DType::f16())), "f16(-inf)");
  EXPECT_EQ(print(float_imm(std::numeric_limits<double>::quiet_NaN())), "f32(nan)");
  EXPECT_EQ(print(int_imm(3, DType::f32())), "(3 : f32)");
}

TEST(PrinterTest, PrecedenceAndParentheses) {
  Expr a = make_var("a"), b = make_var("b"), c = make_var("c");
  EXPECT_EQ(print(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(print((a - b) - c), "a - b - c");
  EXPECT_EQ(print((a + b) * c), "(a + b) * c");
  EXPECT_EQ(print(a + b * c), "a + b * c");
  EXPECT_EQ(print(floordiv(a, b) % c), "a // b % c");
  EXPECT_EQ(print(a < b && (b < c || a < c)), "a < b && (b < c || a < c)");
  EXPECT_EQ(print(make_not(a < b)), "!(a < b)");
  EXPECT_EQ(print(a * int_imm(-2)), "a * -2");
}

TEST(PrinterTest, MalformedIrPrintsWithoutCrashing) {
  auto bad_seq = std::make_shared<SeqNode>();
  bad_seq->stmts = {nullptr,
                    make_store(make_buffer("B", DType::f32(), {1}), {int_imm(0)}, float_imm(1.0))};
  auto bad_store = std::make_shared<StoreNode>();
  auto bad_block = std::make_shared<BlockRealizeNode>();
  bad_block->iter_values = {int_imm(1)};
  Block blk;
  blk.name = "b";
  bad_block->block = std::make_shared<const Block>(blk);
  Expr bad_add = raw(ExprKind::Add, DType::i64(), {int_imm(1)});
  Expr null_args = raw(ExprKind::Max, DType::i64(), {Expr(), Expr()});
  Stmt s = make_seq(
      {bad_seq, bad_store, bad_block, make_for(make_var("i"), 1, make_if(Expr(), nullptr)),
       make_store(make_buffer("C", DType::i64(), {2, 2}), {bad_add, null_args}, int_imm(0))});
  std::string text = print(s);
  EXPECT_NE(text.find("<null>"), std::string::npos) << text;
  EXPECT_NE(text.find("<bad +>(1)"), std::string::npos) << text;
  EXPECT_NE(text.find("? = 1"), std::string::npos) << text;
  Function f;
  f.name = "bad";
  f.body = s;
  EXPECT_THROW(parse_function(print(f)), ParseError);
  EXPECT_NE(structural_hash(f), 0u);
}

// ---- Parser -------------------------------------------------------------------------------------

TEST(ParserTest, RoundTripMatmul) {
  expect_round_trip(matmul(16));
}

TEST(ParserTest, RoundTripEveryNodeKindAndDtype) {
  Function f = kitchen_sink();
  expect_round_trip(f);
  f.lowered = true;
  expect_round_trip(f);
}

TEST(ParserTest, RoundTripEmptyAndNullBodies) {
  Function f;
  f.name = "";
  expect_round_trip(f);
  f.body = std::make_shared<SeqNode>();
  expect_round_trip(f);
  f.params = {make_buffer("X", DType::f32(), {0})};
  f.body = make_for(make_var("i"), 0, nullptr);
  expect_round_trip(f);
}

TEST(ParserTest, ParsedStructureMatches) {
  Function f = parse_function(R"(
    # comments and free layout are fine
    func g(X: f32[8], Y: i32[8] @local) {
      buffer T: f32[8]
      for i in 8 parallel {
        T[i] = X[i] * 2f32 + f32(Y[i])
        if i % 2 == 0 { Y[i] = 1i32 } else { Y[i] = -1i32 }
      }
    })");
  EXPECT_EQ(f.name, "g");
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(f.params[1]->scope, "local");
  EXPECT_EQ(f.params[1]->dtype, DType::i32());
  ASSERT_EQ(f.buffers.size(), 1u);
  ASSERT_EQ(f.body->kind, StmtKind::For);
  auto* loop = as<ForNode>(f.body);
  EXPECT_EQ(loop->for_kind, ForKind::Parallel);
  ASSERT_EQ(loop->body->kind, StmtKind::Seq);
  auto* store = as<StoreNode>(as<SeqNode>(loop->body)->stmts[0]);
  EXPECT_EQ(store->buffer, f.buffers[0]);
  EXPECT_TRUE(store->indices[0].same_as(loop->loop_var));
  EXPECT_EQ(store->value->kind, ExprKind::Add);
  EXPECT_EQ(store->value->args[1]->kind, ExprKind::Cast);
  EXPECT_EQ(store->value->args[1]->args[0]->buffer, f.params[1]);
  EXPECT_EQ(f.output_mask(), (std::vector<bool>{false, true}));
}

TEST(ParserTest, ScopesResolveNames) {
  // The block's bindings see the loop's i; its body sees the iter var i.
  Function f = parse_function(R"(func s(A: i64[4]) {
    for i in 4 {
      block B(i: S[4] = i + 0) { A[i] = i }
    }
  })");
  auto* loop = as<ForNode>(f.body);
  auto* br = as<BlockRealizeNode>(loop->body);
  EXPECT_TRUE(br->iter_values[0]->args[0].same_as(loop->loop_var));
  Expr iv = br->block->iter_vars[0].var;
  EXPECT_FALSE(iv.same_as(loop->loop_var));
  EXPECT_TRUE(as<StoreNode>(br->block->body)->value.same_as(iv));
  // Printing separates the two: the iter var is renamed.
  EXPECT_NE(print(f).find("block B(vi: S[4] = i + 0)"), std::string::npos) << print(f);
  expect_round_trip(f);
}

TEST(ParserTest, FloatImmediatesRoundTripBitExactly) {
  std::mt19937_64 rng(12345);
  std::vector<double> values = {0.0,
                                -0.0,
                                0.1,
                                1.0 / 3.0,
                                5e-324,
                                -2.2250738585072014e-308,
                                1.7976931348623157e308,
                                65504.0,
                                3.3895313892515355e38,
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN(),
                                -std::numeric_limits<double>::quiet_NaN(),
                                std::bit_cast<double>(0x7ff0000000000001ULL),
                                std::bit_cast<double>(0xfff4000000000abcULL)};
  for (int n = 0; n < 2000; ++n)
    values.push_back(std::bit_cast<double>(rng()));
  Buffer out[4] = {make_buffer("F32", DType::f32(), {1}), make_buffer("F64", DType::f64(), {1}),
                   make_buffer("F16", DType::f16(), {1}), make_buffer("BF16", DType::bf16(), {1})};
  std::vector<Stmt> stores;
  for (size_t n = 0; n < values.size(); ++n) {
    const Buffer& b = out[n % 4];
    stores.push_back(make_store(b, {int_imm(0)}, float_imm(values[n], b->dtype)));
  }
  Function f;
  f.name = "floats";
  f.params = {out[0], out[1], out[2], out[3]};
  f.body = make_seq(stores);
  Function g = parse_function(print(f));
  auto* seq = as<SeqNode>(g.body);
  ASSERT_EQ(seq->stmts.size(), values.size());
  for (size_t n = 0; n < values.size(); ++n) {
    const Expr& v = as<StoreNode>(seq->stmts[n])->value;
    ASSERT_EQ(v->kind, ExprKind::FloatImm);
    EXPECT_EQ(v->dtype, out[n % 4]->dtype);
    EXPECT_EQ(std::bit_cast<uint64_t>(v->float_value), std::bit_cast<uint64_t>(values[n])) << n;
  }
}

TEST(ParserTest, IntegerImmediatesKeepDtypeAndValue) {
  std::vector<DType> types = {DType::i8(),
                              DType::u8(),
                              DType{DTypeKind::Int, 16},
                              DType::i32(),
                              DType{DTypeKind::UInt, 32},
                              DType::i64(),
                              DType{DTypeKind::UInt, 64}};
  std::vector<int64_t> values = {0,
                                 1,
                                 -1,
                                 127,
                                 -128,
                                 255,
                                 1 << 20,
                                 std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()};
  std::vector<Stmt> stores;
  std::vector<Buffer> params;
  for (DType t : types) {
    Buffer b = make_buffer("B" + ir_text::dtype_name(t), t, {1});
    params.push_back(b);
    for (int64_t v : values)
      stores.push_back(make_store(b, {int_imm(0)}, int_imm(v, t)));
  }
  Function f;
  f.name = "ints";
  f.params = params;
  f.body = make_seq(stores);
  Function g = parse_function(print(f));
  auto* seq = as<SeqNode>(g.body);
  for (size_t n = 0; n < stores.size(); ++n) {
    const Expr& v = as<StoreNode>(seq->stmts[n])->value;
    ASSERT_EQ(v->kind, ExprKind::IntImm);
    EXPECT_EQ(v->dtype, types[n / values.size()]);
    EXPECT_EQ(v->int_value, values[n % values.size()]);
  }
}

TEST(ParserTest, UnfoldedAndRetypedNodesSurvive) {
  Function g = parse_function(print(kitchen_sink()));
  bool unfolded = false, retyped_add = false, int_as_float = false;
  visit_stmts(g.body, [&](const Stmt& s) {
    if (s->kind != StmtKind::Store) return true;
    post_order_visit(as<StoreNode>(s)->value, [&](const Expr& e) {
      if (e->kind == ExprKind::Sub && e->args.size() == 2 && is_const_int(e->args[0], 0) &&
          is_const_int(e->args[1], 5))
        unfolded = true;
      if (e->kind == ExprKind::Add && e->dtype == DType::i32() && e->args[0]->dtype == DType::i64())
        retyped_add = true;
      if (e->kind == ExprKind::IntImm && e->dtype == DType::f32() && e->int_value == 3)
        int_as_float = true;
    });
    return true;
  });
  EXPECT_TRUE(unfolded);
  EXPECT_TRUE(retyped_add);
  EXPECT_TRUE(int_as_float);
}

struct ErrorCase {
  const char* text;
  int line;
  int column;
  const char* message;
};

TEST(ParserTest, ErrorsNameLineAndColumn) {
  const ErrorCase cases[] = {
      {"func f(A: f32[4]) {\n  A[0 = 1f32\n}", 2, 7, "expected ']' after indices"},
      {"fun f() {}", 1, 1, "expected 'func'"},
      {"func f(A: float32[4]) {}", 1, 11, "unknown dtype 'float32'"},
      {"func f(A: f32[4]) {\n  A[0] = 1i32\n}", 2, 10, "store of a i32 value to f32 buffer 'A'"},
      {"func f(A: f32[4]) {\n  A[0] = A[0] + 1i32\n}", 2, 15, "type mismatch in '+': f32 vs i32"},
      {"func f(A: f32[4, 4]) {\n  A[0] = 0f32\n}", 2, 3,
       "store to 'A' with 1 indices, but the buffer has rank 2"},
      {"func f(A: f32[4]) {\n  for i in 4 { A[i] = 0f32 }\n  A[i] = 1f32\n}", 3, 5,
       "use of undeclared variable 'i'"},
      {"func f(A: f32[4]) {\n  B[0] = 0f32\n}", 2, 3, "use of undeclared buffer 'B'"},
      {"func f(A: f32[4]) {\n  A[0] = exp(1f32, 2f32)\n}", 2, 10, "'exp' takes 1 argument, got 2"},
      {"func f(A: f32[4]) {\n  A[0] = 1.5f32 // 2f32\n}", 2, 17, "'//' needs integer operands"},
      {"func f(A: f32[4]) {\n  A[0] = \"unterminated\n}", 2, 10, "unterminated string literal"},
      {"func f(A: f32[4]) {\n  A[0] = 1q32\n}", 2, 11, "invalid literal suffix 'q32'"},
      {"func f(A: i64[4]) {\n  A[0] = 99999999999999999999\n}", 2, 10, "out of range"},
      {"func f(A: f32[4], A: f32[4]) {}", 1, 19, "redefinition of buffer 'A'"},
      {"func f(A: f32[4]) {\n  for for in 4 {}\n}", 2, 7, "found keyword 'for'"},
      {"func f(A: f32[4]) {\n  block b(v: X[4] = 0) {}\n}", 2, 14,
       "expected iter var kind 'S' or 'R'"},
      {"func f(A: f32[4]) {\n  A[0] = 0f32\n", 3, 1, "expected '}' before end of input"},
      {"func f(A: f32[4]) {} extra", 1, 22, "expected end of input after function"},
      {"func f(A: f32[4]) {\n  A[0] = i32(inf)\n}", 2, 10, "inf/nan literals need a float type"},
      {"func f(A: f32[4]) {\n  A[0] = select(true, 1f32, 1f64)\n}", 2, 10,
       "select branches have different types"},
      {"func f(A: f32[4]) {\n  for i in 4 attrs(\"k\": 1, \"k\": 2) {}\n}", 2, 28,
       "duplicate annotation key \"k\""},
      {"func f(A: f32[4]) {\n  A[0] = $\n}", 2, 10, "unexpected character '$'"},
  };
  for (const ErrorCase& c : cases) {
    ParseError e = parse_error(c.text);
    EXPECT_EQ(e.line(), c.line) << c.text << "\n" << e.what();
    EXPECT_EQ(e.column(), c.column) << c.text << "\n" << e.what();
    EXPECT_NE(e.message().find(c.message), std::string::npos) << c.text << "\n" << e.what();
    std::string prefix =
        "t.ir:" + std::to_string(c.line) + ":" + std::to_string(c.column) + ": error: ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

TEST(ParserTest, DeepNestingIsRejectedCleanly) {
  std::string parens = "func f(A: i64[1]) { A[0] = " + std::string(100000, '(') + "1" +
                       std::string(100000, ')') + " }";
  EXPECT_NE(parse_error(parens).message().find("nesting too deep"), std::string::npos);

  std::string seqs = "func f() { ";
  for (int n = 0; n < 100000; ++n)
    seqs += "seq { ";
  EXPECT_NE(parse_error(seqs).message().find("nesting too deep"), std::string::npos);

  std::string nots = "func f(A: bool[1]) { A[0] = " + std::string(100000, '!') + "true }";
  EXPECT_NE(parse_error(nots).message().find("nesting too deep"), std::string::npos);

  std::string loops = "func f() {";
  for (int n = 0; n < 1000; ++n)
    loops += " for i in 2 {";
  EXPECT_NE(parse_error(loops).message().find("nesting too deep"), std::string::npos);

  // A long flat chain is iterative in the parser but would be a deep tree: bounded as well.
  std::string chain = "func f(A: i64[1]) { A[0] = 1";
  for (int n = 0; n < 100000; ++n)
    chain += " + 1";
  EXPECT_NE(parse_error(chain + " }").message().find("expression nested too deeply"),
            std::string::npos);

  // Nesting within the limits parses.
  std::string ok =
      "func f(A: i64[1]) { A[0] = " + std::string(200, '(') + "1" + std::string(200, ')') + " }";
  EXPECT_NO_THROW(parse_function(ok));
}

TEST(ParserTest, HandWrittenConveniences) {
  // Unsuffixed float literals are f32; unary minus on an expression is 0 - x.
  Function f = parse_function("func f(A: f32[2]) { A[0] = 1.5 A[1] = -A[0] }");
  auto* seq = as<SeqNode>(f.body);
  EXPECT_EQ(as<StoreNode>(seq->stmts[0])->value->dtype, DType::f32());
  const Expr& neg = as<StoreNode>(seq->stmts[1])->value;
  EXPECT_EQ(neg->kind, ExprKind::Sub);
  EXPECT_EQ(neg->args[0]->kind, ExprKind::FloatImm);
}

// ---- Structural ---------------------------------------------------------------------------------

TEST(StructuralTest, AlphaRenamedFunctionsAreEqual) {
  Function a = matmul(32), b = matmul(32, "other_");
  b.name = "renamed";
  EXPECT_NE(print(a), print(b));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_EQ(structural_fingerprint(a), structural_fingerprint(b));
  EXPECT_TRUE(structural_equal(kitchen_sink(), kitchen_sink()));
  EXPECT_EQ(structural_hash(kitchen_sink()), structural_hash(kitchen_sink()));
  EXPECT_EQ(structural_fingerprint(kitchen_sink()), structural_fingerprint(kitchen_sink()));
}

TEST(StructuralTest, SmallChangesAreDetected) {
  Function base = matmul(16);
  uint64_t h = structural_hash(base);
  std::vector<std::pair<std::string, Function>> variants;
  auto block_of = [](const Function& f) {
    const Stmt* s = &f.body;
    while ((*s)->kind == StmtKind::For)
      s = &as<ForNode>(*s)->body;
    return *as<BlockRealizeNode>(*s);
  };
  auto with_block = [&](std::function<void(Block&)> edit) {
    Function f = base;
    BlockRealizeNode br = block_of(f);
    Block blk = *br.block;
    edit(blk);
    Stmt s = make_block_realize(br.iter_values, br.predicate, blk);
    f.body = transform_stmts(
        f.body, [&](const Stmt& x) { return x->kind == StmtKind::BlockRealize ? s : x; });
    return f;
  };
  variants.push_back({"extent", matmul(17)});
  {
    Function f = base;
    f.body = with_for_kind(f.body, ForKind::Parallel);
    variants.push_back({"for kind", f});
    f.body = with_for_kind(base.body, ForKind::ThreadBinding, "blockIdx.x");
    variants.push_back({"thread tag", f});
    f.body = with_annotations(base.body, {{"a", int64_t(1)}});
    variants.push_back({"annotation", f});
    f.body = with_annotations(base.body, {{"a", std::string("1")}});
    variants.push_back({"annotation kind", f});
    f = base;
    f.lowered = true;
    variants.push_back({"lowered", f});
    f = base;
    f.params[0] = with_scope(f.params[0], "shared");
    variants.push_back({"scope (and buffer identity)", f});
    f = base;
    std::swap(f.params[0], f.params[1]);
    variants.push_back({"param order", f});
  }
  variants.push_back({"block name", with_block([](Block& b) { b.name = "D"; })});
  variants.push_back(
      {"iter kind", with_block([](Block& b) { b.iter_vars[2].kind = IterKind::Spatial; })});
  variants.push_back({"init value", with_block([](Block& b) {
                        auto* st = as<StoreNode>(b.init);
                        b.init = make_store(st->buffer, st->indices,
                                            float_imm(std::nextafter(0.0, 1.0)));
                      })});
  variants.push_back({"negative zero", with_block([](Block& b) {
                        auto* st = as<StoreNode>(b.init);
                        b.init = make_store(st->buffer, st->indices, float_imm(-0.0));
                      })});
  variants.push_back({"no init", with_block([](Block& b) { b.init = nullptr; })});
  variants.push_back({"swapped operands", with_block([](Block& b) {
                        auto* st = as<StoreNode>(b.body);
                        b.body = make_store(st->buffer, st->indices,
                                            st->value->args[1] + st->value->args[0]);
                      })});
  variants.push_back(
      {"annotation on block", with_block([](Block& b) { b.annotations["x"] = int64_t(0); })});
  uint64_t fp = structural_fingerprint(base);
  for (auto& [what, f] : variants) {
    EXPECT_FALSE(structural_equal(base, f)) << what;
    EXPECT_NE(structural_hash(f), h) << what;
    EXPECT_NE(structural_fingerprint(f), fp) << what;
  }
}

TEST(StructuralTest, BindingStructureMatters) {
  // Same names, different binding: A[i] = i with i the inner vs. the outer loop variable.
  Buffer a = make_buffer("A", DType::i64(), {4});
  Expr i = make_var("i"), j = make_var("i");
  Stmt s1 = make_for(i, 4, make_for(j, 4, make_store(a, {i}, j)));
  Stmt s2 = make_for(i, 4, make_for(j, 4, make_store(a, {i}, i)));
  EXPECT_FALSE(structural_equal(s1, s2));
  EXPECT_NE(structural_hash(s1), structural_hash(s2));
  // One variable object bound by two sibling loops is the same as two distinct variables.
  Expr k = make_var("k"), k2 = make_var("k");
  Stmt shared =
      make_seq({make_for(k, 4, make_store(a, {k}, k)), make_for(k, 4, make_store(a, {k}, k))});
  Stmt distinct =
      make_seq({make_for(k, 4, make_store(a, {k}, k)), make_for(k2, 4, make_store(a, {k2}, k2))});
  EXPECT_TRUE(structural_equal(shared, distinct));
  EXPECT_EQ(print(shared), print(distinct));
}

TEST(StructuralTest, FreeVariablesMatchByFirstUse) {
  Expr x = make_var("x"), y = make_var("y"), z = make_var("z", DType::i32());
  EXPECT_TRUE(structural_equal(x + y, y + x)); // consistent renaming x <-> y
  EXPECT_FALSE(structural_equal(x + x, x + y));
  EXPECT_FALSE(structural_equal(x + int_imm(1), make_cast(DType::i64(), z) + int_imm(1)));
  EXPECT_NE(structural_hash(x + x), structural_hash(x + y));
  EXPECT_EQ(structural_hash(x * 2 + 1), structural_hash(y * 2 + 1));
  EXPECT_NE(structural_hash(Expr(int_imm(2))), structural_hash(Expr(int_imm(2, DType::i32()))));
}

TEST(StructuralTest, HashIsFnv1aOfTheCanonicalText) {
  // Recomputed here from the documented definition, so that any change to the hash function
  // (and so to every stored database key) is deliberate.
  auto fnv = [](const std::string& s) {
    uint64_t h = 14695981039346656037ULL;
    for (unsigned char c : s)
      h = (h ^ c) * 1099511628211ULL;
    return h;
  };
  Function f = matmul(8);
  EXPECT_EQ(structural_hash(f), fnv("mt-ir-v1 function\n" + print(f, {.canonical = true})));
  Expr e = make_var("q") * 3;
  EXPECT_EQ(structural_hash(e), fnv("mt-ir-v1 expr\n" + print(e, {.canonical = true})));
  EXPECT_EQ(print(e, {.canonical = true}), "var v0: i64\nv0 * 3");
  EXPECT_EQ(print(f, {.canonical = true}).substr(0, 44),
            "func f(b0: f32[8, 8], b1: f32[8, 8], b2: f32");
}

TEST(StructuralTest, FingerprintIsTheDigestOfTheCanonicalText) {
  // The digest recomputed byte by byte from its definition (the polynomial of the bytes + 1
  // modulo 2^61 - 1): the fingerprint stands for the canonical text, however it is computed.
  auto digest = [](const std::string& s) {
    const unsigned __int128 p = (uint64_t{1} << 61) - 1, base = 0x1f3d5b79a2c4e6f1ULL % p;
    unsigned __int128 h = 0;
    for (unsigned char c : s)
      h = (h * base + c + 1) % p;
    return static_cast<uint64_t>(h);
  };
  for (const Function& f : {matmul(8), kitchen_sink()})
    EXPECT_EQ(structural_fingerprint(f), digest(print(f, {.canonical = true})));
}

#ifdef MT_HAVE_WORKLOAD_LIBRARY
TEST(ParserTest, RoundTripEveryTestWorkload) {
  std::vector<std::string> specs = test_workload_specs();
  ASSERT_FALSE(specs.empty());
  for (const std::string& spec : specs) {
    SCOPED_TRACE(spec);
    expect_round_trip(make_workload(spec));
  }
}
#endif

// ---- shared subexpressions
// ------------------------------------------------------------------------

// e(0) = A[i]; e(n) = e(n-1) * e(n-1) + e(n-1): as a DAG (one node per level, as workloads
// with common subexpressions build it) or as the tree it stands for (3^n leaves).
Expr shared_chain(const Buffer& a, const Expr& i, int depth) {
  Expr e = make_load(a, {i});
  for (int d = 0; d < depth; ++d)
    e = e * e + e;
  return e;
}
Expr tree_chain(const Buffer& a, const Expr& i, int depth) {
  if (depth == 0) return make_load(a, {i});
  return tree_chain(a, i, depth - 1) * tree_chain(a, i, depth - 1) + tree_chain(a, i, depth - 1);
}

// The same loop variable bound by two loops, each storing the same expression: the printer's
// names differ between the loops, so the text of a shared node is only reused within a scope.
Function two_loops_storing(const std::function<Expr(const Buffer&, const Expr&)>& value) {
  Buffer a = make_buffer("A", DType::f32(), {8});
  Buffer b = make_buffer("B", DType::f32(), {8});
  Expr i = make_var("i");
  Expr v = value(a, i);
  Function f;
  f.name = "chain";
  f.params = {a, b};
  f.body = make_seq({make_for(i, 8, make_store(b, {i}, v)),
                     make_for(i, 8, make_store(b, {i}, v + make_load(a, {i})))});
  return f;
}

TEST(IrSharedSubexpressions, PrintAndHashADagAsTheTreeItStandsFor) {
  const int depth = 6;
  Function dag =
      two_loops_storing([&](const Buffer& a, const Expr& i) { return shared_chain(a, i, depth); });
  Function tree =
      two_loops_storing([&](const Buffer& a, const Expr& i) { return tree_chain(a, i, depth); });
  for (bool canonical : {false, true}) {
    std::string text = print(dag, PrintOptions{.canonical = canonical});
    EXPECT_EQ(text, print(tree, PrintOptions{.canonical = canonical}));
    // Both loops name their variable and print the 3^6 loads of the tree form.
    EXPECT_GE(text.size(), 2u * 729u * 4u);
  }
  EXPECT_EQ(structural_hash(dag), structural_hash(tree));
  EXPECT_EQ(structural_fingerprint(dag), structural_fingerprint(tree));
  EXPECT_TRUE(structural_equal(dag, tree));
  EXPECT_TRUE(structural_equal(parse_function(print(dag)), tree));
  // The same node free in a statement printed alone declares its variable once.
  Buffer a = make_buffer("A", DType::f32(), {8});
  Expr j = make_var("j");
  std::string alone = print(shared_chain(a, j, 3) + shared_chain(a, j, 3));
  EXPECT_EQ(alone, print(tree_chain(a, j, 3) + tree_chain(a, j, 3)));
}

TEST(IrSharedSubexpressions, FingerprintOfADagWhoseTextWouldNotFitInMemory) {
  // 2 x 3^40 loads as text; the fingerprint digests each shared level once per loop.
  Function deep =
      two_loops_storing([](const Buffer& a, const Expr& i) { return shared_chain(a, i, 40); });
  Function deeper =
      two_loops_storing([](const Buffer& a, const Expr& i) { return shared_chain(a, i, 41); });
  uint64_t fp = structural_fingerprint(deep);
  EXPECT_EQ(fp, structural_fingerprint(deep));
  EXPECT_NE(fp, structural_fingerprint(deeper));
}

TEST(IrSharedSubexpressions, TransformKeepsADagADag) {
  // 3^60 leaves as a tree: rewriting node by node in tree form would never finish.
  Buffer a = make_buffer("A", DType::f32(), {8});
  Expr i = make_var("i"), j = make_var("j");
  Expr e = shared_chain(a, i, 60);
  Expr r = substitute(e, VarMap{{i.get(), j}});
  ASSERT_FALSE(r.same_as(e));
  int levels = 0;
  for (Expr x = r; x->kind == ExprKind::Add; x = x->args[1], ++levels) {
    // (p * p) + p: one rewritten node shared by all three uses.
    ASSERT_EQ(x->args[0]->kind, ExprKind::Mul);
    EXPECT_TRUE(x->args[0]->args[0].same_as(x->args[1]));
    EXPECT_TRUE(x->args[0]->args[1].same_as(x->args[1]));
  }
  EXPECT_EQ(levels, 60);
  // The leaf reads A[j]: every variable was replaced.
  Expr leaf = r;
  while (leaf->kind != ExprKind::Load)
    leaf = leaf->args[1];
  EXPECT_TRUE(leaf->args[0].same_as(j));
  EXPECT_FALSE(uses_var(r, i.get()));
}

} // namespace
} // namespace mt
