// Integer arithmetic analysis: interval bounds, affine canonicalisation and region relaxation.
//
// Integer expressions are brought into a linear form `sum(coeff_i * atom_i) + const` where an
// atom is a variable or an already simplified non-affine sub-expression (load, product of two
// variables, floordiv that could not be removed, ...). Terms keep the order in which their atom
// first appears, so output never depends on pointer values (printed IR is hashed).
#include "core/ir/arith.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "core/ir/arith_interval.h"
#include "core/ir/buffer.h"
#include "core/ir/node_memo.h"

namespace mt {
namespace {

using namespace arith_detail;

// Truncates `v` to the value range of integer type `t` (two's complement wrap-around).
int64_t wrap_to(int64_t v, DType t) {
  if (t.is_bool()) return v != 0;
  if (t.bits >= 64) return v;
  uint64_t mask = (uint64_t(1) << t.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.kind == DTypeKind::Int && (u >> (t.bits - 1)) != 0) u |= ~mask;
  return static_cast<int64_t>(u);
}

// ---- structural helpers -------------------------------------------------------------------------

// Structural equality (variables and buffers by identity). Sub-results that were found equal
// are remembered, so comparing two DAGs with much sharing costs their size, not their unfolded
// tree size.
class StructEqual {
public:
  bool operator()(const Expr& a, const Expr& b) {
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
      return false; // identity only
    case ExprKind::Load:
      if (a->buffer != b->buffer) return false;
      break;
    case ExprKind::Call:
      if (a->fn != b->fn) return false;
      break;
    default:
      break;
    }
    if (a->args.empty()) return true;
    auto key = std::make_pair(a.get(), b.get());
    if (known(key)) return true;
    for (size_t i = 0; i < a->args.size(); ++i)
      if (!(*this)(a->args[i], b->args[i])) return false;
    remember(key);
    return true;
  }

private:
  using Pair = std::pair<const ExprNode*, const ExprNode*>;
  // The first pairs in place (index expressions are small: most comparisons stop there), the
  // rest in a set.
  bool known(const Pair& key) const {
    for (size_t i = 0; i < n_small_; ++i)
      if (small_[i] == key) return true;
    return equal_.count(key) != 0;
  }
  void remember(const Pair& key) {
    if (n_small_ < small_.size())
      small_[n_small_++] = key;
    else
      equal_.insert(key);
  }

  std::array<Pair, 16> small_;
  size_t n_small_ = 0;
  std::set<Pair> equal_;
};

// Structural equality with a memoised structural hash in front: most atoms compared while
// collecting terms differ, and the hash tells so without walking them.
class ExprEq {
public:
  bool operator()(const Expr& a, const Expr& b) {
    if (a.same_as(b)) return true;
    if (!a || !b || hash(a) != hash(b)) return false;
    return StructEqual()(a, b);
  }

private:
  size_t hash(const Expr& e) {
    if (const size_t* known = cache_.find(e.get())) return *known;
    // Pointer values only feed equality tests here, never an order, so output stays stable.
    size_t h = std::hash<int>()(static_cast<int>(e->kind)) * 31 + e->dtype.bits;
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    switch (e->kind) {
    case ExprKind::IntImm:
      mix(std::hash<int64_t>()(e->int_value));
      break;
    case ExprKind::FloatImm:
      mix(std::hash<double>()(e->float_value));
      break;
    case ExprKind::Var:
      mix(std::hash<const void*>()(e.get()));
      break;
    case ExprKind::Load:
      mix(std::hash<const void*>()(e->buffer.get()));
      break;
    case ExprKind::Call:
      mix(static_cast<size_t>(e->fn));
      break;
    default:
      break;
    }
    for (const Expr& x : e->args)
      mix(hash(x));
    // A leaf's hash costs less than remembering it.
    if (!e->args.empty()) cache_.emplace(e, h);
    return h;
  }

  NodeMemo<size_t> cache_;
};

Expr bool_imm(bool v) {
  return int_imm(v ? 1 : 0, DType::boolean());
}

bool uses_any(const Expr& e, const RangeMap& vars) {
  bool found = false;
  post_order_visit(e, [&](const Expr& x) {
    found = found || (x->kind == ExprKind::Var && vars.count(x.get()) != 0);
  });
  return found;
}

ExprKind flip_comparison(ExprKind k) {
  switch (k) {
  case ExprKind::LT:
    return ExprKind::GT;
  case ExprKind::LE:
    return ExprKind::GE;
  case ExprKind::GT:
    return ExprKind::LT;
  case ExprKind::GE:
    return ExprKind::LE;
  default:
    return k;
  }
}

ExprKind negate_comparison(ExprKind k) {
  switch (k) {
  case ExprKind::LT:
    return ExprKind::GE;
  case ExprKind::LE:
    return ExprKind::GT;
  case ExprKind::GT:
    return ExprKind::LE;
  case ExprKind::GE:
    return ExprKind::LT;
  case ExprKind::EQ:
    return ExprKind::NE;
  default:
    return ExprKind::EQ;
  }
}

// ---- linear form --------------------------------------------------------------------------------

// Raised when a coefficient would overflow; the expression is then kept as an opaque atom.
struct Overflow {};

int64_t ck_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw Overflow{};
  return r;
}

