// Analyses of integer index expressions (program.hpp) that code generators and recognisers
// need: affine forms (which variables an index moves with, and by how much), conservative
// integer bounds, and the row-major flattening of a multi-dimensional access.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "metatune/sdk/program.hpp"

namespace mt::sdk::program {

// ---- affine forms -----------------------------------------------------------------------------

// sum(coef[var id] * var) + constant; no coefficient is 0.
struct Affine {
  std::unordered_map<int64_t, int64_t> coef;
  int64_t constant = 0;
};

namespace detail {

// An affine form plus, when `has_rest`, unknown terms: subexpressions that are not affine but
// that the caller accepts as opaque. One walk then answers both "is the whole expression
// affine" (nothing opaque) and "how does it move with one variable, whatever the rest is"
// (opaque: what does not use it).
struct PartialAffine {
  Affine form;
  bool has_rest = false;
  bool is_constant() const { return form.coef.empty() && !has_rest; }
};

// Variables with coefficient 0 are left out: `coef` holds exactly what e moves with.
inline void drop_zero_coefficients(Affine& a) {
  for (auto it = a.coef.begin(); it != a.coef.end();)
    it = it->second == 0 ? a.coef.erase(it) : std::next(it);
}

template <typename Opaque>
std::optional<PartialAffine> partial_affine(const Expr& e, const Opaque& opaque);

// e's own structure: immediates, variables, +, - and multiplication by a constant.
template <typename Opaque>
std::optional<PartialAffine> structural_affine(const Expr& e, const Opaque& opaque) {
  PartialAffine out;
  switch (e->kind) {
  case ExprKind::IntImm:
    out.form.constant = e->int_value;
    return out;
  case ExprKind::Var:
    out.form.coef[e->var_id] = 1;
    return out;
  case ExprKind::Add:
  case ExprKind::Sub: {
    auto a = partial_affine(e->args[0], opaque), b = partial_affine(e->args[1], opaque);
    if (!a || !b) return std::nullopt;
    int64_t sign = e->kind == ExprKind::Add ? 1 : -1;
    for (const auto& [var, c] : b->form.coef)
      a->form.coef[var] += sign * c;
    drop_zero_coefficients(a->form);
    a->form.constant += sign * b->form.constant;
    a->has_rest = a->has_rest || b->has_rest;
    return a;
  }
  case ExprKind::Mul: {
    auto a = partial_affine(e->args[0], opaque), b = partial_affine(e->args[1], opaque);
    if (!a || !b) return std::nullopt;
    if (!a->is_constant() && !b->is_constant()) return std::nullopt;
    if (a->is_constant()) std::swap(a, b);
    for (auto& [var, c] : a->form.coef)
      c *= b->form.constant;
    drop_zero_coefficients(a->form);
    a->form.constant *= b->form.constant;
    return a;
  }
  default:
    return std::nullopt;
  }
}

// What is not affine by its structure may still be an opaque term.
template <typename Opaque>
std::optional<PartialAffine> partial_affine(const Expr& e, const Opaque& opaque) {
  if (!e) return std::nullopt;
  std::optional<PartialAffine> out = structural_affine(e, opaque);
  if (!out && opaque(e)) {
    out.emplace();
    out->has_rest = true;
  }
  return out;
}

} // namespace detail

// e as an affine form, when it is built from integer immediates and variables with +, - and
// multiplication by a constant; nullopt for anything else (a load, a division, v * w).
inline std::optional<Affine> affine(const Expr& e) {
  auto p = detail::partial_affine(e, [](const Expr&) { return false; });
  if (!p) return std::nullopt;
  return std::move(p->form);
}

// c such that e == c * var + (terms without var), if e is affine in var with a constant
// coefficient (the other terms may be anything: loads, divisions of other variables); 0 if e
// does not use var; nullopt otherwise. The stride of a vector access along var.
inline std::optional<int64_t> affine_coefficient(const Expr& e, int64_t var_id) {
  auto p = detail::partial_affine(e, [&](const Expr& x) { return !uses_var(x, var_id); });
  if (!p) return std::nullopt;
  auto it = p->form.coef.find(var_id);
  return it == p->form.coef.end() ? 0 : it->second;
}

// ---- integer bounds ---------------------------------------------------------------------------

// Inclusive bounds; kNegInf / kPosInf stand for "unbounded" and absorb arithmetic on them.
struct Bound {
  static constexpr int64_t kNegInf = INT64_MIN / 4;
  static constexpr int64_t kPosInf = INT64_MAX / 4;
  int64_t lo = kNegInf;
  int64_t hi = kPosInf;
  bool non_negative() const { return lo >= 0; }
};
using BoundMap = std::unordered_map<int64_t, Bound>; // var id -> inclusive bounds

namespace detail {

inline int64_t clamp_add(int64_t a, int64_t b) {
  if (a <= Bound::kNegInf || b <= Bound::kNegInf) return Bound::kNegInf;
  if (a >= Bound::kPosInf || b >= Bound::kPosInf) return Bound::kPosInf;
  return std::clamp(a + b, Bound::kNegInf, Bound::kPosInf);
}

inline int64_t clamp_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  uint64_t ua = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t ub = b < 0 ? 0 - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  // |a * b| > kPosInf: past either end (no wider integer type needed to see it).
  if (ua > static_cast<uint64_t>(Bound::kPosInf) / ub)
    return negative ? Bound::kNegInf : Bound::kPosInf;
  auto magnitude = static_cast<int64_t>(ua * ub);
  return std::clamp(negative ? -magnitude : magnitude, Bound::kNegInf, Bound::kPosInf);
}

inline int64_t floordiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

} // namespace detail

