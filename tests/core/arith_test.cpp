// Tests for integer arithmetic analysis (core/ir/arith.h): bounds, simplification, relaxation.
// Expected values are derived by brute-force evaluation where possible, not by re-running the
// simplifier's own rules.
#include "core/ir/arith.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/ir/buffer.h"

namespace mt {
namespace {

using Env = std::map<const ExprNode*, int64_t>;

int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Reference evaluator for integer/boolean expressions (no loads).
int64_t eval(const Expr& e, const Env& env) {
  const auto& a = e->args;
  switch (e->kind) {
  case ExprKind::IntImm:
    return e->int_value;
  case ExprKind::Var:
    return env.at(e.get());
  case ExprKind::Add:
    return eval(a[0], env) + eval(a[1], env);
  case ExprKind::Sub:
    return eval(a[0], env) - eval(a[1], env);
  case ExprKind::Mul:
    return eval(a[0], env) * eval(a[1], env);
  case ExprKind::FloorDiv: {
    int64_t d = eval(a[1], env);
    if (d == 0) throw std::runtime_error("division by zero");
    return fdiv(eval(a[0], env), d);
  }
  case ExprKind::FloorMod: {
    int64_t x = eval(a[0], env), d = eval(a[1], env);
    if (d == 0) throw std::runtime_error("modulo by zero");
    return x - fdiv(x, d) * d;
  }
  case ExprKind::Min:
    return std::min(eval(a[0], env), eval(a[1], env));
  case ExprKind::Max:
    return std::max(eval(a[0], env), eval(a[1], env));
  case ExprKind::EQ:
    return eval(a[0], env) == eval(a[1], env);
  case ExprKind::NE:
    return eval(a[0], env) != eval(a[1], env);
  case ExprKind::LT:
    return eval(a[0], env) < eval(a[1], env);
  case ExprKind::LE:
    return eval(a[0], env) <= eval(a[1], env);
  case ExprKind::GT:
    return eval(a[0], env) > eval(a[1], env);
  case ExprKind::GE:
    return eval(a[0], env) >= eval(a[1], env);
  case ExprKind::And:
    return eval(a[0], env) && eval(a[1], env);
  case ExprKind::Or:
    return eval(a[0], env) || eval(a[1], env);
  case ExprKind::Not:
    return !eval(a[0], env);
  case ExprKind::Select:
    return eval(a[0], env) ? eval(a[1], env) : eval(a[2], env);
  case ExprKind::Cast: {
    int64_t v = eval(a[0], env);
    return e->dtype.is_bool() ? v != 0 : v;
  }
  default:
    throw std::runtime_error(std::string("eval: unsupported ") + to_string(e->kind));
  }
}

bool is_const(const Expr& e, int64_t v) {
  return is_const_int(e, v);
}

// Minimal printer: enough to compare outputs textually (names, not identities).
std::string str(const Expr& e) {
  std::ostringstream os;
  const auto& a = e->args;
  switch (e->kind) {
  case ExprKind::IntImm:
    os << e->int_value;
    break;
  case ExprKind::Var:
    os << e->name;
    break;
  case ExprKind::Not:
    os << "!(" << str(a[0]) << ")";
    break;
  case ExprKind::Select:
    os << "select(" << str(a[0]) << ", " << str(a[1]) << ", " << str(a[2]) << ")";
    break;
  case ExprKind::Min:
  case ExprKind::Max:
    os << to_string(e->kind) << "(" << str(a[0]) << ", " << str(a[1]) << ")";
    break;
  case ExprKind::Cast:
    os << to_string(e->dtype) << "(" << str(a[0]) << ")";
    break;
  case ExprKind::Load: {
    os << e->buffer->name << "[";
    for (size_t i = 0; i < a.size(); ++i)
      os << (i ? ", " : "") << str(a[i]);
    os << "]";
    break;
  }
  default:
    if (is_binary(e->kind)) {
      os << "(" << str(a[0]) << " " << to_string(e->kind) << " " << str(a[1]) << ")";
    } else {
      os << to_string(e->kind);
    }
  }
  return os.str();
}

// Every assignment of `vars` within `ranges` (inclusive), calling f(env).
void for_all(const std::vector<Expr>& vars, const RangeMap& ranges,
             const std::function<void(const Env&)>& f) {
  Env env;
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == vars.size()) {
      f(env);
      return;
    }
    IntBound b = ranges.at(vars[i].get());
    for (int64_t v = b.min; v <= b.max; ++v) {
      env[vars[i].get()] = v;
      rec(i + 1);
    }
  };
  rec(0);
}

// ---- simplification: tiling identities ----------------------------------------------------------

