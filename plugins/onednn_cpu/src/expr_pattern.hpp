// Structural patterns over expressions: a small tree language with the operand X, constants
// (exact within a relative tolerance, or captured), captured subexpressions, and operators.
// Add and Mul chains are flattened and matched up to order (x * 0.5 * t == 0.5 * (x * t)),
// Max and Min up to operand order, so that the same formula written differently still
// matches; everything else must match node for node.
#pragma once

#include <optional>
#include <vector>

#include "op_plan.hpp"
#include "stages.hpp"

namespace mt::onednn {

struct Pat {
  enum Kind { X, Const, AnyConst, Any, Op, Fn } kind = X;
  P::ExprKind op = P::ExprKind::Add;
  P::MathFn fn = P::MathFn::Exp;
  double value = 0;
  int slot = 0;
  std::vector<Pat> kids;
};

namespace pat {
inline Pat X() {
  return {};
}
inline Pat c(double v) {
  Pat p;
  p.kind = Pat::Const;
  p.value = v;
  return p;
}
inline Pat any_c(int slot) {
  Pat p;
  p.kind = Pat::AnyConst;
  p.slot = slot;
  return p;
}
inline Pat any(int slot) {
  Pat p;
  p.kind = Pat::Any;
  p.slot = slot;
  return p;
}
inline Pat op(P::ExprKind k, std::vector<Pat> kids) {
  Pat p;
  p.kind = Pat::Op;
  p.op = k;
  p.kids = std::move(kids);
  return p;
}
inline Pat fn(P::MathFn f, std::vector<Pat> kids) {
  Pat p;
  p.kind = Pat::Fn;
  p.fn = f;
  p.kids = std::move(kids);
  return p;
}
} // namespace pat

struct Captures {
  std::vector<double> consts = std::vector<double>(4, 0.0);
  std::vector<P::Expr> exprs = std::vector<P::Expr>(4);
};

// Whether `e` matches `p` with X standing for (an expression structurally equal to) `x`.
bool match(const Pat& p, const P::Expr& e, const P::Expr& x, Captures* caps);

// The unary function f with e == f(x), as an eltwise step (relu, gelu erf/tanh, sigmoid,
// tanh, exp, log, sqrt, abs, linear a*x+b), or nullopt.
std::optional<PostOp> match_unary(const P::Expr& e, const P::Expr& x);

// e == x OP y for a binary step (add, sub, mul, div, max, min; y a captured expression).
std::optional<std::pair<Alg, P::Expr>> match_binary(const P::Expr& e, const P::Expr& x);

} // namespace mt::onednn