// Conservative bounds of an integer expression given bounds of its variables; the parts it
// cannot bound (loads, unknown variables, non-integers) are unbounded.
inline Bound bound_of(const Expr& e, const BoundMap& vars) {
  using detail::clamp_add;
  using detail::clamp_mul;
  const Bound all{};
  if (!e || !e->dtype.is_int()) return all;
  switch (e->kind) {
  case ExprKind::IntImm:
    return {e->int_value, e->int_value};
  case ExprKind::Var: {
    auto it = vars.find(e->var_id);
    return it == vars.end() ? all : it->second;
  }
  case ExprKind::Add: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    return {clamp_add(a.lo, b.lo), clamp_add(a.hi, b.hi)};
  }
  case ExprKind::Sub: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    auto neg = [](int64_t x) {
      return x <= Bound::kNegInf ? Bound::kPosInf : x >= Bound::kPosInf ? Bound::kNegInf : -x;
    };
    return {clamp_add(a.lo, neg(b.hi)), clamp_add(a.hi, neg(b.lo))};
  }
  case ExprKind::Mul: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    int64_t c[4] = {clamp_mul(a.lo, b.lo), clamp_mul(a.lo, b.hi), clamp_mul(a.hi, b.lo),
                    clamp_mul(a.hi, b.hi)};
    return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
  }
  case ExprKind::FloorDiv: {
    Bound a = bound_of(e->args[0], vars);
    const Expr& d = e->args[1];
    if (d->kind != ExprKind::IntImm || d->int_value <= 0) return all;
    int64_t k = d->int_value;
    return {a.lo <= Bound::kNegInf ? Bound::kNegInf : detail::floordiv_int(a.lo, k),
            a.hi >= Bound::kPosInf ? Bound::kPosInf : detail::floordiv_int(a.hi, k)};
  }
  case ExprKind::FloorMod: {
    const Expr& d = e->args[1];
    if (d->kind != ExprKind::IntImm || d->int_value <= 0) return all;
    Bound a = bound_of(e->args[0], vars);
    if (a.lo >= 0 && a.hi < d->int_value) return a;
    return {0, d->int_value - 1};
  }
  case ExprKind::Min: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
  }
  case ExprKind::Max: {
    Bound a = bound_of(e->args[0], vars), b = bound_of(e->args[1], vars);
    return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  case ExprKind::Select: {
    Bound a = bound_of(e->args[1], vars), b = bound_of(e->args[2], vars);
    return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  case ExprKind::Cast: {
    const Expr& v = e->args[0];
    if (v->dtype.is_bool()) return {0, 1};
    if (v->dtype.is_int() && v->dtype.bits <= e->dtype.bits) return bound_of(v, vars);
    return all;
  }
  default:
    return all;
  }
}

// ---- row-major layout -------------------------------------------------------------------------

// Element strides of a compact row-major array of this shape.
inline std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    s[d - 1] = s[d] * shape[d];
  return s;
}

// ---- canonical index form --------------------------------------------------------------------