TEST(ArithSimplify, SplitQuotientAndRemainder) {
  Expr i0 = make_var("i0"), i1 = make_var("i1");
  RangeMap r{{i0.get(), {0, 7}}, {i1.get(), {0, 31}}};
  Expr fused = i0 * 32 + i1;
  EXPECT_TRUE(simplify(floordiv(fused, 32), r).same_as(i0));
  EXPECT_TRUE(simplify(floormod(fused, 32), r).same_as(i1));
  // The identities need the range of i1: without it nothing may be dropped.
  Expr q = simplify(floordiv(fused, 32));
  EXPECT_FALSE(q.same_as(i0));
  for_all({i0, i1}, {{i0.get(), {0, 3}}, {i1.get(), {-40, 40}}},
          [&](const Env& env) { EXPECT_EQ(eval(q, env), fdiv(eval(fused, env), 32)); });
}

TEST(ArithSimplify, MultiplyThenDivide) {
  Expr x = make_var("x");
  EXPECT_TRUE(simplify(floordiv(x * 8, 8)).same_as(x));
  EXPECT_TRUE(is_const(simplify(floormod(x * 8, 8)), 0));
  EXPECT_TRUE(is_const(simplify(floormod(x * 8 + 4, 2)), 0));
}

TEST(ArithSimplify, FusedLoopRecombines) {
  Expr f = make_var("f");
  RangeMap r{{f.get(), {0, 16 * 64 - 1}}};
  Expr i = floordiv(f, 64), j = floormod(f, 64);
  EXPECT_TRUE(simplify(i * 64 + j, r).same_as(f));
  // Order of the two terms does not matter, nor does a common scale.
  EXPECT_TRUE(simplify(j + i * 64, r).same_as(f));
  Expr scaled = simplify(i * 128 + j * 2 + 1, r);
  EXPECT_EQ(linear_coefficient(scaled, f.get()), 2);
  for_all({f}, r, [&](const Env& env) { EXPECT_EQ(eval(scaled, env), 2 * env.at(f.get()) + 1); });
}

TEST(ArithSimplify, NestedSplits) {
  // A loop of 256 split by 32, and its outer part split again by 4: i = (a*4 + b)*32 + c.
  Expr a = make_var("a"), b = make_var("b"), c = make_var("c");
  RangeMap r{{a.get(), {0, 1}}, {b.get(), {0, 3}}, {c.get(), {0, 31}}};
  Expr i = (a * 4 + b) * 32 + c;
  Expr outer = simplify(floordiv(i, 32), r);
  EXPECT_EQ(linear_coefficient(outer, a.get()), 4);
  EXPECT_EQ(linear_coefficient(outer, b.get()), 1);
  EXPECT_FALSE(uses_var(outer, c.get()));
  EXPECT_TRUE(simplify(floordiv(i, 128), r).same_as(a));
  EXPECT_TRUE(simplify(floormod(floordiv(i, 32), 4), r).same_as(b));
  // (x // 32) // 4 == x // 128 and (x % 128) % 32 == x % 32 for any x.
  Expr x = make_var("x");
  Expr dd = simplify(floordiv(floordiv(x, 32), 4));
  Expr mm = simplify(floormod(floormod(x, 128), 32));
  EXPECT_EQ(str(dd), "(x // 128)");
  EXPECT_EQ(str(mm), "(x % 32)");
}

TEST(ArithSimplify, FuseThenSplit) {
  // fuse(i in 16, j in 32) -> f, then split f by 16 -> f0*16 + f1; recover i and j.
  Expr f0 = make_var("f0"), f1 = make_var("f1");
  RangeMap r{{f0.get(), {0, 31}}, {f1.get(), {0, 15}}};
  Expr f = f0 * 16 + f1;
  Expr i = simplify(floordiv(f, 32), r), j = simplify(floormod(f, 32), r);
  EXPECT_FALSE(uses_var(i, f1.get()));
  EXPECT_TRUE(uses_var(j, f1.get()));
  for_all({f0, f1}, r, [&](const Env& env) {
    int64_t fv = env.at(f0.get()) * 16 + env.at(f1.get());
    EXPECT_EQ(eval(i, env), fv / 32);
    EXPECT_EQ(eval(j, env), fv % 32);
  });
  // i*32 + j gives back the fused index.
  Expr back = simplify(i * 32 + j, r);
  EXPECT_EQ(linear_coefficient(back, f0.get()), 16);
  EXPECT_EQ(linear_coefficient(back, f1.get()), 1);
  EXPECT_EQ(str(back), "((f0 * 16) + f1)");
}

// ---- simplification: folding --------------------------------------------------------------------

