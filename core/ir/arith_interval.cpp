// Saturating interval arithmetic and the memoised interval analysis behind bound_of.
#include "core/ir/arith_interval.h"

#include <algorithm>

namespace mt {
namespace arith_detail {
namespace {

bool is_neg_inf(int64_t v) {
  return v <= kNegInf;
}

bool is_pos_inf(int64_t v) {
  return v >= kPosInf;
}

// Sum of two lower ends: -inf dominates (an unbounded operand makes the sum unbounded).
int64_t add_lo(int64_t a, int64_t b) {
  if (is_neg_inf(a) || is_neg_inf(b)) return kNegInf;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kPosInf : kNegInf;
  return clamp_end(r);
}

int64_t add_hi(int64_t a, int64_t b) {
  if (is_pos_inf(a) || is_pos_inf(b)) return kPosInf;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kPosInf : kNegInf;
  return clamp_end(r);
}

int64_t neg_end(int64_t a) {
  if (is_neg_inf(a)) return kPosInf;
  if (is_pos_inf(a)) return kNegInf;
  return -a;
}

int64_t mul_end(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool neg = (a < 0) != (b < 0);
  if (is_inf(a) || is_inf(b)) return neg ? kNegInf : kPosInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return neg ? kNegInf : kPosInf;
  return clamp_end(r);
}

// floor(a / d) for d != 0, where either may be infinite (taken as a limit).

int64_t div_end(int64_t a, int64_t d) {
  bool neg = (a < 0) != (d < 0);
  if (is_inf(a)) return neg ? kNegInf : kPosInf;
  if (is_inf(d)) return (a == 0 || !neg) ? 0 : -1;
  return floordiv_i(a, d);
}

// Division by zero is undefined, so a divisor range touching zero is shrunk away from it.

bool nonzero_divisor(IntBound& d) {
  if (d.min == 0) d.min = 1;
  if (d.max == 0) d.max = -1;
  return d.min <= d.max && (d.min > 0 || d.max < 0);
}

IntBound floordiv_bound(IntBound a, IntBound d) {
  if (!nonzero_divisor(d)) return unbounded();
  // floor(x / y) is monotone in each argument on one sign of y: extremes are at the corners.
  int64_t p[4] = {div_end(a.min, d.min), div_end(a.min, d.max), div_end(a.max, d.min),
                  div_end(a.max, d.max)};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

IntBound floormod_bound(IntBound a, IntBound d) {
  if (!nonzero_divisor(d)) return unbounded();
  if (d.min > 0) {
    if (a.min >= 0 && a.max < d.min) return a;
    if (d.is_const() && a.bounded() && !is_inf(d.min)) {
      int64_t q = floordiv_i(a.min, d.min);
      if (q == floordiv_i(a.max, d.min)) return {a.min - q * d.min, a.max - q * d.min};
    }
    int64_t hi = is_pos_inf(d.max) ? kPosInf : d.max - 1;
    if (a.min >= 0) hi = std::min(hi, a.max);
    return {0, hi};
  }
  if (a.max <= 0 && a.min > d.max) return a;
  int64_t lo = is_neg_inf(d.min) ? kNegInf : d.min + 1;
  if (a.max <= 0) lo = std::max(lo, a.min);
  return {lo, 0};
}

// Decides a comparison of two intervals; nullopt when it can go either way.

IntBound bool_bound(std::optional<bool> v) {
  if (!v) return {0, 1};
  return *v ? IntBound{1, 1} : IntBound{0, 0};
}

} // namespace

bool is_inf(int64_t v) {
  return is_neg_inf(v) || is_pos_inf(v);
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t clamp_end(int64_t v) {
  return std::clamp(v, kNegInf, kPosInf);
}

IntBound unbounded() {
  return {};
}

IntBound add_bound(IntBound a, IntBound b) {
  return {add_lo(a.min, b.min), add_hi(a.max, b.max)};
}

IntBound sub_bound(IntBound a, IntBound b) {
  return {add_lo(a.min, neg_end(b.max)), add_hi(a.max, neg_end(b.min))};
}

IntBound mul_bound(IntBound a, IntBound b) {
  int64_t p[4] = {mul_end(a.min, b.min), mul_end(a.min, b.max), mul_end(a.max, b.min),
                  mul_end(a.max, b.max)};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

IntBound intersect(IntBound a, IntBound b) {
  return {std::max(a.min, b.min), std::min(a.max, b.max)};
}

IntBound unite(IntBound a, IntBound b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max)};
}

IntBound type_bound(DType t) {
  if (t.is_bool()) return {0, 1};
  if (!t.is_int() || t.bits >= 63)
    return t.kind == DTypeKind::UInt ? IntBound{0, kPosInf} : unbounded();
  if (t.kind == DTypeKind::UInt) return {0, (int64_t(1) << t.bits) - 1};
  return {-(int64_t(1) << (t.bits - 1)), (int64_t(1) << (t.bits - 1)) - 1};
}

bool within(IntBound inner, IntBound outer) {
  return inner.min >= outer.min && inner.max <= outer.max;
}

std::optional<bool> compare_bounds(ExprKind k, IntBound a, IntBound b) {
  switch (k) {
  case ExprKind::LT:
    if (a.max < b.min) return true;
    if (a.min >= b.max) return false;
    break;
  case ExprKind::LE:
    if (a.max <= b.min) return true;
    if (a.min > b.max) return false;
    break;
  case ExprKind::GT:
    return compare_bounds(ExprKind::LT, b, a);
  case ExprKind::GE:
    return compare_bounds(ExprKind::LE, b, a);
  case ExprKind::EQ:
    if (a.is_const() && b.is_const() && a.min == b.min && !is_inf(a.min)) return true;
    if (a.max < b.min || b.max < a.min) return false;
    break;
  case ExprKind::NE:
    if (auto r = compare_bounds(ExprKind::EQ, a, b)) return !*r;
    break;
  default:
    break;
  }
  return std::nullopt;
}

IntBound BoundAnalyzer::compute(const Expr& e) {
  const auto& a = e->args;
  switch (e->kind) {
  case ExprKind::IntImm:
    return {clamp_end(e->int_value), clamp_end(e->int_value)};
  case ExprKind::Var: {
    IntBound t = type_bound(e->dtype);
    auto it = ranges_.find(e.get());
    return it == ranges_.end() ? t : intersect(it->second, t);
  }
  case ExprKind::Add:
    return add_bound(get(a[0]), get(a[1]));
  case ExprKind::Sub:
    return sub_bound(get(a[0]), get(a[1]));
  case ExprKind::Mul:
    if (!e->dtype.is_int()) return unbounded();
    return mul_bound(get(a[0]), get(a[1]));
  case ExprKind::Div:
  case ExprKind::FloorDiv:
    if (!e->dtype.is_int()) return unbounded();
    return floordiv_bound(get(a[0]), get(a[1]));
  case ExprKind::FloorMod:
    return floormod_bound(get(a[0]), get(a[1]));
  case ExprKind::Min:
  case ExprKind::Max: {
    if (!e->dtype.is_int() && !e->dtype.is_bool()) return unbounded();
    IntBound x = get(a[0]), y = get(a[1]);
    if (e->kind == ExprKind::Min) return {std::min(x.min, y.min), std::min(x.max, y.max)};
    return {std::max(x.min, y.min), std::max(x.max, y.max)};
  }
  case ExprKind::EQ:
  case ExprKind::NE:
  case ExprKind::LT:
  case ExprKind::LE:
  case ExprKind::GT:
  case ExprKind::GE:
    if (a[0]->dtype.is_float()) return {0, 1};
    return bool_bound(compare_bounds(e->kind, get(a[0]), get(a[1])));
  case ExprKind::And: {
    IntBound x = get(a[0]), y = get(a[1]);
    if (x.min >= 1 && y.min >= 1) return {1, 1};
    if (x.max <= 0 || y.max <= 0) return {0, 0};
    return {0, 1};
  }
  case ExprKind::Or: {
    IntBound x = get(a[0]), y = get(a[1]);
    if (x.min >= 1 || y.min >= 1) return {1, 1};
    if (x.max <= 0 && y.max <= 0) return {0, 0};
    return {0, 1};
  }
  case ExprKind::Not: {
    IntBound x = get(a[0]);
    if (x.min >= 1) return {0, 0};
    if (x.max <= 0) return {1, 1};
    return {0, 1};
  }
  case ExprKind::Select: {
    if (!e->dtype.is_int() && !e->dtype.is_bool()) return unbounded();
    IntBound c = get(a[0]);
    if (c.min >= 1) return get(a[1]);
    if (c.max <= 0) return get(a[2]);
    return unite(get(a[1]), get(a[2]));
  }
  case ExprKind::Cast: {
    DType from = a[0]->dtype;
    if (!e->dtype.is_int() && !e->dtype.is_bool()) return unbounded();
    IntBound inner = (from.is_int() || from.is_bool()) ? get(a[0]) : type_bound(e->dtype);
    if (e->dtype.is_bool()) {
      if (inner.min == 0 && inner.max == 0) return {0, 0};
      if (inner.min > 0 || inner.max < 0) return {1, 1};
      return {0, 1};
    }
    IntBound t = type_bound(e->dtype);
    return within(inner, t) ? inner : t;
  }
  default:
    return type_bound(e->dtype);
  }
}

} // namespace arith_detail

IntBound bound_of(const Expr& e, const RangeMap& ranges) {
  return arith_detail::BoundAnalyzer(ranges).get(e);
}

} // namespace mt