namespace detail {

// e as sum(scale * term) + constant, where a term is a variable or a subexpression that is not
// affine (a division, a min, a load); false when e has a type other than `t` somewhere in its
// affine part (the rebuilt sum would change its arithmetic). A walk of its own rather than
// partial_affine's: rebuilding the sum needs the variables' nodes and each node's type, which
// an Affine (coefficients by variable id) does not keep.
struct IndexSum {
  std::vector<std::pair<Expr, int64_t>> vars;   // var, coefficient; ascending var id
  std::vector<std::pair<Expr, int64_t>> opaque; // subexpression, coefficient; first seen first
  int64_t constant = 0;

  void add_var(const Expr& v, int64_t c) {
    for (auto& [w, k] : vars)
      if (w->var_id == v->var_id) {
        k += c;
        return;
      }
    vars.emplace_back(v, c);
  }
  // The same node met twice (a shared subexpression) is one term.
  void add_opaque(const Expr& x, int64_t c) {
    for (auto& [y, k] : opaque)
      if (y.get() == x.get()) {
        k += c;
        return;
      }
    opaque.emplace_back(x, c);
  }
};

inline bool collect_index_sum(const Expr& e, int64_t scale, DType t, IndexSum& out) {
  if (!(e->dtype == t)) return false;
  int64_t c = 0;
  switch (e->kind) {
  case ExprKind::IntImm:
    out.constant += scale * e->int_value;
    return true;
  case ExprKind::Var:
    out.add_var(e, scale);
    return true;
  case ExprKind::Add:
    return collect_index_sum(e->args[0], scale, t, out) &&
           collect_index_sum(e->args[1], scale, t, out);
  case ExprKind::Sub:
    return collect_index_sum(e->args[0], scale, t, out) &&
           collect_index_sum(e->args[1], -scale, t, out);
  case ExprKind::Mul:
    if (is_const_int(e->args[1], &c)) return collect_index_sum(e->args[0], scale * c, t, out);
    if (is_const_int(e->args[0], &c)) return collect_index_sum(e->args[1], scale * c, t, out);
    [[fallthrough]];
  default:
    out.add_opaque(e, scale);
    return true;
  }
}

} // namespace detail

// e rebuilt as (c1 * v1 + c2 * v2 + ... [variables by ascending id]) + (non-affine terms) +
// constant, zero terms dropped; e itself when its type is not one signed integer type
// throughout (the reordered sum may pass through negative values, which unsigned arithmetic
// with no-wrap flags would not allow). Why: two
// accesses that differ by a constant (the unrolled rows of a register tile) then share the
// whole non-constant part as one value, and a compiler's alias analysis, which splits an
// address into "variable part + constant offset" but does not distribute a multiplication over
// a sum ((7 * x + 1) * 8 + z vs 56 * x + z), can tell them apart. Without that, LLVM cannot keep
// a tile's accumulators in registers across the reduction loop when their address depends on
// an outer loop.
inline Expr canonical_index(const Expr& e) {
  if (!e || e->dtype.kind != DTypeKind::Int) return e;
  detail::IndexSum sum;
  if (!detail::collect_index_sum(e, 1, e->dtype, sum)) return e;
  std::sort(sum.vars.begin(), sum.vars.end(),
            [](const auto& a, const auto& b) { return a.first->var_id < b.first->var_id; });
  Expr out;
  auto append = [&](const Expr& term, int64_t c) {
    if (c == 0) return;
    Expr scaled = c == 1 ? term : term * int_imm(c, e->dtype);
    out = out ? out + scaled : scaled;
  };
  for (const auto& [v, c] : sum.vars)
    append(v, c);
  for (const auto& [x, c] : sum.opaque)
    append(x, c);
  if (!out) return int_imm(sum.constant, e->dtype);
  return sum.constant == 0 ? out : out + int_imm(sum.constant, e->dtype);
}

// The flat element index of buf[indices]: sum(indices[d] * stride[d]) in canonical_index form.
inline Expr flat_index(const BufferNode& buf, const std::vector<Expr>& indices) {
  std::vector<int64_t> strides = row_major_strides(buf.shape);
  Expr flat;
  for (size_t d = indices.size(); d-- > 0;) {
    Expr term = indices[d];
    int64_t c = 0;
    if (strides[d] != 1)
      term = is_const_int(term, &c) ? int_imm(c * strides[d]) : term * int_imm(strides[d]);
    if (!flat)
      flat = term;
    else if (!(is_const_int(term, &c) && c == 0))
      flat = term + flat;
  }
  return flat ? canonical_index(flat) : int_imm(0);
}

} // namespace mt::sdk::program