TEST(ArithSimplify, ConstantFoldingAndLinearTerms) {
  Expr x = make_var("x"), y = make_var("y");
  EXPECT_TRUE(simplify((x + 3) - 3).same_as(x));
  EXPECT_EQ(linear_coefficient(simplify(x * 4 + x * 2), x.get()), 6);
  EXPECT_TRUE(is_const(simplify(Expr(2) * 3 + 4 - x + x), 10));
  EXPECT_TRUE(is_const(simplify((x + y) * 2 - x * 2 - y - y), 0));
  EXPECT_EQ(str(simplify(y * 2 + x - y - y + 5 - 6)), "(x - 1)");
  EXPECT_EQ(str(simplify(Expr(31) - x)), "(31 - x)");
  EXPECT_TRUE(simplify(min(x, x + 1)).same_as(x));
  EXPECT_TRUE(simplify(max(x - 2, x)).same_as(x));
}

TEST(ArithSimplify, ComparisonsAndBooleans) {
  Expr x = make_var("x"), y = make_var("y");
  RangeMap r{{x.get(), {0, 7}}, {y.get(), {0, 3}}};
  EXPECT_TRUE(is_const(simplify(x < 8, r), 1));
  EXPECT_TRUE(is_const(simplify(x >= 8, r), 0));
  EXPECT_TRUE(is_const(simplify(x * 4 + y < 32, r), 1));
  EXPECT_TRUE(is_const(simplify(eq(x * 2, 5)), 0));
  EXPECT_TRUE(is_const(simplify(ne(x * 2, 5)), 1));
  EXPECT_TRUE(is_const(simplify(x + 1 > x), 1));
  // A common factor is divided out, rounding the constant the exact way.
  EXPECT_EQ(str(simplify(x * 4 < 10)), "(x < 3)");
  EXPECT_EQ(str(simplify(x * 4 <= 10)), "(x <= 2)");
  EXPECT_EQ(str(simplify(x * 4 > 10)), "(x > 2)");
  EXPECT_EQ(str(simplify(x * 4 >= 10)), "(x >= 3)");
  EXPECT_EQ(str(simplify(eq(x * 4 + y * 8, 8))), "((x + (y * 2)) == 2)");
  EXPECT_EQ(str(simplify(10 > x * 4)), "(x < 3)");
  Expr undecided = x < 5;
  EXPECT_TRUE(simplify(undecided && (y < 4), r).same_as(undecided));
  EXPECT_TRUE(is_const(simplify(undecided && (y > 3), r), 0));
  EXPECT_TRUE(is_const(simplify(undecided || (y < 4), r), 1));
  EXPECT_EQ(str(simplify(make_not(make_not(undecided)), r)), "(x < 5)");
  EXPECT_EQ(str(simplify(make_not(undecided), r)), "(x >= 5)");
  EXPECT_TRUE(simplify(make_select(y < 4, x, y), r).same_as(x));
  EXPECT_TRUE(simplify(min(x, y + 8), r).same_as(x));
  EXPECT_EQ(str(simplify(max(x, y + 8), r)), "(y + 8)");
}

TEST(ArithSimplify, FloatsOnlyTouchIndices) {
  Expr i0 = make_var("i0"), i1 = make_var("i1");
  RangeMap r{{i0.get(), {0, 3}}, {i1.get(), {0, 31}}};
  Buffer A = make_buffer("A", DType::f32(), {128});
  Expr a = make_load(A, {i0 * 32 + i1});
  Expr idx = floordiv(i0 * 32 + i1, 32);
  Expr f = (a + float_imm(1.0)) * make_cast(DType::f32(), idx) + float_imm(2.0);
  Expr s = simplify(f, r);
  // The float structure is kept; only the cast's index got simplified.
  ASSERT_EQ(s->kind, ExprKind::Add);
  ASSERT_EQ(s->args[0]->kind, ExprKind::Mul);
  EXPECT_TRUE(s->args[0]->args[0].same_as(f->args[0]->args[0]));
  const Expr& cast = s->args[0]->args[1];
  ASSERT_EQ(cast->kind, ExprKind::Cast);
  EXPECT_TRUE(cast->args[0].same_as(i0));
  EXPECT_TRUE(s->dtype == DType::f32());
  // Unchanged input is returned as is.
  EXPECT_TRUE(simplify(a, r).same_as(a));
}

