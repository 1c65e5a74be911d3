// Digits of loop variables, affine index forms over them and strided views (logical_dims.hpp).
#include "logical_dims.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "recognize.hpp"

namespace mt::onednn {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// (unit, extent) of the digits of a variable of extent `e` split at `divisors`, outer first;
// the whole variable when the divisors do not nest.
std::vector<std::pair<int64_t, int64_t>> digits_of(int64_t e, const std::set<int64_t>& divisors) {
  std::vector<int64_t> units = {1};
  for (int64_t c : divisors) {
    if (c <= 1 || c >= e) continue; // v // c is 0 and v % c is v: nothing to split
    if (c % units.back() != 0) return {{1, e}};
    units.push_back(c);
  }
  if (e % units.back() != 0) return {{1, e}};
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = units.size(); i-- > 0;) {
    int64_t next = i + 1 < units.size() ? units[i + 1] : e;
    out.push_back({units[i], next / units[i]});
  }
  return out;
}

// sum(coef[dim] * digit) + constant.
struct Form {
  std::map<size_t, int64_t> coef;
  int64_t constant = 0;
};

class FormBuilder {
public:
  FormBuilder(const DigitMap& digits, const std::vector<LogicalDim>& dims)
      : digits_(digits), dims_(dims) {}

  std::optional<Form> operator()(const P::Expr& e) const {
    switch (e->kind) {
    case P::ExprKind::IntImm: {
      Form f;
      f.constant = e->int_value;
      return f;
    }
    case P::ExprKind::Var: {
      auto it = digits_.find(e->var_id);
      if (it == digits_.end()) return std::nullopt;
      Form f;
      for (auto [dim, unit] : it->second.digits)
        f.coef[dim] += unit;
      f.constant = it->second.offset;
      return f;
    }
    case P::ExprKind::Add:
    case P::ExprKind::Sub: {
      auto a = (*this)(e->args[0]), b = (*this)(e->args[1]);
      if (!a || !b) return std::nullopt;
      int64_t sign = e->kind == P::ExprKind::Add ? 1 : -1;
      for (auto [dim, c] : b->coef)
        a->coef[dim] += sign * c;
      a->constant += sign * b->constant;
      return a;
    }
    case P::ExprKind::Mul: {
      auto a = (*this)(e->args[0]), b = (*this)(e->args[1]);
      if (!a || !b) return std::nullopt;
      if (!a->coef.empty()) std::swap(a, b);
      if (!a->coef.empty()) return std::nullopt;
      for (auto& [dim, c] : b->coef)
        c *= a->constant;
      b->constant *= a->constant;
      return b;
    }
    case P::ExprKind::FloorDiv:
    case P::ExprKind::FloorMod:
      return div_mod(e);
    default:
      return std::nullopt;
    }
  }

private:
  // x // c and x % c when x = c * hi + lo with 0 <= lo < c over all digit values.
  std::optional<Form> div_mod(const P::Expr& e) const {
    if (e->args[1]->kind != P::ExprKind::IntImm || e->args[1]->int_value <= 0) return std::nullopt;
    const int64_t c = e->args[1]->int_value;
    auto x = (*this)(e->args[0]);
    if (!x) return std::nullopt;
    Form hi, lo;
    hi.constant = floor_div(x->constant, c);
    lo.constant = x->constant - hi.constant * c;
    int64_t lo_min = lo.constant, lo_max = lo.constant;
    for (auto [dim, k] : x->coef) {
      if (k % c == 0) {
        hi.coef[dim] = k / c;
        continue;
      }
      lo.coef[dim] = k;
      int64_t span = k * (dims_[dim].extent - 1);
      (span < 0 ? lo_min : lo_max) += span;
    }
    if (lo_min < 0 || lo_max >= c) return std::nullopt;
    return e->kind == P::ExprKind::FloorDiv ? hi : lo;
  }

  const DigitMap& digits_;
  const std::vector<LogicalDim>& dims_;
};

} // namespace

std::vector<LogicalDim> stage_digits(const StageProgram& sp, size_t main) {
  const Stage& m = sp.stages[main];
  std::map<int, std::set<int64_t>> by_pos;
  std::map<int64_t, std::set<int64_t>> by_rvar;
  for (size_t k = main; k < sp.stages.size(); ++k) {
    const Stage& s = sp.stages[k];
    P::post_order_visit(s.value, [&](const P::Expr& e) {
      int64_t v = 0;
      if ((e->kind != P::ExprKind::FloorDiv && e->kind != P::ExprKind::FloorMod) ||
          !is_var(e->args[0], &v) || e->args[1]->kind != P::ExprKind::IntImm)
        return;
      const int64_t c = e->args[1]->int_value;
      auto at = std::find(s.out_vars.begin(), s.out_vars.end(), v);
      if (at != s.out_vars.end())
        by_pos[static_cast<int>(at - s.out_vars.begin())].insert(c);
      else if (k == main && m.is_reduce_var(v))
        by_rvar[v].insert(c);
    });
  }
  std::vector<LogicalDim> dims;
  auto add = [&](int pos, int64_t rvar, int64_t extent, const std::set<int64_t>& divisors) {
    for (auto [unit, e] : digits_of(extent, divisors))
      if (e > 1) dims.push_back({pos, rvar, unit, e});
  };
  for (size_t p = 0; p < m.out_vars.size(); ++p)
    if (m.out_vars[p] >= 0)
      add(static_cast<int>(p), -1, sp.window ? sp.window->extent[p] : m.extent_of(m.out_vars[p]),
          by_pos[static_cast<int>(p)]);
  for (const Loop& r : m.rvars)
    add(-1, r.var, r.extent, by_rvar[r.var]);
  return dims;
}