int64_t ck_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw Overflow{};
  return r;
}

struct Term {
  Expr atom;
  int64_t coeff;
};

struct Lin {
  std::vector<Term> terms;
  int64_t c = 0;

  bool is_const() const { return terms.empty(); }

  // Appends a term whose atom is known not to be present yet.
  void push(const Expr& atom, int64_t k) {
    if (k != 0) terms.push_back({atom, k});
  }

  void add_term(const Expr& atom, int64_t k, ExprEq& eq) {
    if (k == 0) return;
    for (auto it = terms.begin(); it != terms.end(); ++it) {
      if (eq(it->atom, atom)) {
        it->coeff = ck_add(it->coeff, k);
        if (it->coeff == 0) terms.erase(it);
        return;
      }
    }
    terms.push_back({atom, k});
  }

  void add(const Lin& o, int64_t scale, ExprEq& eq) {
    for (const Term& t : o.terms)
      add_term(t.atom, ck_mul(t.coeff, scale), eq);
    c = ck_add(c, ck_mul(o.c, scale));
  }

  static Lin constant(int64_t v) {
    Lin l;
    l.c = v;
    return l;
  }
  static Lin atom(Expr a) {
    Lin l;
    l.terms.push_back({std::move(a), 1});
    return l;
  }
};

Lin scaled(const Lin& l, int64_t k) {
  Lin r;
  if (k == 0) return r;
  for (const Term& t : l.terms)
    r.push(t.atom, ck_mul(t.coeff, k));
  r.c = ck_mul(l.c, k);
  return r;
}