TEST(ArithSimplify, LoadIndicesAndCasts) {
  Expr i = make_var("i"), j = make_var("j");
  RangeMap r{{i.get(), {0, 3}}, {j.get(), {0, 7}}};
  Buffer B = make_buffer("B", DType::i32(), {32});
  Expr load = make_load(B, {floormod(i * 8 + j, 8) + i * 8});
  Expr s = simplify(load, r);
  EXPECT_EQ(str(s), "B[(j + (i * 8))]");
  // Loads are atoms: equal loads combine.
  Expr l64 = make_cast(DType::i64(), load);
  Expr twice = simplify(l64 + l64 - l64 * 2 + 1, r);
  EXPECT_TRUE(is_const(twice, 1));
  Expr narrow = make_cast(DType::i64(), make_cast(DType::i32(), i + 1));
  EXPECT_EQ(str(simplify(narrow, r)), "(i + 1)");
}

TEST(ArithSimplify, DeterministicOutput) {
  // Output order follows the input, never pointer values: build the same expression with
  // freshly allocated variables many times (interleaving allocations) and compare text.
  std::string first;
  std::vector<Expr> keep;
  for (int round = 0; round < 20; ++round) {
    for (int k = 0; k < round; ++k)
      keep.push_back(make_var("pad"));
    Expr c = make_var("c"), b = make_var("b"), a = make_var("a");
    RangeMap r{{a.get(), {0, 3}}, {b.get(), {0, 7}}, {c.get(), {0, 15}}};
    Expr e = floordiv(c * 16 + a * 2 + b * 8 + 1, 4) + floormod(b * 3 + a, 5) + c * a - b + c;
    std::string s = str(simplify(e, r));
    if (round == 0) first = s;
    EXPECT_EQ(s, first);
  }
  EXPECT_FALSE(first.empty());
}

// ---- bounds -------------------------------------------------------------------------------------

TEST(ArithBound, BasicCases) {
  Expr x = make_var("x"), y = make_var("y");
  RangeMap r{{x.get(), {0, 7}}, {y.get(), {-3, 4}}};
  auto b = [&](const Expr& e) { return bound_of(e, r); };
  EXPECT_EQ(b(Expr(5)).min, 5);
  EXPECT_EQ(b(x + y).min, -3);
  EXPECT_EQ(b(x + y).max, 11);
  EXPECT_EQ(b(x - y).min, -4);
  EXPECT_EQ(b(x - y).max, 10);
  EXPECT_EQ(b(x * y).min, -21);
  EXPECT_EQ(b(x * y).max, 28);
  EXPECT_EQ(b(floordiv(y, 2)).min, -2);
  EXPECT_EQ(b(floordiv(y, 2)).max, 2);
  EXPECT_EQ(b(floormod(y, 4)).min, 0);
  EXPECT_EQ(b(floormod(y, 4)).max, 3);
  EXPECT_EQ(b(floormod(x, 16)).max, 7);
  EXPECT_EQ(b(min(x, y)).max, 4);
  EXPECT_EQ(b(max(x, y)).min, 0);
  EXPECT_EQ(b(x < 8).min, 1);
  EXPECT_EQ(b(x < 4).min, 0);
  EXPECT_EQ(b(x < 4).max, 1);
  EXPECT_EQ(b(make_select(x < 4, y, x + 10)).max, 17);
  EXPECT_EQ(b(make_cast(DType::u8(), make_var("w", DType::i32()))).max, 255);
  // Unknown variables are unbounded; arithmetic on them saturates instead of overflowing.
  Expr u = make_var("u");
  EXPECT_FALSE(b(u).bounded());
  IntBound big = b(u * 1000000000 * 1000000000 + 5);
  EXPECT_EQ(big.min, IntBound::kNegInf);
  EXPECT_EQ(big.max, IntBound::kPosInf);
  IntBound half = b(max(u, 3));
  EXPECT_EQ(half.min, 3);
  EXPECT_EQ(half.max, IntBound::kPosInf);
  Expr v = make_var("v");
  RangeMap wide{{v.get(), {int64_t(1) << 40, int64_t(1) << 41}}};
  IntBound huge = bound_of(v * v * v, wide);
  EXPECT_EQ(huge.max, IntBound::kPosInf);
  EXPECT_EQ(bound_of(v * -v * v, wide).min, IntBound::kNegInf);
}

// ---- prove, linear_coefficient ------------------------------------------------------------------

TEST(ArithProve, UsesRanges) {
  Expr i = make_var("i"), j = make_var("j");
  RangeMap r{{i.get(), {0, 3}}, {j.get(), {0, 31}}};
  EXPECT_TRUE(prove(i * 32 + j < 128, r));
  EXPECT_FALSE(prove(i * 32 + j < 127, r));
  EXPECT_TRUE(prove(floormod(j, 8) < 8));
  EXPECT_FALSE(prove(i < 4));
  EXPECT_TRUE(prove(i + 1 > i));
}

