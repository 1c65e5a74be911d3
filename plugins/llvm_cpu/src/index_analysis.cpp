#include "index_analysis.h"

#include <algorithm>

namespace mt::llvm_cpu {

namespace P = mt::sdk::program;

bool same_expr(const P::Expr& a, const P::Expr& b) {
  if (a.same_as(b)) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || !(a->dtype == b->dtype) || a->args.size() != b->args.size())
    return false;
  switch (a->kind) {
  case P::ExprKind::IntImm:
    if (a->int_value != b->int_value) return false;
    break;
  case P::ExprKind::FloatImm:
    if (a->float_value != b->float_value) return false;
    break;
  case P::ExprKind::Var:
    if (a->var_id != b->var_id) return false;
    break;
  case P::ExprKind::Call:
    if (a->fn != b->fn) return false;
    break;
  case P::ExprKind::Load:
    if (a->buffer->id != b->buffer->id) return false;
    break;
  default:
    break;
  }
  for (size_t i = 0; i < a->args.size(); ++i)
    if (!same_expr(a->args[i], b->args[i])) return false;
  return true;
}

std::optional<int64_t> affine_coefficient(const P::Expr& e, int64_t var_id) {
  if (!P::uses_var(e, var_id)) return 0;
  switch (e->kind) {
  case P::ExprKind::Var:
    return 1;
  case P::ExprKind::Add:
  case P::ExprKind::Sub: {
    auto a = affine_coefficient(e->args[0], var_id);
    auto b = affine_coefficient(e->args[1], var_id);
    if (!a || !b) return std::nullopt;
    return e->kind == P::ExprKind::Add ? *a + *b : *a - *b;
  }
  case P::ExprKind::Mul: {
    for (int side = 0; side < 2; ++side) {
      const P::Expr& k = e->args[side];
      if (k->kind != P::ExprKind::IntImm) continue;
      auto other = affine_coefficient(e->args[1 - side], var_id);
      if (!other) return std::nullopt;
      return *other * k->int_value;
    }
    return std::nullopt;
  }
  default:
    return std::nullopt;
  }
}

namespace {

int64_t clamp_add(int64_t a, int64_t b) {
  if (a <= Bound::kNegInf || b <= Bound::kNegInf) return Bound::kNegInf;
  if (a >= Bound::kPosInf || b >= Bound::kPosInf) return Bound::kPosInf;
  return std::clamp(a + b, Bound::kNegInf, Bound::kPosInf);
}

int64_t clamp_mul(int64_t a, int64_t b) {
  __int128 p = static_cast<__int128>(a) * b;
  if (p <= Bound::kNegInf) return Bound::kNegInf;
  if (p >= Bound::kPosInf) return Bound::kPosInf;
  return static_cast<int64_t>(p);
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

const Bound kAll{};

} // namespace

Bound bound_of(const P::Expr& e, const BoundMap& vars) {
  if (!e || !e->dtype.is_int()) return kAll;
  switch (e->kind) {
  case P::ExprKind::IntImm:
    return {e->int_value, e->int_value};
  case P::ExprKind::Var: {
    auto it = vars.find(e->var_id);
    return it == vars.end() ? kAll : it->second;
  }
  case P::ExprKind::Add: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    return {clamp_add(a.lo, b.lo), clamp_add(a.hi, b.hi)};
  }
  case P::ExprKind::Sub: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    auto neg = [](int64_t x) {
      return x <= Bound::kNegInf ? Bound::kPosInf : x >= Bound::kPosInf ? Bound::kNegInf : -x;
    };
    return {clamp_add(a.lo, neg(b.hi)), clamp_add(a.hi, neg(b.lo))};
  }
  case P::ExprKind::Mul: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    int64_t c[4] = {clamp_mul(a.lo, b.lo), clamp_mul(a.lo, b.hi), clamp_mul(a.hi, b.lo),
                    clamp_mul(a.hi, b.hi)};
    return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
  }
  case P::ExprKind::FloorDiv: {
    Bound a = bound_of(e->args[0], vars);
    const P::Expr& d = e->args[1];
    if (d->kind != P::ExprKind::IntImm || d->int_value <= 0) return kAll;
    int64_t k = d->int_value;
    return {a.lo <= Bound::kNegInf ? Bound::kNegInf : floordiv_i(a.lo, k),
            a.hi >= Bound::kPosInf ? Bound::kPosInf : floordiv_i(a.hi, k)};
  }
  case P::ExprKind::FloorMod: {
    const P::Expr& d = e->args[1];
    if (d->kind != P::ExprKind::IntImm || d->int_value <= 0) return kAll;
    Bound a = bound_of(e->args[0], vars);
    if (a.lo >= 0 && a.hi < d->int_value) return a;
    return {0, d->int_value - 1};
  }
  case P::ExprKind::Min: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
  }
  case P::ExprKind::Max: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  case P::ExprKind::Select: {
    Bound a = bound_of(e->args[1], vars), b = bound_of(e->args[2], vars);
    return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  case P::ExprKind::Cast: {
    const P::Expr& v = e->args[0];
    if (v->dtype.is_bool()) return {0, 1};
    if (v->dtype.is_int() && v->dtype.bits <= e->dtype.bits) return bound_of(v, vars);
    return kAll;
  }
  default:
    return kAll;
  }
}

P::Expr flat_index(const P::BufferNode& buf, const std::vector<P::Expr>& indices) {
  P::Expr flat;
  int64_t stride = 1;
  for (size_t d = indices.size(); d-- > 0;) {
    P::Expr term = indices[d];
    if (stride != 1) {
      int64_t c = 0;
      term = P::is_const_int(term, &c) ? P::int_imm(c * stride) : term * P::int_imm(stride);
    }
    int64_t c = 0;
    if (!flat)
      flat = term;
    else if (!(P::is_const_int(term, &c) && c == 0))
      flat = term + flat;
    stride *= buf.shape[d];
  }
  return flat ? flat : P::int_imm(0);
}

} // namespace mt::llvm_cpu