bool lin_equal(const Lin& a, const Lin& b, ExprEq& eq) {
  if (a.c != b.c || a.terms.size() != b.terms.size()) return false;
  for (const Term& t : a.terms) {
    bool found = false;
    for (const Term& u : b.terms) {
      if (u.coeff == t.coeff && eq(u.atom, t.atom)) {
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

// A div/mod atom seen as a "digit" of `base`: (base // div) % mod, mod == 0 meaning no modulo.
struct Digit {
  Expr base;
  int64_t div = 1;
  int64_t mod = 0;
};

std::optional<Digit> as_digit(const Expr& e) {
  int64_t c;
  if (e->kind == ExprKind::FloorDiv && is_const_int(e->args[1], &c) && c > 0)
    return Digit{e->args[0], c, 0};
  if (e->kind != ExprKind::FloorMod || !is_const_int(e->args[1], &c) || c <= 0) return std::nullopt;
  const Expr& x = e->args[0];
  int64_t d;
  if (x->kind == ExprKind::FloorDiv && is_const_int(x->args[1], &d) && d > 0)
    return Digit{x->args[0], d, c};
  return Digit{x, 1, c};
}

class Simplifier {
public:
  explicit Simplifier(const RangeMap& ranges) : ranges_(ranges), bounds_(ranges) {}

  Expr simplify(const Expr& e) {
    if (!e) return e;
    if (e->kind == ExprKind::Var) return e; // already in normal form, of any type
    if (const Expr* known = simp_cache_.find(e.get())) return *known;
    Expr r = simplify_uncached(e);
    if (eq_(r, e)) r = e;
    simp_cache_.emplace(e, r);
    return r;
  }

  // Linear form of an integer expression; atoms are simplified.
  Lin linear(const Expr& e) {
    // Leaves (constants, variables) cost less than remembering them.
    if (e->kind == ExprKind::IntImm) return Lin::constant(e->int_value);
    if (e->kind == ExprKind::Var) return Lin::atom(e);
    if (const Lin* known = lin_cache_.find(e.get())) return *known;
    Lin l;
    try {
      l = linear_uncached(e);
      combine_digits(l);
    } catch (const Overflow&) {
      l = Lin::atom(with_args(e, simplified_args(e)));
    }
    lin_cache_.emplace(e, l);
    // Atoms are already in normal form: remembering that keeps their identity when they are
    // met again (as operands of later rewrites) instead of rebuilding equal copies.
    for (const Term& t : l.terms)
      if (t.atom->kind != ExprKind::Var) lin_cache_.emplace(t.atom, Lin::atom(t.atom));
    return l;
  }

  // Positive terms first (in order of appearance), then the subtracted ones, then the constant;
  // a leading positive constant reads `c - x` rather than `x*-1 + c`.
  Expr build(const Lin& l, DType t) const {
    Expr res;
    auto piece = [&](const Term& term, int64_t k) {
      return k == 1 ? term.atom : term.atom * int_imm(k, t);
    };
    for (const Term& term : l.terms)
      if (term.coeff > 0) res = res ? res + piece(term, term.coeff) : piece(term, term.coeff);
    bool const_used = false;
    if (!res && l.c > 0 && !l.terms.empty()) {
      res = int_imm(l.c, t);
      const_used = true;
    }
    for (const Term& term : l.terms) {
      if (term.coeff >= 0) continue;
      if (!res || term.coeff == std::numeric_limits<int64_t>::min())
        res = res ? res + piece(term, term.coeff) : piece(term, term.coeff);
      else
        res = res - piece(term, -term.coeff);
    }
    if (!res) return int_imm(l.c, t);
    if (const_used || l.c == 0) return res;
    if (l.c < 0 && l.c != std::numeric_limits<int64_t>::min()) return res - int_imm(-l.c, t);
    return res + int_imm(l.c, t);
  }

  IntBound bound_of(const Expr& e) { return bounds_.get(e); }

  IntBound bound(const Lin& l) {
    IntBound b{clamp_end(l.c), clamp_end(l.c)};
    for (const Term& t : l.terms)
      b = add_bound(b, mul_bound({t.coeff, t.coeff}, bounds_.get(t.atom)));
    return b;
  }

  // x // c or x % c for a constant c != 0 (kind FloorDiv or FloorMod).
  Lin div_mod(ExprKind kind, const Lin& num_in, int64_t c, DType t) {
    bool is_div = kind == ExprKind::FloorDiv;
    // Rewrites below build new sums (inner terms substituted in); merge their digits first.
    Lin num = num_in;
    combine_digits(num);
    if (num.is_const()) {
      int64_t q = floordiv_i(num.c, c);
      return Lin::constant(is_div ? q : num.c - q * c);
    }
    IntBound b = bound(num);
    if (b.bounded()) {
      int64_t q = floordiv_i(b.min, c);
      if (q == floordiv_i(b.max, c)) {
        if (is_div) return Lin::constant(q);
        Lin r = num;
        r.c = ck_sub(r.c, ck_mul(q, c));
        return r;
      }
    }
    if (c == 1) return is_div ? num : Lin::constant(0);
    if (c < 0) return opaque(kind, num, c, t);

    // (X % m) % c == X % c when c divides m; same inside a sum.
    if (!is_div) {
      Lin reduced;
      reduced.c = num.c;
      bool changed = false;
      for (const Term& term : num.terms) {
        int64_t m;
        const Expr& at = term.atom;
        if (at->kind == ExprKind::FloorMod && is_const_int(at->args[1], &m) && m > 0 &&
            m % c == 0) {
          reduced.add(linear(at->args[0]), term.coeff, eq_);
          changed = true;
        } else {
          reduced.add_term(at, term.coeff, eq_);
        }
      }
      if (changed) return div_mod(kind, reduced, c, t);
    }

    // num = c*q + rest with |rest coefficients| < c.
    Lin quot, rest;
    for (const Term& term : num.terms) {
      int64_t q = term.coeff / c;
      quot.push(term.atom, q);
      rest.push(term.atom, term.coeff - q * c);
    }
    // The constant is split towards zero too, so `(x - 5) % 32` keeps its written offset.
    quot.c = num.c / c;
    rest.c = num.c - quot.c * c;
    auto with_quot = [&](const Lin& l) {
      if (!is_div) return l;
      Lin r = quot;
      r.add(l, 1, eq_);
      return r;
    };
    IntBound rb = bound(rest);
    if (rb.bounded()) {
      int64_t q = floordiv_i(rb.min, c);
      if (q == floordiv_i(rb.max, c)) {
        if (is_div) return with_quot(Lin::constant(q));
        Lin r = rest;
        r.c = ck_sub(r.c, ck_mul(q, c));
        return r;
      }
    }
    // (X // a + k) // c == (X + k*a) // (a*c) for positive a.
    if (is_div && rest.terms.size() == 1 && rest.terms[0].coeff == 1) {
      const Expr& at = rest.terms[0].atom;
      int64_t a;
      if (at->kind == ExprKind::FloorDiv && is_const_int(at->args[1], &a) && a > 0) {
        Lin inner = linear(at->args[0]);
        inner.c = ck_add(inner.c, ck_mul(rest.c, a));
        return with_quot(div_mod(kind, inner, ck_mul(a, c), t));
      }
    }
    // rest = g*Y + T with 0 <= T < g and g | c gives rest // c == Y // (c/g) and
    // rest % c == g*(Y % (c/g)) + T: a split loop's inner part below a fused loop's divisor.
    std::vector<int64_t> cands;
    for (const Term& term : rest.terms) {
      int64_t g = std::gcd(term.coeff < 0 ? -term.coeff : term.coeff, c);
      if (g > 1 && g < c && std::find(cands.begin(), cands.end(), g) == cands.end())
        cands.push_back(g);
    }
    std::sort(cands.rbegin(), cands.rend());
    for (int64_t g : cands) {
      Lin y, small;
      for (const Term& term : rest.terms) {
        if (term.coeff % g == 0)
          y.push(term.atom, term.coeff / g);
        else
          small.push(term.atom, term.coeff);
      }
      y.c = floordiv_i(rest.c, g);
      small.c = rest.c - y.c * g;
      if (small.is_const() && small.c == 0) continue; // handled by the gcd rule below
      IntBound sb = bound(small);
      if (sb.min < 0 || sb.max >= g) continue;
      Lin inner = div_mod(kind, y, c / g, t);
      if (is_div) return with_quot(inner);
      Lin r = scaled(inner, g);
      r.add(small, 1, eq_);
      return r;
    }
    int64_t g = std::gcd(rest.c < 0 ? -rest.c : rest.c, c);
    for (const Term& term : rest.terms)
      g = std::gcd(g, term.coeff < 0 ? -term.coeff : term.coeff);
    if (g > 1) {
      Lin y;
      for (const Term& term : rest.terms)
        y.push(term.atom, term.coeff / g);
      y.c = rest.c / g;
      Lin inner = div_mod(kind, y, c / g, t);
      return is_div ? with_quot(inner) : scaled(inner, g);
    }
    return with_quot(opaque(kind, rest, c, t));
  }

  // Replaces pairs of div/mod digits of the same base by their combination:
  // ((X//(e*m)) % n) * m + (X//e) % m == (X//e) % (m*n) (no modulo when n is absent).
  void combine_digits(Lin& l) {
    if (l.terms.size() < 2) return;
    for (int iter = 0; iter < 64; ++iter) {
      bool changed = false;
      for (size_t i = 0; i < l.terms.size() && !changed; ++i) {
        auto lo = as_digit(l.terms[i].atom);
        if (!lo || lo->mod == 0) continue;
        for (size_t j = 0; j < l.terms.size() && !changed; ++j) {
          if (i == j) continue;
          auto hi = as_digit(l.terms[j].atom);
          int64_t klo = l.terms[i].coeff, khi = l.terms[j].coeff, prod;
          if (!hi || __builtin_mul_overflow(lo->div, lo->mod, &prod) || hi->div != prod) continue;
          if (__builtin_mul_overflow(klo, lo->mod, &prod) || khi != prod) continue;
          if (!lin_equal(linear(hi->base), linear(lo->base), eq_)) continue;
          Lin merged = linear(lo->base);
          DType t = l.terms[i].atom->dtype;
          if (lo->div > 1) merged = div_mod(ExprKind::FloorDiv, merged, lo->div, t);
          if (hi->mod > 0)
            merged = div_mod(ExprKind::FloorMod, merged, ck_mul(lo->mod, hi->mod), t);
          // The merged term takes the place of the first of the pair, keeping the order stable.
          Lin rest;
          for (size_t k = 0; k < l.terms.size(); ++k) {
            if (k == std::min(i, j))
              rest.add(merged, klo, eq_);
            else if (k != i && k != j)
              rest.add_term(l.terms[k].atom, l.terms[k].coeff, eq_);
          }
          rest.c = ck_add(rest.c, l.c);
          l = std::move(rest);
          changed = true;
        }
      }
      if (!changed) return;
    }
  }

  const RangeMap& ranges() const { return ranges_; }
  IntBound atom_bound(const Expr& e) { return bounds_.get(e); }
  ExprEq& eq() { return eq_; }

private:
  static int64_t ck_sub(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) throw Overflow{};
    return r;
  }

  static bool has_positive(const Lin& l) {
    return std::any_of(l.terms.begin(), l.terms.end(), [](const Term& t) { return t.coeff > 0; });
  }

  Lin opaque(ExprKind kind, const Lin& num, int64_t c, DType t) {
    return Lin::atom(make_binary(kind, build(num, t), int_imm(c, t)));
  }

  std::vector<Expr> simplified_args(const Expr& e) {
    std::vector<Expr> args;
    args.reserve(e->args.size());
    for (const Expr& a : e->args)
      args.push_back(simplify(a));
    return args;
  }

  Lin linear_uncached(const Expr& e) {
    const auto& a = e->args;
    DType t = e->dtype;
    switch (e->kind) {
    case ExprKind::IntImm:
      return Lin::constant(e->int_value);
    case ExprKind::Var:
      return Lin::atom(e);
    case ExprKind::Add:
    case ExprKind::Sub: {
      Lin l = linear(a[0]);
      l.add(linear(a[1]), e->kind == ExprKind::Add ? 1 : -1, eq_);
      return l;
    }
    case ExprKind::Mul: {
      Lin x = linear(a[0]), y = linear(a[1]);
      if (x.is_const()) return scaled(y, x.c);
      if (y.is_const()) return scaled(x, y.c);
      return Lin::atom(make_binary(ExprKind::Mul, build(x, t), build(y, t)));
    }
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: {
      Lin x = linear(a[0]), y = linear(a[1]);
      if (y.is_const() && y.c != 0) return div_mod(e->kind, x, y.c, t);
      IntBound bx = bound(x), by = bound(y);
      if (by.min > 0 && bx.min >= 0 && bx.max < by.min)
        return e->kind == ExprKind::FloorDiv ? Lin::constant(0) : x;
      return Lin::atom(make_binary(e->kind, build(x, t), build(y, t)));
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      Lin x = linear(a[0]), y = linear(a[1]);
      Lin d = x;
      d.add(y, -1, eq_);
      IntBound bd = bound(d);
      bool is_min = e->kind == ExprKind::Min;
      if (bd.max <= 0) return is_min ? x : y;
      if (bd.min >= 0) return is_min ? y : x;
      return Lin::atom(make_binary(e->kind, build(x, t), build(y, t)));
    }
    case ExprKind::Select: {
      Expr c = simplify(a[0]);
      int64_t v;
      if (is_const_int(c, &v)) return linear(v != 0 ? a[1] : a[2]);
      Lin x = linear(a[1]), y = linear(a[2]);
      if (lin_equal(x, y, eq_)) return x;
      return Lin::atom(make_select(c, build(x, t), build(y, t)));
    }
    case ExprKind::Cast:
      return Lin::atom(simplify_cast(e));
    default:
      return Lin::atom(with_args(e, simplified_args(e)));
    }
  }

  Expr simplify_cast(const Expr& e) {
    Expr v = simplify(e->args[0]);
    DType t = e->dtype;
    int64_t c;
    if (is_const_int(v, &c)) {
      if (t.is_int() || t.is_bool()) return int_imm(wrap_to(c, t), t);
      if (t.is_float()) return float_imm(static_cast<double>(c), t);
    }
    // cast<t>(cast<m>(x)) == x when x has type t and its values fit in m.
    if (v->kind == ExprKind::Cast && v->args[0]->dtype == t && (t.is_int() || t.is_bool()) &&
        (v->dtype.is_int() || v->dtype.is_bool()) &&
        within(bounds_.get(v->args[0]), type_bound(v->dtype)))
      return v->args[0];
    return with_args(e, {v});
  }

  Expr simplify_uncached(const Expr& e) {
    if (e->dtype.is_int()) return build(linear(e), e->dtype);
    const auto& a = e->args;
    switch (e->kind) {
    case ExprKind::EQ:
    case ExprKind::NE:
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE:
      return simplify_compare(e);
    case ExprKind::And:
    case ExprKind::Or: {
      Expr x = simplify(a[0]), y = simplify(a[1]);
      bool is_and = e->kind == ExprKind::And;
      int64_t v;
      if (is_const_int(x, &v)) return (v != 0) == is_and ? y : bool_imm(!is_and);
      if (is_const_int(y, &v)) return (v != 0) == is_and ? x : bool_imm(!is_and);
      if (eq_(x, y)) return x;
      return make_binary(e->kind, x, y);
    }
    case ExprKind::Not: {
      Expr x = simplify(a[0]);
      int64_t v;
      if (is_const_int(x, &v)) return bool_imm(v == 0);
      if (x->kind == ExprKind::Not) return x->args[0];
      if (is_comparison(x->kind) && !x->args[0]->dtype.is_float())
        return make_binary(negate_comparison(x->kind), x->args[0], x->args[1]);
      return make_not(x);
    }
    case ExprKind::Select: {
      Expr c = simplify(a[0]);
      int64_t v;
      if (is_const_int(c, &v)) return simplify(v != 0 ? a[1] : a[2]);
      Expr x = simplify(a[1]), y = simplify(a[2]);
      if (eq_(x, y)) return x;
      return make_select(c, x, y);
    }
    case ExprKind::Cast:
      return simplify_cast(e);
    default:
      return with_args(e, simplified_args(e));
    }
  }

  Expr simplify_compare(const Expr& e) {
    const Expr& a = e->args[0];
    const Expr& b = e->args[1];
    if (!a->dtype.is_int()) {
      Expr x = simplify(a), y = simplify(b);
      int64_t u, v;
      if (is_const_int(x, &u) && is_const_int(y, &v))
        if (auto r = compare_bounds(e->kind, {u, u}, {v, v})) return bool_imm(*r);
      return with_args(e, {x, y});
    }
    try {
      return compare_linear(e->kind, linear(a), linear(b), a->dtype);
    } catch (const Overflow&) {
      return with_args(e, {simplify(a), simplify(b)});
    }
  }

  // `x <kind> y` as `lhs <kind> rhs` with positive terms on the left, the rest on the right.
  Expr compare_linear(ExprKind kind, Lin d, const Lin& y, DType t) {
    d.add(y, -1, eq_);
    if (auto r = compare_bounds(kind, bound(d), {0, 0})) return bool_imm(*r);
    int64_t g = 0;
    for (const Term& term : d.terms)
      g = std::gcd(g, term.coeff < 0 ? -term.coeff : term.coeff);
    if (g > 1) {
      // Divide through by the common factor; the constant rounds the way that keeps the
      // relation exact (4x - 10 < 0 <=> x - 3 < 0, 4x - 10 <= 0 <=> x - 2 <= 0).
      bool equality = kind == ExprKind::EQ || kind == ExprKind::NE;
      if (equality && d.c % g != 0) return bool_imm(kind == ExprKind::NE);
      int64_t floor_c = floordiv_i(d.c, g), ceil_c = -floordiv_i(ck_mul(d.c, -1), g);
      Lin r;
      for (const Term& term : d.terms)
        r.push(term.atom, term.coeff / g);
      r.c = equality ? d.c / g : (kind == ExprKind::LT || kind == ExprKind::GE) ? floor_c : ceil_c;
      d = std::move(r);
      if (auto res = compare_bounds(kind, bound(d), {0, 0})) return bool_imm(*res);
    }
    if (!has_positive(d)) {
      d = scaled(d, -1);
      kind = flip_comparison(kind);
    }
    Lin lhs, rhs;
    for (const Term& term : d.terms) {
      if (term.coeff > 0)
        lhs.push(term.atom, term.coeff);
      else
        rhs.push(term.atom, -term.coeff);
    }
    rhs.c = ck_mul(d.c, -1);
    return make_binary(kind, build(lhs, t), build(rhs, t));
  }

  const RangeMap& ranges_;
  BoundAnalyzer bounds_;
  ExprEq eq_;
  NodeMemo<Expr> simp_cache_;
  NodeMemo<Lin> lin_cache_;
};

// ---- statements ---------------------------------------------------------------------------------

class StmtSimplifier {
public:
  explicit StmtSimplifier(const RangeMap& ranges) : ranges_(ranges) {}

  Stmt visit(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
    case StmtKind::For: {
      auto* n = as<ForNode>(s);
      Stmt body;
      {
        Scope scope(*this);
        if (n->extent >= 1) scope.set(n->loop_var.get(), {0, n->extent - 1});
        body = visit(n->body);
      }
      return body == n->body ? s : with_body(s, body);
    }
    case StmtKind::Seq: {
      auto* n = as<SeqNode>(s);
      bool changed = false;
      std::vector<Stmt> items;
      for (const Stmt& c : n->stmts) {
        items.push_back(visit(c));
        changed = changed || items.back() != c;
      }
      if (!changed) return s;
      auto m = std::make_shared<SeqNode>(*n);
      m->stmts = std::move(items);
      return m;
    }
    case StmtKind::Store: {
      auto* n = as<StoreNode>(s);
      Simplifier simp(ranges_);
      bool changed = false;
      std::vector<Expr> idx;
      for (const Expr& i : n->indices) {
        idx.push_back(simp.simplify(i));
        changed = changed || !idx.back().same_as(i);
      }
      Expr value = simp.simplify(n->value);
      if (!changed && value.same_as(n->value)) return s;
      auto m = std::make_shared<StoreNode>(*n);
      m->indices = std::move(idx);
      m->value = std::move(value);
      return m;
    }
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      Expr cond = Simplifier(ranges_).simplify(n->condition);
      Stmt then_case;
      {
        Scope scope(*this);
        refine(scope, cond);
        then_case = visit(n->then_case);
      }
      Stmt else_case = visit(n->else_case);
      if (cond.same_as(n->condition) && then_case == n->then_case && else_case == n->else_case)
        return s;
      auto m = std::make_shared<IfThenElseNode>(*n);
      m->condition = cond;
      m->then_case = then_case;
      m->else_case = else_case;
      return m;
    }
    case StmtKind::Allocate: {
      auto* n = as<AllocateNode>(s);
      Stmt body = visit(n->body);
      return body == n->body ? s : with_body(s, body);
    }
    case StmtKind::BlockRealize:
      return visit_block_realize(s);
    }
    return s;
  }

private:
  // Sets ranges for the duration of a C++ scope and restores the previous ones afterwards.
  class Scope {
  public:
    explicit Scope(StmtSimplifier& owner) : owner_(owner) {}
    ~Scope() {
      for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
        if (it->second)
          owner_.ranges_[it->first] = *it->second;
        else
          owner_.ranges_.erase(it->first);
      }
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

    void set(const ExprNode* var, IntBound b) {
      auto it = owner_.ranges_.find(var);
      saved_.emplace_back(var, it == owner_.ranges_.end() ? std::nullopt
                                                          : std::optional<IntBound>(it->second));
      owner_.ranges_[var] = b;
    }
    IntBound get(const ExprNode* var) const {
      auto it = owner_.ranges_.find(var);
      return it == owner_.ranges_.end() ? IntBound{} : it->second;
    }

  private:
    StmtSimplifier& owner_;
    std::vector<std::pair<const ExprNode*, std::optional<IntBound>>> saved_;
  };

  // Narrows variable ranges with the `var <cmp> constant` conjuncts of a branch condition.
  void refine(Scope& scope, const Expr& cond) {
    if (cond->kind == ExprKind::And) {
      refine(scope, cond->args[0]);
      refine(scope, cond->args[1]);
      return;
    }
    if (!is_comparison(cond->kind)) return;
    ExprKind k = cond->kind;
    Expr x = cond->args[0], y = cond->args[1];
    int64_t c;
    if (!is_var(x)) {
      std::swap(x, y);
      k = flip_comparison(k);
    }
    if (!is_var(x) || !x->dtype.is_int() || !is_const_int(y, &c)) return;
    if (c <= kNegInf || c >= kPosInf) return;
    IntBound b = scope.get(x.get());
    switch (k) {
    case ExprKind::LT:
      b.max = std::min(b.max, c - 1);
      break;
    case ExprKind::LE:
      b.max = std::min(b.max, c);
      break;
    case ExprKind::GT:
      b.min = std::max(b.min, c + 1);
      break;
    case ExprKind::GE:
      b.min = std::max(b.min, c);
      break;
    case ExprKind::EQ:
      b = intersect(b, {c, c});
      break;
    default:
      return;
    }
    if (b.min <= b.max) scope.set(x.get(), b);
  }

  Stmt visit_block_realize(const Stmt& s) {
    auto* n = as<BlockRealizeNode>(s);
    Simplifier simp(ranges_);
    bool changed = false;
    std::vector<Expr> values;
    for (const Expr& v : n->iter_values) {
      values.push_back(simp.simplify(v));
      changed = changed || !values.back().same_as(v);
    }
    Expr pred = simp.simplify(n->predicate);
    changed = changed || !pred.same_as(n->predicate);
    const Block& blk = *n->block;
    Stmt init, body;
    {
      Scope scope(*this);
      for (const IterVar& iv : blk.iter_vars)
        if (iv.extent >= 1) scope.set(iv.var.get(), {0, iv.extent - 1});
      init = visit(blk.init);
      body = visit(blk.body);
    }
    bool block_changed = init != blk.init || body != blk.body;
    if (!changed && !block_changed) return s;
    auto m = std::make_shared<BlockRealizeNode>(*n);
    m->iter_values = std::move(values);
    m->predicate = pred;
    if (block_changed) {
      Block b = blk;
      b.init = init;
      b.body = body;
      m->block = std::make_shared<const Block>(std::move(b));
    }
    return m;
  }

  RangeMap ranges_;
};

// ---- relaxation ---------------------------------------------------------------------------------

// The range of an integer expression as [min, min + span] with `min` free of relaxed variables.
struct LinRange {
  Lin min;
  int64_t span = 0;
};

class Relaxer {
public:
  Relaxer(const RangeMap& relaxed, Simplifier& simp) : relaxed_(relaxed), simp_(simp) {}

  std::optional<LinRange> relax(const Lin& l) {
    LinRange r;
    r.min.c = l.c;
    for (const Term& term : l.terms) {
      if (!uses_any(term.atom, relaxed_)) {
        r.min.add_term(term.atom, term.coeff, simp_.eq());
        continue;
      }
      auto a = relax_atom(term.atom);
      if (!a) return std::nullopt;
      if (term.coeff > 0) {
        r.min.add(a->min, term.coeff, simp_.eq());
      } else {
        Lin hi = a->min;
        hi.c = ck_add(hi.c, a->span);
        r.min.add(hi, term.coeff, simp_.eq());
      }
      r.span = ck_add(r.span, ck_mul(term.coeff < 0 ? -term.coeff : term.coeff, a->span));
    }
    if (r.span >= kPosInf) return std::nullopt;
    return r;
  }

private:
  // The tighter of a symbolic range (a minimum depending on fixed variables) and constant
  // bounds (fixed variables taken over their context); the symbolic one on a tie.
  std::optional<LinRange> relax_atom(const Expr& e) {
    if (e->kind == ExprKind::Var) {
      IntBound b = relaxed_.at(e.get());
      if (!b.bounded() || b.max < b.min) return std::nullopt;
      return LinRange{Lin::constant(b.min), ck_add(b.max, -b.min)};
    }
    std::optional<LinRange> sym = symbolic_range(e);
    IntBound b = simp_.atom_bound(e);
    if (!b.bounded() || (sym && sym->span <= b.max - b.min)) return sym;
    return LinRange{Lin::constant(b.min), ck_add(b.max, -b.min)};
  }

  std::optional<LinRange> symbolic_range(const Expr& e) {
    DType t = e->dtype;
    const auto& a = e->args;
    int64_t c;
    if ((e->kind == ExprKind::FloorDiv || e->kind == ExprKind::FloorMod) &&
        is_const_int(a[1], &c) && c > 0) {
      auto inner = relax(simp_.linear(a[0]));
      if (!inner) return std::nullopt;
      // The offset of the fixed minimum inside its block of c decides how many blocks the
      // relaxed range can straddle.
      IntBound off = simp_.bound(simp_.div_mod(ExprKind::FloorMod, inner->min, c, t));
      off = intersect(off, {0, c - 1});
      if (e->kind == ExprKind::FloorDiv)
        return LinRange{simp_.div_mod(ExprKind::FloorDiv, inner->min, c, t),
                        (off.max + inner->span) / c};
      if (inner->span < c && off.max + inner->span < c)
        return LinRange{simp_.div_mod(ExprKind::FloorMod, inner->min, c, t), inner->span};
      return LinRange{Lin::constant(0), c - 1};
    }
    // min/max of [mx, mx + sx] and [my, my + sy] lies in [min(mx, my), + max(sx, sy)] (max
    // alike); a select on a fixed condition picks one of two such ranges.
    bool is_select = e->kind == ExprKind::Select && !uses_any(a[0], relaxed_);
    if (e->kind == ExprKind::Min || e->kind == ExprKind::Max || is_select) {
      auto x = relax(simp_.linear(a[is_select ? 1 : 0]));
      auto y = relax(simp_.linear(a[is_select ? 2 : 1]));
      if (!x || !y) return std::nullopt;
      Expr mx = simp_.build(x->min, t), my = simp_.build(y->min, t);
      Expr m = is_select ? make_select(a[0], mx, my) : make_binary(e->kind, mx, my);
      return LinRange{simp_.linear(m), std::max(x->span, y->span)};
    }
    return std::nullopt;
  }

  const RangeMap& relaxed_;
  Simplifier& simp_;
};

} // namespace