std::vector<LogicalDim> position_dims(const std::vector<int>& positions,
                                      const std::vector<int64_t>& shape) {
  std::vector<LogicalDim> dims;
  for (int p : positions)
    dims.push_back(p < 0 ? LogicalDim{} : LogicalDim{p, -1, 1, shape[static_cast<size_t>(p)]});
  return dims;
}

DigitMap digit_map(const StageProgram& sp, size_t k, const std::vector<LogicalDim>& dims) {
  const Stage& s = sp.stages[k];
  const bool shifted = sp.window && k + 1 < sp.stages.size();
  DigitMap m;
  std::unordered_map<int64_t, int64_t> expected; // var -> the extent its digits must cover
  for (const Loop& l : s.loops)
    expected[l.var] = l.extent;
  for (size_t p = 0; p < s.out_vars.size(); ++p) {
    const int64_t var = s.out_vars[p];
    if (var < 0) continue;
    if (sp.window) expected[var] = sp.window->extent[p];
    if (shifted) m[var].offset = sp.window->offset[p];
  }
  for (const Loop& l : s.loops)
    if (expected[l.var] == 1) m[l.var]; // always its offset
  for (size_t i = 0; i < dims.size(); ++i) {
    const LogicalDim& d = dims[i];
    int64_t var = d.pos >= 0 ? s.out_vars[static_cast<size_t>(d.pos)] : d.rvar;
    if (var >= 0 && d.extent > 1) m[var].digits.push_back({i, d.unit});
  }
  // A variable whose digits are not all here would read as a smaller value: leave it out.
  for (auto it = m.begin(); it != m.end();) {
    int64_t covered = 1;
    for (auto [dim, unit] : it->second.digits)
      covered *= dims[dim].extent;
    it = covered == expected[it->first] ? std::next(it) : m.erase(it);
  }
  return m;
}

StridedAccess strided_access(const P::Buffer& b, const std::vector<P::Expr>& idx,
                             const DigitMap& digits, const std::vector<LogicalDim>& dims) {
  StridedAccess a;
  a.strides.assign(dims.size(), 0);
  std::vector<int64_t> rm = P::row_major_strides(b->shape);
  FormBuilder form(digits, dims);
  for (size_t d = 0; d < idx.size(); ++d) {
    std::optional<Form> f = form(idx[d]);
    if (!f) reject("an index that is not an affine form of the loop variables");
    int64_t lo = f->constant, hi = f->constant;
    for (auto [dim, c] : f->coef) {
      a.strides[dim] += c * rm[d];
      int64_t span = c * (dims[dim].extent - 1);
      (span < 0 ? lo : hi) += span;
    }
    if (lo < 0 || hi >= b->shape[d]) reject("an access outside the tensor");
    a.offset += f->constant * rm[d];
  }
  for (int64_t s : a.strides)
    if (s < 0) reject("a tensor read backwards (a negative stride)");
  return a;
}

TensorRef strided_ref(size_t param, const StridedAccess& a, const std::vector<LogicalDim>& dims,
                      bool broadcast) {
  TensorRef r;
  r.param = param;
  r.offset = a.offset;
  for (size_t i = 0; i < dims.size(); ++i) {
    bool moves = a.strides[i] != 0 && dims[i].extent > 1;
    if (!moves && dims[i].extent > 1 && !broadcast)
      reject("an access that does not use every operator dimension");
    r.dims.push_back(moves ? dims[i].extent : 1);
    r.strides.push_back(a.strides[i]);
  }
  detail::fix_unit_strides(&r);
  return r;
}

bool non_overlapping(const TensorRef& r) {
  std::vector<std::pair<int64_t, int64_t>> by_stride; // (stride, dim)
  for (size_t d = 0; d < r.dims.size(); ++d)
    if (r.dims[d] > 1) by_stride.push_back({r.strides[d], r.dims[d]});
  std::sort(by_stride.begin(), by_stride.end());
  int64_t span = 0;
  for (auto [s, n] : by_stride) {
    if (s <= span) return false;
    span += s * (n - 1);
  }
  return true;
}

std::optional<int64_t> eval_index(const P::Expr& e,
                                  const std::unordered_map<int64_t, int64_t>& vars) {
  using K = P::ExprKind;
  if (e->kind == K::IntImm) return e->int_value;
  if (e->kind == K::Var) {
    auto it = vars.find(e->var_id);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }
  std::vector<int64_t> a;
  for (const P::Expr& x : e->args) {
    auto v = eval_index(x, vars);
    if (!v) return std::nullopt;
    a.push_back(*v);
  }
  switch (e->kind) {
  case K::Add:
    return a[0] + a[1];
  case K::Sub:
    return a[0] - a[1];
  case K::Mul:
    return a[0] * a[1];
  case K::FloorDiv:
    if (a[1] == 0) return std::nullopt;
    return floor_div(a[0], a[1]);
  case K::FloorMod:
    if (a[1] == 0) return std::nullopt;
    return a[0] - floor_div(a[0], a[1]) * a[1];
  case K::Min:
    return std::min(a[0], a[1]);
  case K::Max:
    return std::max(a[0], a[1]);
  case K::EQ:
    return a[0] == a[1];
  case K::NE:
    return a[0] != a[1];
  case K::LT:
    return a[0] < a[1];
  case K::LE:
    return a[0] <= a[1];
  case K::GT:
    return a[0] > a[1];
  case K::GE:
    return a[0] >= a[1];
  case K::And:
    return a[0] && a[1];
  case K::Or:
    return a[0] || a[1];
  case K::Not:
    return !a[0];
  case K::Select:
    return a[0] ? a[1] : a[2];
  default:
    return std::nullopt;
  }
}

} // namespace mt::onednn