TEST(ArithLinear, Coefficients) {
  Expr x = make_var("x"), y = make_var("y");
  EXPECT_EQ(linear_coefficient(x * 3 + y * 2 + 1, x.get()), 3);
  EXPECT_EQ(linear_coefficient((x + y) * 4 - x, x.get()), 3);
  EXPECT_EQ(linear_coefficient(y * 5, x.get()), 0);
  EXPECT_EQ(linear_coefficient(x * y, x.get()), std::nullopt);
  EXPECT_EQ(linear_coefficient(floordiv(x, 2) + x, x.get()), std::nullopt);
}

// ---- relax --------------------------------------------------------------------------------------

TEST(ArithRelax, AffineTile) {
  Expr i0 = make_var("i0"), i1 = make_var("i1");
  RangeMap relaxed{{i1.get(), {0, 31}}};
  RangeMap ctx{{i0.get(), {0, 7}}};
  auto r = relax(i0 * 32 + i1, relaxed, ctx);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extent, 32);
  EXPECT_EQ(linear_coefficient(r->min, i0.get()), 32);
  EXPECT_FALSE(uses_var(r->min, i1.get()));
  // Negative coefficient: the minimum is reached at the top of the relaxed range.
  auto n = relax(i0 * 32 - i1 * 2, relaxed, ctx);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->extent, 63);
  for_all({i0}, ctx,
          [&](const Env& env) { EXPECT_EQ(eval(n->min, env), env.at(i0.get()) * 32 - 62); });
}

TEST(ArithRelax, ConvWindow) {
  Expr h = make_var("h"), kh = make_var("kh");
  RangeMap relaxed{{kh.get(), {0, 2}}};
  RangeMap ctx{{h.get(), {0, 13}}};
  auto r = relax(h * 2 + kh - 1, relaxed, ctx);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extent, 3);
  EXPECT_EQ(str(r->min), "((h * 2) - 1)");
  // Relaxing both: a constant window over the whole range.
  RangeMap both{{kh.get(), {0, 2}}, {h.get(), {0, 13}}};
  auto all = relax(h * 2 + kh - 1, both);
  ASSERT_TRUE(all);
  EXPECT_TRUE(is_const(all->min, -1));
  EXPECT_EQ(all->extent, 29);
}

TEST(ArithRelax, DivModAndUnbounded) {
  Expr o = make_var("o"), f = make_var("f");
  RangeMap ctx{{o.get(), {0, 15}}};
  // f // 4 over a 16-wide aligned tile touches 4 values.
  auto d = relax(floordiv(o * 16 + f, 4), {{f.get(), {0, 15}}}, ctx);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->extent, 4);
  EXPECT_EQ(linear_coefficient(d->min, o.get()), 4);
  // Unaligned tile: 6 values starting at offset 0 or 2 within a block of 4 touch 2 blocks.
  auto u = relax(floordiv(o * 6 + f, 4), {{f.get(), {0, 5}}}, ctx);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->extent, 2);
  // Unknown alignment: 6 values can straddle 3 blocks.
  auto u3 = relax(floordiv(o + f, 4), {{f.get(), {0, 5}}}, ctx);
  ASSERT_TRUE(u3);
  EXPECT_EQ(u3->extent, 3);
  // Modulo wraps: the whole [0, c).
  auto m = relax(floormod(o + f, 8), {{f.get(), {0, 3}}}, ctx);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->extent, 8);
  EXPECT_TRUE(is_const(m->min, 0));
  auto m2 = relax(floormod(o * 8 + f, 8), {{f.get(), {0, 3}}}, ctx);
  ASSERT_TRUE(m2);
  EXPECT_EQ(m2->extent, 4);
  EXPECT_TRUE(is_const(m2->min, 0));
  // No finite extent without bounds on the relaxed variable.
  EXPECT_FALSE(relax(o + f, {{f.get(), IntBound{}}}, ctx));
  // Non-affine in a relaxed and a fixed variable: fixed one taken over its context.
  auto p = relax(o * f, {{f.get(), {0, 3}}}, ctx);
  ASSERT_TRUE(p);
  EXPECT_TRUE(is_const(p->min, 0));
  EXPECT_EQ(p->extent, 46);
  EXPECT_FALSE(relax(o * f, {{f.get(), {0, 3}}}));
}

