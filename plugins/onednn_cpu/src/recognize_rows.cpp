// Row-wise operators: softmax (max, exp, sum, divide), layer normalisation (sum, squared
// deviation, normalise with scale and shift) and plain reductions (sum / max / min / sum of
// squares, optionally followed by a square root: the L2 norm).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "expr_pattern.hpp"
#include "recognize.hpp"

namespace mt::onednn::detail {

namespace {

std::vector<P::Expr> without(const std::vector<P::Expr>& v, size_t i) {
  std::vector<P::Expr> out = v;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
  return out;
}

// A reduction of `load` over exactly one of its dims (a reduction var) into the stage's output
// indexed by the other dims in order; returns that dim.
size_t row_axis(const Stage& s, const P::Expr& load) {
  if (load->kind != P::ExprKind::Load) reject("the reduction operand is not a tensor");
  if (s.rvars.size() != 1) reject("not a reduction over one axis");
  for (size_t d = 0; d < load->args.size(); ++d) {
    int64_t v = 0;
    if (is_var(load->args[d], &v) && v == s.rvars[0].var) {
      if (!P::exprs_equal(without(load->args, d), s.out_idx))
        reject("the reduced tensor is not indexed by the output indices and the axis");
      return d;
    }
  }
  reject("the reduction var does not index the tensor");
}

std::vector<int64_t> all_vars(const Stage& s) {
  return s.out_vars;
}

std::vector<int> identity(size_t n) {
  std::vector<int> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<int>(i);
  return v;
}

} // namespace

Plan try_softmax(const StageProgram& sp) {
  if (sp.stages.size() != 4) reject("not four steps");
  const Stage &s0 = sp.stages[0], &s1 = sp.stages[1], &s2 = sp.stages[2], &s3 = sp.stages[3];
  if (s0.reduce != Reduce::Max || s0.init > -FLT_MAX) reject("step 1 is not a max reduction");
  const P::Expr& x0 = s0.value;
  size_t axis = row_axis(s0, x0);
  const P::Buffer& X = x0->buffer;
  if (!sp.is_param(X)) reject("the input is not a parameter");
  // e = exp(x - max)
  if (s1.reduce != Reduce::None || s1.out->shape != X->shape) reject("step 2 is not elementwise");
  {
    using namespace pat;
    P::Expr x = P::make_load(X, s1.out_idx);
    Captures c;
    if (!match(fn(P::MathFn::Exp, {op(P::ExprKind::Sub, {pat::X(), any(0)})}), s1.value, x, &c) ||
        !is_load_of(c.exprs[0], s0.out) ||
        !P::exprs_equal(c.exprs[0]->args, without(s1.out_idx, axis)))
      reject("step 2 is not exp(x - max)");
  }
  // total = sum(e)
  if (s2.reduce != Reduce::Sum || s2.init != 0 || !is_load_of(s2.value, s1.out) ||
      row_axis(s2, s2.value) != axis)
    reject("step 3 is not the sum of step 2 over the same axis");
  // out = e / total
  {
    const P::Expr& v = s3.value;
    if (s3.reduce != Reduce::None || v->kind != P::ExprKind::Div ||
        !P::expr_equal(v->args[0], P::make_load(s1.out, s3.out_idx)) ||
        !is_load_of(v->args[1], s2.out) ||
        !P::exprs_equal(v->args[1]->args, without(s3.out_idx, axis)))
      reject("step 4 is not exp / sum");
  }
  SoftmaxOp op;
  op.axis = static_cast<int>(axis);
  std::vector<int64_t> vars = all_vars(s1);
  op.src = view(sp, X, s1.out_idx, vars);
  op.dst = output_view(sp, identity(vars.size()));
  if (op.src.strides != op.dst.strides) reject("input and output layouts differ");
  Plan plan;
  plan.family = "softmax";
  plan.detail = dims_string(op.src.dims) + " axis " + std::to_string(axis);
  plan.op = op;
  return plan;
}

Plan try_layernorm(const StageProgram& sp) {
  using namespace pat;
  using K = P::ExprKind;
  if (sp.stages.size() != 3) reject("not three steps");
  const Stage &s0 = sp.stages[0], &s1 = sp.stages[1], &s2 = sp.stages[2];
  if (s0.reduce != Reduce::Sum || s0.init != 0) reject("step 1 is not a sum");
  size_t axis = row_axis(s0, s0.value);
  const P::Buffer& X = s0.value->buffer;
  if (!sp.is_param(X)) reject("the input is not a parameter");
  if (axis + 1 != X->shape.size()) reject("not normalised over the last axis");
  const double inv_n = 1.0 / static_cast<double>(X->shape[axis]);
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b); };
  // sqdev = sum((x - total * (1/n))^2)
  if (s1.reduce != Reduce::Sum || s1.init != 0 || s1.rvars.size() != 1)
    reject("step 2 is not a sum");
  {
    size_t xpos = s1.out_idx.size(); // the reduction var sits at the axis
    std::vector<P::Expr> idx = s1.out_idx;
    P::Expr rv;
    for (const Loop& l : s1.loops)
      if (l.var == s1.rvars[0].var) rv = P::make_var("r", P::DType::index(), l.var);
    idx.insert(idx.begin() + static_cast<std::ptrdiff_t>(std::min(axis, xpos)), rv);
    P::Expr x = P::make_load(X, idx);
    Pat centered = op(K::Sub, {pat::X(), op(K::Mul, {any(0), any_c(0)})});
    Captures c;
    if (!match(op(K::Mul, {centered, op(K::Sub, {pat::X(), op(K::Mul, {any(1), any_c(1)})})}),
               s1.value, x, &c) ||
        !P::expr_equal(c.exprs[0], c.exprs[1]) || !is_load_of(c.exprs[0], s0.out) ||
        !P::exprs_equal(c.exprs[0]->args, s1.out_idx) || !close(c.consts[0], inv_n) ||
        !close(c.consts[1], inv_n))
      reject("step 2 is not the sum of squared deviations from the mean");
  }
  // out = (x - total/n) * rsqrt(sqdev/n + eps) [* gamma + beta]
  LayerNormOp op_;
  std::vector<int64_t> vars = all_vars(s2);
  {
    P::Expr x = P::make_load(X, s2.out_idx);
    Pat centered = op(K::Sub, {pat::X(), op(K::Mul, {any(0), any_c(0)})});
    Pat inv_std = fn(P::MathFn::Rsqrt, {op(K::Add, {op(K::Mul, {any(1), any_c(1)}), any_c(2)})});
    Captures c;
    bool affine_ =
        match(op(K::Add, {op(K::Mul, {centered, inv_std, any(2)}), any(3)}), s2.value, x, &c);
    if (!affine_) {
      c = Captures();
      if (!match(op(K::Mul, {centered, inv_std}), s2.value, x, &c))
        reject("step 3 is not (x - mean) * rsqrt(var + eps) [* gamma + beta]");
    }
    std::vector<P::Expr> row = without(s2.out_idx, axis);
    if (!is_load_of(c.exprs[0], s0.out) || !P::exprs_equal(c.exprs[0]->args, row) ||
        !is_load_of(c.exprs[1], s1.out) || !P::exprs_equal(c.exprs[1]->args, row) ||
        !close(c.consts[0], inv_n) || !close(c.consts[1], inv_n))
      reject("step 3 does not use the mean and variance of steps 1 and 2");
    op_.eps = static_cast<float>(c.consts[2]);
    if (affine_) {
      for (int k = 2; k < 4; ++k) {
        const P::Expr& l = c.exprs[k];
        if (l->kind != K::Load || !sp.is_param(l->buffer) || l->args.size() != 1 ||
            !P::expr_equal(l->args[0], s2.out_idx[axis]))
          reject("scale or shift is not a parameter along the normalised axis");
        TensorRef r{sp.param_of(l->buffer), {l->buffer->shape[0]}, {1}};
        (k == 2 ? op_.scale : op_.shift) = r;
      }
    }
  }
  op_.src = view(sp, X, s2.out_idx, vars);
  op_.dst = output_view(sp, identity(vars.size()));
  if (op_.src.strides != op_.dst.strides) reject("input and output layouts differ");
  Plan plan;
  plan.family = "layernorm";
  plan.detail = dims_string(op_.src.dims) + (op_.scale ? " scale+shift" : "");
  plan.op = op_;
  return plan;
}