Expr simplify(const Expr& e, const RangeMap& ranges) {
  Simplifier s(ranges);
  return s.simplify(e);
}

Stmt simplify(const Stmt& s, const RangeMap& ranges) {
  return StmtSimplifier(ranges).visit(s);
}

struct RangeSimplifier::Impl {
  explicit Impl(const RangeMap& ranges) : simp(ranges) {}
  Simplifier simp;
};

RangeSimplifier::RangeSimplifier(const RangeMap& ranges) : impl_(std::make_unique<Impl>(ranges)) {}
RangeSimplifier::~RangeSimplifier() = default;

Expr RangeSimplifier::simplify(const Expr& e) {
  return impl_->simp.simplify(e);
}

bool RangeSimplifier::prove(const Expr& cond) {
  if (!cond) return false;
  Expr r = impl_->simp.simplify(cond);
  int64_t v;
  if (is_const_int(r, &v)) return v != 0;
  return impl_->simp.bound_of(r).min >= 1;
}

bool prove(const Expr& cond, const RangeMap& ranges) {
  if (!cond) return false;
  Expr r = simplify(cond, ranges);
  int64_t v;
  if (is_const_int(r, &v)) return v != 0;
  return BoundAnalyzer(ranges).get(r).min >= 1;
}

std::optional<RelaxedRange> relax(const Expr& index, const RangeMap& relaxed,
                                  const RangeMap& context) {
  if (!index || !index->dtype.is_int()) return std::nullopt;
  RangeMap all = context;
  for (const auto& [var, b] : relaxed)
    all[var] = b;
  Simplifier simp(all);
  try {
    Relaxer relaxer(relaxed, simp);
    auto r = relaxer.relax(simp.linear(index));
    if (!r) return std::nullopt;
    Expr min = simplify(simp.build(r->min, index->dtype), context);
    return RelaxedRange{min, r->span + 1};
  } catch (const Overflow&) {
    return std::nullopt;
  }
}

std::optional<int64_t> linear_coefficient(const Expr& e, const ExprNode* var) {
  if (!e || !e->dtype.is_int()) return std::nullopt;
  RangeMap none;
  Simplifier simp(none);
  Lin l = simp.linear(e);
  int64_t coeff = 0;
  for (const Term& t : l.terms) {
    if (t.atom.get() == var)
      coeff = t.coeff;
    else if (uses_var(t.atom, var))
      return std::nullopt;
  }
  return coeff;
}

} // namespace mt