TEST(ArithRelax, MinMaxSelect) {
  // A split loop of 91 by 32 clamped with min: each tile keeps its symbolic start.
  Expr i0 = make_var("i0"), i1 = make_var("i1"), c = make_var("c");
  RangeMap ctx{{i0.get(), {0, 3}}, {c.get(), {0, 1}}};
  RangeMap relaxed{{i1.get(), {0, 31}}};
  auto m = relax(min(i0 * 32 + i1, 90), relaxed, ctx);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->extent, 32);
  EXPECT_EQ(str(m->min), "min((i0 * 32), 90)");
  auto x = relax(max(i0 * 32 + i1 - 8, 0), relaxed, ctx);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->extent, 32);
  auto s = relax(make_select(eq(c, 0), i0 * 32 + i1, i0 * 32 + i1 * 2), relaxed, ctx);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->extent, 63);
  EXPECT_EQ(str(s->min), "(i0 * 32)");
}

// ---- statements ---------------------------------------------------------------------------------

TEST(ArithStmt, UsesLoopAndBlockRanges) {
  Buffer A = make_buffer("A", DType::f32(), {256});
  Buffer B = make_buffer("B", DType::f32(), {8});
  Expr i0 = make_var("i0"), i1 = make_var("i1"), vi = make_var("vi"), vj = make_var("vj");
  Block blk;
  blk.name = "B";
  blk.iter_vars = {{vi, 8, IterKind::Spatial}, {vj, 32, IterKind::Reduce}};
  Expr flat = vi * 32 + vj;
  blk.init = make_store(B, {floordiv(flat, 32)}, float_imm(0.0));
  blk.body = make_store(B, {floordiv(flat, 32)},
                        make_load(B, {floordiv(flat, 32)}) + make_load(A, {flat}));
  Expr fused = i0 * 32 + i1;
  Stmt realize = make_block_realize({floordiv(fused, 32), floormod(fused, 32)}, fused < 256, blk);
  Stmt loops = make_for(i0, 8, make_for(i1, 32, realize));
  Stmt s = simplify(loops);
  ASSERT_EQ(s->kind, StmtKind::For);
  auto* inner = as<ForNode>(as<ForNode>(s)->body);
  ASSERT_EQ(inner->kind, StmtKind::For);
  EXPECT_EQ(inner->extent, 32);
  auto* br = as<BlockRealizeNode>(inner->body);
  EXPECT_TRUE(br->iter_values[0].same_as(i0));
  EXPECT_TRUE(br->iter_values[1].same_as(i1));
  EXPECT_TRUE(is_const(br->predicate, 1));
  auto* init = as<StoreNode>(br->block->init);
  EXPECT_TRUE(init->indices[0].same_as(vi));
  auto* body = as<StoreNode>(br->block->body);
  EXPECT_TRUE(body->indices[0].same_as(vi));
  EXPECT_EQ(body->value->args[0]->args[0].get(), vi.get());
  EXPECT_EQ(br->block->name, "B");
  // Without ranges only range-free rewrites apply; a store with nothing to do stays the same.
  Stmt plain = make_store(B, {floormod(vj, 8)}, float_imm(0.0));
  EXPECT_EQ(simplify(plain), plain);
  Stmt alone = simplify(blk.body);
  EXPECT_EQ(str(as<StoreNode>(alone)->indices[0]), "(vi + (vj // 32))");
}

TEST(ArithStmt, IfConditionNarrowsRange) {
  Buffer A = make_buffer("A", DType::f32(), {64});
  Expr i = make_var("i");
  Stmt st = make_store(A, {floormod(i, 16)}, float_imm(1.0));
  Stmt s = simplify(make_for(i, 64, make_if(i < 16, st)));
  auto* iff = as<IfThenElseNode>(as<ForNode>(s)->body);
  ASSERT_EQ(iff->kind, StmtKind::IfThenElse);
  EXPECT_TRUE(as<StoreNode>(iff->then_case)->indices[0].same_as(i));
}

// ---- randomized properties ----------------------------------------------------------------------

class RandomExprs {
public:
  RandomExprs(uint32_t seed, std::vector<Expr> vars, std::vector<Expr> divisor_vars = {})
      : rng_(seed), vars_(std::move(vars)), divisor_vars_(std::move(divisor_vars)) {}

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  Expr leaf() {
    if (pick(3) == 0) return Expr(static_cast<int64_t>(pick(13) - 4));
    return vars_[pick(static_cast<int>(vars_.size()))];
  }

  Expr cond(int depth) {
    static const ExprKind kinds[] = {ExprKind::LT, ExprKind::LE, ExprKind::GT,
                                     ExprKind::GE, ExprKind::EQ, ExprKind::NE};
    Expr c = make_binary(kinds[pick(6)], gen(depth - 1), gen(depth - 1));
    if (depth > 1 && pick(4) == 0)
      c = make_binary(pick(2) ? ExprKind::And : ExprKind::Or, c, cond(depth - 1));
    if (pick(6) == 0) c = make_not(c);
    return c;
  }

