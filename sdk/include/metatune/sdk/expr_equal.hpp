// Structural equality of program expressions (program.hpp): the same tree of kinds, dtypes and
// payloads, with variables and buffers compared by id. Code generators and recognisers use it
// to see that two index expressions or two operands are the same; the host's own structural
// equality works on its IR, which a plugin never sees.
#pragma once

#include <vector>

#include "metatune/sdk/program.hpp"

namespace mt::sdk::program {

inline bool expr_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || !(a->dtype == b->dtype) || a->args.size() != b->args.size())
    return false;
  switch (a->kind) {
  case ExprKind::IntImm:
    if (a->int_value != b->int_value) return false;
    break;
  case ExprKind::FloatImm:
    if (a->float_value != b->float_value) return false;
    break;
  case ExprKind::Var:
    if (a->var_id != b->var_id) return false;
    break;
  case ExprKind::Call:
    if (a->fn != b->fn) return false;
    break;
  case ExprKind::Load:
    if (a->buffer->id != b->buffer->id) return false;
    break;
  default:
    break;
  }
  for (size_t i = 0; i < a->args.size(); ++i)
    if (!expr_equal(a->args[i], b->args[i])) return false;
  return true;
}

// Element by element: two index tuples (or operand lists) are the same.
inline bool exprs_equal(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!expr_equal(a[i], b[i])) return false;
  return true;
}

} // namespace mt::sdk::program
