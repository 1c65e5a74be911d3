// Random program expressions (sdk/program.hpp) for the tests of the SDK's analyses: integer
// index expressions over three variables and two buffers, with a plain int64 evaluator as the
// reference, and float expressions with math calls for structural equality.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "metatune/sdk/program.hpp"

namespace mt::test {

namespace P = mt::sdk::program;

struct ExprGen {
  std::mt19937_64 rng;
  std::vector<P::Expr> vars;   // i64 variables, ids 1..3
  std::vector<P::Buffer> bufs; // 1-d i64 buffers (indexed loads) and f32 ones

  explicit ExprGen(uint64_t seed) : rng(seed) {
    for (int64_t id = 1; id <= 3; ++id)
      vars.push_back(P::make_var("v" + std::to_string(id), P::DType::i64(), id));
    bufs.push_back(P::make_buffer("A", P::DType::i64(), {64}, "global", 101));
    bufs.push_back(P::make_buffer("B", P::DType::i64(), {64}, "global", 102));
  }

  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }

  // +, -, * by anything, floordiv / floormod / min / max / select / loads: anything the
  // analyses may meet in an index.
  P::Expr index(int depth) {
    if (depth == 0 || pick(0, 3) == 0)
      return pick(0, 2) ? vars[pick(0, 2)] : P::int_imm(pick(-5, 5));
    switch (pick(0, 9)) {
    case 0:
    case 1:
      return index(depth - 1) + index(depth - 1);
    case 2:
      return index(depth - 1) - index(depth - 1);
    case 3:
      return index(depth - 1) * index(depth - 1);
    case 4:
      return P::floordiv(index(depth - 1), P::int_imm(pick(1, 4)));
    case 5:
      return P::floormod(index(depth - 1), P::int_imm(pick(1, 4)));
    case 6:
      return pick(0, 1) ? P::min(index(depth - 1), index(depth - 1))
                        : P::max(index(depth - 1), index(depth - 1));
    case 7:
      return P::make_select(index(depth - 1) < index(depth - 1), index(depth - 1),
                            index(depth - 1));
    case 8:
      return P::make_load(bufs[pick(0, 1)], {index(depth - 1)});
    default:
      return index(depth - 1) * P::int_imm(pick(-3, 3));
    }
  }

  // Only +, -, multiplication by a constant (possibly a constant subexpression), vars and
  // immediates: always affine.
  P::Expr affine(int depth) {
    if (depth == 0 || pick(0, 3) == 0)
      return pick(0, 2) ? vars[pick(0, 2)] : P::int_imm(pick(-5, 5));
    switch (pick(0, 3)) {
    case 0:
      return affine(depth - 1) + affine(depth - 1);
    case 1:
      return affine(depth - 1) - affine(depth - 1);
    case 2:
      return affine(depth - 1) * (P::int_imm(pick(-3, 3)) + P::int_imm(pick(-2, 2)));
    default:
      return P::int_imm(pick(-3, 3)) * affine(depth - 1);
    }
  }

  // A float expression with calls, casts of index expressions and loads.
  P::Expr value(int depth) {
    static const P::MathFn fns[] = {P::MathFn::Exp, P::MathFn::Tanh, P::MathFn::Sqrt,
                                    P::MathFn::Abs, P::MathFn::Sigmoid};
    if (depth == 0 || pick(0, 4) == 0)
      return pick(0, 1) ? P::float_imm(static_cast<double>(pick(-8, 8)) / 4)
                        : P::make_cast(P::DType::f32(), index(1));
    switch (pick(0, 4)) {
    case 0:
      return value(depth - 1) + value(depth - 1);
    case 1:
      return value(depth - 1) * value(depth - 1);
    case 2:
      return P::call(fns[pick(0, 4)], value(depth - 1));
    case 3:
      return P::pow(value(depth - 1), value(depth - 1));
    default:
      return P::max(value(depth - 1), value(depth - 1));
    }
  }

  std::map<int64_t, int64_t> env(int64_t lo, int64_t hi) {
    std::map<int64_t, int64_t> out;
    for (const P::Expr& v : vars)
      out[v->var_id] = pick(lo, hi);
    return out;
  }
};

inline int64_t floordiv_ref(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// The value of an integer expression; a load reads a fixed pseudo-random memory.
inline int64_t eval(const P::Expr& e, const std::map<int64_t, int64_t>& env) {
  auto a = [&](size_t i) { return eval(e->args[i], env); };
  switch (e->kind) {
  case P::ExprKind::IntImm:
    return e->int_value;
  case P::ExprKind::Var:
    return env.at(e->var_id);
  case P::ExprKind::Add:
    return a(0) + a(1);
  case P::ExprKind::Sub:
    return a(0) - a(1);
  case P::ExprKind::Mul:
    return a(0) * a(1);
  case P::ExprKind::FloorDiv:
    return floordiv_ref(a(0), a(1));
  case P::ExprKind::FloorMod:
    return a(0) - floordiv_ref(a(0), a(1)) * a(1);
  case P::ExprKind::Min:
    return std::min(a(0), a(1));
  case P::ExprKind::Max:
    return std::max(a(0), a(1));
  case P::ExprKind::LT:
    return a(0) < a(1);
  case P::ExprKind::Select:
    return a(0) ? a(1) : a(2);
  case P::ExprKind::Load: {
    uint64_t h = static_cast<uint64_t>(a(0)) * 0x9e3779b97f4a7c15ULL + e->buffer->id;
    return static_cast<int64_t>((h >> 33) % 97) - 48;
  }
  default:
    throw std::logic_error("eval: unexpected expression kind");
  }
}

} // namespace mt::test