  // Mostly constants; sometimes a variable that never takes the value 0.
  Expr divisor() {
    static const int64_t constants[] = {1, 2, 3, 4, 8, 16, -3};
    if (!divisor_vars_.empty() && pick(3) == 0)
      return divisor_vars_[pick(static_cast<int>(divisor_vars_.size()))];
    return Expr(constants[pick(7)]);
  }

  Expr gen(int depth) {
    if (depth <= 0 || pick(5) == 0) return leaf();
    static const int64_t divisors[] = {1, 2, 3, 4, 8, 16, -3};
    switch (pick(10)) {
    case 0:
    case 1:
      return gen(depth - 1) + gen(depth - 1);
    case 2:
      return gen(depth - 1) - gen(depth - 1);
    case 3:
      return gen(depth - 1) * (pick(2) ? Expr(static_cast<int64_t>(pick(9) - 3)) : gen(depth - 2));
    case 4:
      return floordiv(gen(depth - 1), divisor());
    case 5:
      return floormod(gen(depth - 1), divisor());
    case 6:
      return pick(2) ? min(gen(depth - 1), gen(depth - 1)) : max(gen(depth - 1), gen(depth - 1));
    case 7:
      return make_select(cond(depth - 1), gen(depth - 1), gen(depth - 1));
    case 8: {
      // Split/fuse-like shapes, which the div/mod rules target.
      Expr a = gen(depth - 1);
      int64_t c = divisors[pick(5) + 1], c2 = divisors[pick(5) + 1];
      switch (pick(5)) {
      case 0:
        return floordiv(a, c) * c + floormod(a, c);
      case 1:
        return floordiv(a * c + leaf(), c);
      case 2:
        return floordiv(floordiv(a, c) + leaf(), c2);
      case 3:
        return floormod(floormod(a, c * c2) + leaf(), c2);
      default:
        return floormod(floordiv(a, c), c2) * c + floormod(a, c);
      }
    }
    default:
      return gen(depth - 1) * gen(depth - 1);
    }
  }

private:
  std::mt19937 rng_;
  std::vector<Expr> vars_;
  std::vector<Expr> divisor_vars_;
};

// Simplifies random expressions and checks, over every assignment in the ranges, that the
// value is unchanged, that bounds of input and output contain every value, and that `prove`
// only claims what holds; returns how many expressions were checked.
int check_random_simplify(uint32_t seed, int count, int depth, const std::vector<Expr>& vars,
                          const std::vector<Expr>& divisor_vars, const RangeMap& r) {
  RandomExprs gen(seed, vars, divisor_vars);
  std::vector<Expr> all = vars;
  all.insert(all.end(), divisor_vars.begin(), divisor_vars.end());
  int checked = 0;
  for (int n = 0; n < count; ++n) {
    Expr e = gen.pick(4) == 0 ? gen.cond(depth - 1) : gen.gen(depth);
    Expr s = simplify(e, r);
    EXPECT_TRUE(s && s->dtype == e->dtype) << str(e);
    if (!s) continue;
    IntBound be = bound_of(e, r), bs = bound_of(s, r);
    bool proved = e->dtype.is_bool() && prove(e, r);
    bool ok = true;
    for_all(all, r, [&](const Env& env) {
      if (!ok) return;
      int64_t v = eval(e, env);
      ok = eval(s, env) == v && v >= be.min && v <= be.max && v >= bs.min && v <= bs.max &&
           (!proved || v != 0);
      EXPECT_EQ(eval(s, env), v) << str(e) << "  ==>  " << str(s);
      EXPECT_TRUE(v >= be.min && v <= be.max) << str(e);
      EXPECT_TRUE(v >= bs.min && v <= bs.max) << str(s);
      EXPECT_TRUE(!proved || v != 0) << str(e);
    });
    // Simplifying twice changes nothing more.
    EXPECT_EQ(str(simplify(s, r)), str(s)) << str(e);
    if (!ok) return checked;
    ++checked;
  }
  return checked;
}

TEST(ArithRandom, SimplifyPreservesValueAndBoundsAreSound) {
  Expr x = make_var("x"), y = make_var("y"), z = make_var("z");
  RangeMap r{{x.get(), {0, 7}}, {y.get(), {-3, 4}}, {z.get(), {0, 5}}};
  EXPECT_EQ(check_random_simplify(12345, 1500, 4, {x, y, z}, {}, r), 1500);
  EXPECT_EQ(check_random_simplify(2024, 600, 5, {x, y, z}, {}, r), 600);
}

