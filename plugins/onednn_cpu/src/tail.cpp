// The elementwise stages after a main operator as oneDNN post-ops, and the final output's
// view. A stage may apply several steps at once (scores * scale, then a causal select, then a
// padding select, all in one stage of an attention kernel): its value is peeled from the
// outside in, each layer one eltwise / binary step or a select with a constant fill.
#include <cmath>

#include "expr_pattern.hpp"
#include "logical_dims.hpp"
#include "recognize.hpp"

namespace mt::onednn::detail {

namespace {

bool contains(const P::Expr& e, const P::Expr& x) {
  bool found = false;
  P::post_order_visit(e, [&](const P::Expr& s) { found = found || P::expr_equal(s, x); });
  return found;
}

// One layer of a stage's value around the previous result.
struct RawStep {
  enum Kind { Unary, Binary, Select } kind = Unary;
  PostOp op;       // Unary; Binary (alg)
  P::Expr operand; // Binary: the other operand (a parameter load)
  P::Expr cond;    // Select: dst = cond ? dst : fill
  float fill = 0;
};

class StepPeeler {
public:
  StepPeeler(const StageProgram& sp, const P::Expr& x) : sp_(sp), x_(x) {}

  // The steps with e == step_n(... step_1(x)), innermost first.
  std::optional<std::vector<RawStep>> operator()(const P::Expr& e) const {
    if (P::expr_equal(e, x_)) return std::vector<RawStep>{};
    if (e->kind == P::ExprKind::Select) return select(e);
    if (auto s = around(e, x_)) return s;
    // e = g(s) for a proper subexpression s holding x; the larger ones first.
    std::vector<P::Expr> inner;
    for (const P::Expr& a : e->args)
      P::post_order_visit(a, [&](const P::Expr& s) {
        if (contains(s, x_) && !P::expr_equal(s, x_)) inner.push_back(s);
      });
    for (auto it = inner.rbegin(); it != inner.rend(); ++it)
      if (auto s = around(e, *it)) return s;
    return flattened(e);
  }

private:
  // e == step(s): the steps of s, then that one.
  std::optional<std::vector<RawStep>> around(const P::Expr& e, const P::Expr& s) const {
    RawStep step;
    if (auto u = match_unary(e, s)) {
      step.op = *u;
    } else if (auto b = match_binary(e, s);
               b && sp_.is_param(b->second->buffer) && !contains(b->second, x_)) {
      step.kind = RawStep::Binary;
      step.op.alg = b->first;
      step.operand = b->second;
    } else {
      return std::nullopt;
    }
    auto steps = P::expr_equal(s, x_) ? std::vector<RawStep>{} : (*this)(s);
    if (!steps) return std::nullopt;
    steps->push_back(step);
    return steps;
  }

  // A flattened product or sum of more than two terms, one of them a parameter's load: the
  // other terms first, then that load as one binary step (SwiGLU's x * sigmoid(x) * up).
  std::optional<std::vector<RawStep>> flattened(const P::Expr& e) const {
    using K = P::ExprKind;
    if (e->kind != K::Mul && e->kind != K::Add) return std::nullopt;
    std::vector<P::Expr> terms; // nested products (sums) as one list, as patterns see them
    std::vector<P::Expr> stack = {e};
    while (!stack.empty()) {
      P::Expr t = stack.back();
      stack.pop_back();
      if (t->kind == e->kind)
        stack.insert(stack.end(), t->args.rbegin(), t->args.rend());
      else
        terms.push_back(t);
    }
    if (terms.size() < 3) return std::nullopt;
    for (size_t i = 0; i < terms.size(); ++i) {
      const P::Expr& a = terms[i];
      if (a->kind != K::Load || !sp_.is_param(a->buffer) || contains(a, x_)) continue;
      P::Expr rest;
      for (size_t j = 0; j < terms.size(); ++j)
        if (j != i) rest = rest ? P::make_binary(e->kind, rest, terms[j]) : terms[j];
      auto steps = (*this)(rest);
      if (!steps) continue;
      RawStep step;
      step.kind = RawStep::Binary;
      step.op.alg = e->kind == K::Mul ? Alg::Mul : Alg::Add;
      step.operand = a;
      steps->push_back(step);
      return steps;
    }
    return std::nullopt;
  }

  // select(c, inner, fill) or select(c, fill, inner), fill a constant.
  std::optional<std::vector<RawStep>> select(const P::Expr& e) const {
    const P::Expr &c = e->args[0], &t = e->args[1], &f = e->args[2];
    if (contains(c, x_)) return std::nullopt;
    double fill = 0;
    RawStep step;
    step.kind = RawStep::Select;
    P::Expr inner;
    if (contains(t, x_) && float_value(f, &fill)) {
      inner = t;
      step.cond = c;
    } else if (contains(f, x_) && float_value(t, &fill)) {
      inner = f;
      step.cond = P::make_not(c);
    } else {
      return std::nullopt;
    }
    step.fill = static_cast<float>(fill);
    auto steps = (*this)(inner);
    if (!steps) return std::nullopt;
    steps->push_back(step);
    return steps;
  }