Plan try_reduction(const StageProgram& sp) {
  const Stage& m = sp.stages[0];
  if (m.reduce == Reduce::None) reject("the first step is not a reduction");
  ReductionOp op;
  P::Expr x = m.value;
  if (m.reduce == Reduce::Sum && m.init == 0) {
    op.kind = ReductionOp::Sum;
    if (x->kind == P::ExprKind::Mul && P::expr_equal(x->args[0], x->args[1])) {
      op.kind = ReductionOp::NormLpPowerPSum;
      x = x->args[0];
    }
  } else if (m.reduce == Reduce::Max && m.init <= -FLT_MAX) {
    op.kind = ReductionOp::Max;
  } else if (m.reduce == Reduce::Min && m.init >= FLT_MAX) {
    op.kind = ReductionOp::Min;
  } else {
    reject("a reduction with an unusual initial value");
  }
  if (x->kind != P::ExprKind::Load || !sp.is_param(x->buffer))
    reject("the reduction operand is not a parameter (or its square)");
  // src in the tensor's own order; dst the same dims with the reduced ones set to 1.
  std::vector<int64_t> vars;
  std::vector<int> logical;
  for (const P::Expr& e : x->args) {
    int64_t v = 0;
    if (!is_var(e, &v)) reject("a reduced tensor index that is not a loop variable");
    vars.push_back(v);
    int pos = -1;
    for (size_t d = 0; d < m.out_vars.size(); ++d)
      if (m.out_vars[d] == v) pos = static_cast<int>(d);
    if (pos < 0 && !m.is_reduce_var(v)) reject("an index that is neither output nor reduced");
    logical.push_back(pos);
  }
  for (int64_t v : m.out_vars)
    if (v >= 0 && std::find(vars.begin(), vars.end(), v) == vars.end())
      reject("an output dim the reduced tensor does not have (a broadcast)");
  op.src = view(sp, x->buffer, x->args, vars);
  op.dst = output_view(sp, logical);
  Plan plan;
  plan.post_ops = match_tail(sp, 1, logical);
  if (op.kind == ReductionOp::NormLpPowerPSum && !plan.post_ops.empty() &&
      plan.post_ops[0].alg == Alg::Sqrt) {
    op.kind = ReductionOp::NormLpSum;
    plan.post_ops.erase(plan.post_ops.begin());
  }
  static const char* const kNames[] = {"sum", "max", "min", "l2 norm", "sum of squares"};
  plan.family = op.kind == ReductionOp::NormLpSum ? "norm" : "reduction";
  plan.detail = std::string(kNames[op.kind]) + " " + dims_string(op.src.dims) + " -> " +
                dims_string(op.dst.dims);
  for (const PostOp& p : plan.post_ops)
    plan.detail += std::string(" +") + to_string(p.alg);
  plan.op = op;
  return plan;
}

} // namespace mt::onednn::detail