TEST(ArithRandom, SimplifyWithVariableDivisors) {
  Expr x = make_var("x"), y = make_var("y"), d = make_var("d"), n = make_var("n");
  RangeMap r{{x.get(), {0, 9}}, {y.get(), {-4, 5}}, {d.get(), {1, 3}}, {n.get(), {-2, -1}}};
  EXPECT_EQ(check_random_simplify(31337, 800, 4, {x, y}, {d, n}, r), 800);
}

// Regression: (X % 4 + z) % 2 lost the constant of X = z - 1 when dropping the inner modulo.
TEST(ArithRandom, ModOfModKeepsConstant) {
  Expr z = make_var("z");
  RangeMap r{{z.get(), {0, 5}}};
  Expr e = floormod(floormod(floordiv(z * 8 - 1, 8), 4) + z, 2);
  Expr s = simplify(e, r);
  for_all({z}, r, [&](const Env& env) { EXPECT_EQ(eval(s, env), eval(e, env)) << str(s); });
}

TEST(ArithRandom, RelaxCoversAllValues) {
  Expr x = make_var("x"), y = make_var("y"), z = make_var("z");
  std::vector<Expr> vars{x, y, z};
  RangeMap full{{x.get(), {0, 7}}, {y.get(), {-3, 4}}, {z.get(), {0, 5}}};
  RandomExprs gen(777, vars);
  int exact = 0, found = 0;
  for (int n = 0; n < 600; ++n) {
    Expr e = gen.gen(3);
    if (!e->dtype.is_int()) continue;
    // Relax a random non-empty subset of the variables, keep the others fixed.
    RangeMap relaxed, ctx;
    std::vector<Expr> fixed_vars, relaxed_vars;
    int mask = 1 + gen.pick(7);
    for (int k = 0; k < 3; ++k) {
      if (mask & (1 << k)) {
        relaxed[vars[k].get()] = full.at(vars[k].get());
        relaxed_vars.push_back(vars[k]);
      } else {
        ctx[vars[k].get()] = full.at(vars[k].get());
        fixed_vars.push_back(vars[k]);
      }
    }
    auto rr = relax(e, relaxed, ctx);
    if (!rr) continue;
    ++found;
    ASSERT_GE(rr->extent, 1);
    for (const Expr& v : relaxed_vars)
      ASSERT_FALSE(uses_var(rr->min, v.get())) << str(e);
    bool tight = true;
    for_all(fixed_vars, ctx, [&](const Env& fixed) {
      int64_t lo = eval(rr->min, fixed);
      int64_t seen_min = INT64_MAX, seen_max = INT64_MIN;
      for_all(relaxed_vars, relaxed, [&](const Env& rel) {
        Env env = fixed;
        env.insert(rel.begin(), rel.end());
        int64_t v = eval(e, env);
        seen_min = std::min(seen_min, v);
        seen_max = std::max(seen_max, v);
        ASSERT_GE(v, lo) << str(e) << " min " << str(rr->min);
        ASSERT_LT(v, lo + rr->extent) << str(e) << " min " << str(rr->min);
      });
      tight = tight && seen_min == lo && seen_max == lo + rr->extent - 1;
    });
    exact += tight;
  }
  EXPECT_GT(found, 300);
  EXPECT_GT(exact, 0);
}

TEST(ArithRandom, RelaxIsExactForAffine) {
  Expr x = make_var("x"), y = make_var("y"), z = make_var("z");
  RangeMap ctx{{x.get(), {0, 7}}};
  RangeMap relaxed{{y.get(), {-3, 4}}, {z.get(), {0, 5}}};
  std::mt19937 rng(99);
  auto coef = [&]() {
    return static_cast<int64_t>(std::uniform_int_distribution<int>(-6, 6)(rng));
  };
  for (int n = 0; n < 200; ++n) {
    int64_t a = coef(), b = coef(), c = coef(), d = coef();
    Expr e = x * a + y * b + z * c + d;
    auto rr = relax(e, relaxed, ctx);
    ASSERT_TRUE(rr);
    int64_t abs_b = b < 0 ? -b : b, abs_c = c < 0 ? -c : c;
    EXPECT_EQ(rr->extent, abs_b * 7 + abs_c * 5 + 1);
    for_all({x}, ctx, [&](const Env& env) {
      int64_t xv = env.at(x.get());
      int64_t expect = a * xv + d + (b > 0 ? -3 * b : 4 * b) + (c > 0 ? 0 : 5 * c);
      EXPECT_EQ(eval(rr->min, env), expect);
    });
  }
}

} // namespace
} // namespace mt