  const StageProgram& sp_;
  const P::Expr& x_;
};

bool comparison(P::ExprKind k, Cmp* out) {
  switch (k) {
  case P::ExprKind::LT:
    *out = Cmp::LT;
    return true;
  case P::ExprKind::LE:
    *out = Cmp::LE;
    return true;
  case P::ExprKind::GT:
    *out = Cmp::GT;
    return true;
  case P::ExprKind::GE:
    *out = Cmp::GE;
    return true;
  case P::ExprKind::EQ:
    *out = Cmp::EQ;
    return true;
  case P::ExprKind::NE:
    *out = Cmp::NE;
    return true;
  default:
    return false;
  }
}

Cmp mirrored(Cmp c) { // a cmp b == b mirrored(cmp) a
  switch (c) {
  case Cmp::LT:
    return Cmp::GT;
  case Cmp::LE:
    return Cmp::GE;
  case Cmp::GT:
    return Cmp::LT;
  case Cmp::GE:
    return Cmp::LE;
  default:
    return c;
  }
}

// A select's condition as conjuncts over the logical dims of stage `t`.
class ConditionBuilder {
public:
  ConditionBuilder(const StageProgram& sp, const std::vector<LogicalDim>& dims, const DigitMap& dm)
      : sp_(sp), dims_(dims), digits_(dm) {}

  void add(const P::Expr& c, std::vector<Condition>* out) const {
    if (c->kind == P::ExprKind::And) {
      add(c->args[0], out);
      add(c->args[1], out);
      return;
    }
    bool loads = false;
    P::post_order_visit(c,
                        [&](const P::Expr& e) { loads = loads || e->kind == P::ExprKind::Load; });
    out->push_back(loads ? of_tensor(c) : of_position(c));
  }

private:
  // Known from the element's position: evaluated at every point of the dims it depends on.
  Condition of_position(const P::Expr& c) const {
    Condition cond;
    for (int64_t v : tabulate(c, &cond.dims, "a mask condition that is not an index comparison"))
      cond.values.push_back(v != 0);
    return cond;
  }

  // An index expression of the element (no loads) at every point of the dims it depends on,
  // row-major over *dims (a dim of 1 where it does not vary).
  std::vector<int64_t> tabulate(const P::Expr& e, std::vector<int64_t>* dims,
                                const char* not_index) const {
    std::vector<bool> used(dims_.size(), false);
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind != P::ExprKind::Var) return;
      auto it = digits_.find(x->var_id);
      if (it == digits_.end()) reject("a mask condition on a variable outside the operator");
      for (auto [dim, unit] : it->second.digits)
        used[dim] = true;
    });
    int64_t points = 1;
    dims->clear();
    for (size_t d = 0; d < dims_.size(); ++d) {
      dims->push_back(used[d] ? dims_[d].extent : 1);
      points *= dims->back();
    }
    if (points > (int64_t{1} << 24)) reject("a position mask too large to tabulate");
    std::vector<int64_t> values(static_cast<size_t>(points));
    std::vector<int64_t> at(dims_.size(), 0);
    std::unordered_map<int64_t, int64_t> vars;
    for (int64_t i = 0; i < points; ++i) {
      for (const auto& [var, ds] : digits_) {
        int64_t v = ds.offset;
        for (auto [dim, unit] : ds.digits)
          v += at[dim] * unit;
        vars[var] = v;
      }
      auto value = eval_index(e, vars);
      if (!value) reject(not_index);
      values[static_cast<size_t>(i)] = *value;
      for (size_t d = dims_.size(); d-- > 0;) // next point, row-major
        if (++at[d] < (*dims)[d])
          break;
        else
          at[d] = 0;
    }
    return values;
  }

  static bool has_load(const P::Expr& e) {
    bool loads = false;
    P::post_order_visit(e,
                        [&](const P::Expr& x) { loads = loads || x->kind == P::ExprKind::Load; });
    return loads;
  }

  // tensor[...] (+ or - a constant) cmp a constant or an index of the element (either way
  // round); an integer tensor may be widened first (a decode step's i64(positions[...]), and
  // i64(positions[...]) - window under a sliding window).
  Condition of_tensor(const P::Expr& c) const {
    Condition cond;
    if (!comparison(c->kind, &cond.cmp)) reject("a mask condition that is not a comparison");
    P::Expr load = c->args[0], other = c->args[1];
    if (!has_load(load)) {
      std::swap(load, other);
      cond.cmp = mirrored(cond.cmp);
    }
    if (has_load(other)) reject("a mask comparison that is not with a constant or an index");
    double shift = 0; // the compared value is load + shift
    for (double k = 0;;) {
      if (load->kind == P::ExprKind::Cast && load->args[0]->dtype.is_int() &&
          load->dtype.is_int() && load->args[0]->dtype.bits <= load->dtype.bits) {
        load = load->args[0];
      } else if ((load->kind == P::ExprKind::Add || load->kind == P::ExprKind::Sub) &&
                 float_value(load->args[1], &k)) {
        shift += load->kind == P::ExprKind::Add ? k : -k;
        load = load->args[0];
      } else if (load->kind == P::ExprKind::Add && float_value(load->args[0], &k)) {
        shift += k;
        load = load->args[1];
      } else {
        break;
      }
    }
    if (load->kind != P::ExprKind::Load || !sp_.is_param(load->buffer))
      reject("a mask read from something other than a parameter");
    const P::DType t = load->buffer->dtype;
    cond.src_i32 = t == P::DType::i32();
    if (!(t == P::DType::f32()) && !cond.src_i32)
      reject("a mask read from a parameter neither f32 nor i32");
    // Moving the constant across is exact in integers; a float sum rounds where the
    // comparison on the other side would not.
    if (shift != 0 && !cond.src_i32) reject("a mask adding a constant to a float tensor");
    // load + shift cmp other == load cmp other - shift
    double k = 0;
    if (!float_value(other, &k)) {
      if (shift != std::floor(shift)) reject("a mask comparing an index with a fractional sum");
      cond.index_values = tabulate(other, &cond.index_dims,
                                   "a mask comparison that is not with a constant or an index");
      for (int64_t& v : cond.index_values)
        v -= static_cast<int64_t>(shift);
    }
    cond.threshold = k - shift;
    StridedAccess a = strided_access(load->buffer, load->args, digits_, dims_);
    cond.src = strided_ref(sp_.param_of(load->buffer), a, dims_, /*broadcast=*/true);
    cond.dims = cond.src->dims;
    for (size_t d = 0; d < cond.index_dims.size() && d < cond.dims.size(); ++d)
      cond.dims[d] = std::max(cond.dims[d], cond.index_dims[d]);
    return cond;
  }

  const StageProgram& sp_;
  const std::vector<LogicalDim>& dims_;
  const DigitMap& digits_;
};

} // namespace

std::vector<PostOp> match_tail(const StageProgram& sp, size_t first,
                               const std::vector<LogicalDim>& logical) {
  std::vector<PostOp> ops;
  for (size_t k = first; k < sp.stages.size(); ++k) {
    const Stage& t = sp.stages[k];
    const P::Buffer& prev = sp.stages[k - 1].out;
    std::string where = "elementwise step " + std::to_string(k - first + 1);
    if (t.reduce != Reduce::None) reject(where + " is a reduction");
    if (!sp.window && t.out->shape != prev->shape) reject(where + " changes the shape");
    if (!sp.intermediates.count(prev->id)) reject(where + " follows a parameter");
    P::Expr x;
    int own = 0;
    P::post_order_visit(t.value, [&](const P::Expr& e) {
      if (is_load_of(e, prev)) {
        if (static_cast<bool>(x) && !P::expr_equal(e, x))
          reject(where + " reads the previous result elsewhere");
        x = e;
        ++own;
      }
    });
    if (own == 0 || own != sp.num_reads(prev))
      reject(where + ": the previous result is also read by another step");
    const DigitMap digits = digit_map(sp, k, logical);
    // The element of the previous result at the same logical point as the one written.
    StridedAccess stored =
        strided_access(prev, sp.stages[k - 1].out_idx, digit_map(sp, k - 1, logical), logical);
    StridedAccess read = strided_access(prev, x->args, digits, logical);
    if (stored.strides != read.strides || stored.offset != read.offset)
      reject(where + " reads the previous result elsewhere");
    auto steps = StepPeeler(sp, x)(t.value);
    if (!steps) reject(where + " is not a chain of oneDNN eltwise, binary or select steps");
    for (const RawStep& s : *steps) {
      if (s.kind == RawStep::Unary) {
        ops.push_back(s.op);
      } else if (s.kind == RawStep::Binary) {
        PostOp op = s.op;
        const P::Expr& y = s.operand;
        op.src1 = strided_ref(sp.param_of(y->buffer),
                              strided_access(y->buffer, y->args, digits, logical), logical,
                              /*broadcast=*/true);
        ops.push_back(op);
      } else {
        // Consecutive selects with the same fill are one: keep both conditions.
        if (ops.empty() || ops.back().alg != Alg::Select || ops.back().fill != s.fill) {
          PostOp op;
          op.alg = Alg::Select;
          op.fill = s.fill;
          ops.push_back(op);
        }
        ConditionBuilder(sp, logical, digits).add(s.cond, &ops.back().conds);
      }
    }
  }
  return ops;
}

std::vector<PostOp> match_tail(const StageProgram& sp, size_t first,
                               const std::vector<int>& logical) {
  return match_tail(sp, first, position_dims(logical, sp.stages.back().out->shape));
}

TensorRef output_view(const StageProgram& sp, const std::vector<LogicalDim>& logical) {
  const Stage& last = sp.stages.back();
  StridedAccess a =
      strided_access(last.out, last.out_idx, digit_map(sp, sp.stages.size() - 1, logical), logical);
  TensorRef r = strided_ref(sp.param_of(last.out), a, logical, /*broadcast=*/false);
  if (!non_overlapping(r)) reject("an output written twice");
  return r;
}

TensorRef output_view(const StageProgram& sp, const std::vector<int>& logical) {
  return output_view(sp, position_dims(logical, sp.stages.back().out->shape));
}

} // namespace mt::onednn::detail
