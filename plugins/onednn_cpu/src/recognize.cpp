// The recogniser's dispatcher and the parts shared by the operator families: tensor views,
// pad stages and the elementwise chain operator itself (the tails: tail.cpp).
#include "recognize.hpp"

#include <algorithm>
#include <cmath>

#include "expr_pattern.hpp"

namespace mt::onednn {

namespace detail {

std::string dims_string(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

void fix_unit_strides(TensorRef* r) {
  int64_t inner = 0; // the stride of the nearest dim inside with more than one element
  bool row_major = true;
  int64_t span = 1;
  for (size_t d = r->dims.size(); d-- > 0;) {
    if (r->dims[d] == 1) continue;
    if (inner && r->strides[d] < inner) row_major = false;
    inner = r->strides[d];
    span = std::max(span, r->dims[d] * r->strides[d]);
  }
  int64_t next = 1; // under row-major order: the extent of what lies inside dim d
  for (size_t d = r->dims.size(); d-- > 0;) {
    if (r->dims[d] > 1)
      next = r->dims[d] * r->strides[d];
    else
      r->strides[d] = row_major ? next : span;
  }
}

TensorRef view(const StageProgram& sp, const P::Buffer& b, const std::vector<P::Expr>& idx,
               const std::vector<int64_t>& vars, bool broadcast) {
  TensorRef r;
  r.param = sp.param_of(b);
  std::vector<int64_t> strides = P::row_major_strides(b->shape);
  std::vector<bool> used(idx.size(), false);
  for (int64_t v : vars) {
    int64_t found = -1;
    for (size_t d = 0; d < idx.size() && v >= 0; ++d) {
      int64_t w = 0;
      if (!used[d] && is_var(idx[d], &w) && w == v) {
        found = static_cast<int64_t>(d);
        break;
      }
    }
    if (found < 0) {
      if (v >= 0 && !broadcast) reject("an access that does not use every operator dimension");
      r.dims.push_back(1);
      r.strides.push_back(0);
      continue;
    }
    used[found] = true;
    r.dims.push_back(b->shape[found]);
    r.strides.push_back(strides[found]);
  }
  for (size_t d = 0; d < idx.size(); ++d)
    if (!used[d] && b->shape[d] != 1)
      reject("an access with index " + std::to_string(d) +
             " that is not a plain loop variable of the operator");
  fix_unit_strides(&r);
  return r;
}

std::optional<PadInfo> match_pad(const StageProgram& sp, const Stage& s) {
  if (s.reduce != Reduce::None) return std::nullopt;
  P::Expr load = s.value, cond;
  double fill = 0;
  if (load->kind == P::ExprKind::Select) {
    cond = load->args[0];
    if (!float_value(load->args[2], &fill)) return std::nullopt;
    load = load->args[1];
  }
  if (load->kind != P::ExprKind::Load || !sp.is_param(load->buffer) || !cond) return std::nullopt;
  PadInfo info;
  info.stage = &s;
  info.source = load->buffer;
  info.fill = fill;
  const size_t rank = s.out->shape.size();
  if (load->args.size() != rank) return std::nullopt;
  for (size_t d = 0; d < rank; ++d) {
    P::Expr e = load->args[d];
    // Clamps keep the (unselected) load in bounds: strip min(., c) / max(., c).
    while ((e->kind == P::ExprKind::Min || e->kind == P::ExprKind::Max) &&
           e->args[1]->kind == P::ExprKind::IntImm)
      e = e->args[0];
    auto a = P::affine(e);
    int64_t v = s.out_vars[d];
    if (v < 0) {
      if (!a || !a->coef.empty() || a->constant != 0) return std::nullopt;
      info.before.push_back(0);
    } else {
      if (!a || a->coef.size() != 1 || !a->coef.count(v) || a->coef.at(v) != 1 || a->constant > 0)
        return std::nullopt;
      info.before.push_back(-a->constant);
    }
    info.after.push_back(s.out->shape[d] - info.source->shape[d] - info.before.back());
    if (info.after.back() < 0) return std::nullopt;
  }
  // The condition must be exactly "inside the source" on the padded dimensions.
  std::vector<std::pair<int64_t, int64_t>> lower, upper; // (var, bound)
  std::vector<P::Expr> todo = {cond};
  while (!todo.empty()) {
    P::Expr c = todo.back();
    todo.pop_back();
    if (c->kind == P::ExprKind::And) {
      todo.push_back(c->args[0]);
      todo.push_back(c->args[1]);
      continue;
    }
    int64_t v = 0;
    if (!is_var(c->args.size() == 2 ? c->args[0] : P::Expr(), &v) ||
        c->args[1]->kind != P::ExprKind::IntImm)
      return std::nullopt;
    int64_t k = c->args[1]->int_value;
    if (c->kind == P::ExprKind::GE)
      lower.push_back({v, k});
    else if (c->kind == P::ExprKind::LT)
      upper.push_back({v, k});
    else
      return std::nullopt;
  }
  size_t expected = 0;
  for (size_t d = 0; d < rank; ++d) {
    int64_t v = s.out_vars[d];
    auto has = [&](const std::vector<std::pair<int64_t, int64_t>>& l, int64_t k) {
      return std::find(l.begin(), l.end(), std::make_pair(v, k)) != l.end();
    };
    if (info.before[d] > 0) {
      ++expected;
      if (!has(lower, info.before[d])) return std::nullopt;
    }
    if (info.after[d] > 0) {
      ++expected;
      if (!has(upper, info.before[d] + info.source->shape[d])) return std::nullopt;
    }
  }
  if (expected != lower.size() + upper.size()) return std::nullopt;
  return info;
}

// The two loads of `a * b`.
std::pair<P::Expr, P::Expr> product(const Stage& m) {
  const P::Expr& v = m.value;
  if (v->kind != P::ExprKind::Mul || v->args[0]->kind != P::ExprKind::Load ||
      v->args[1]->kind != P::ExprKind::Load)
    reject("the reduction operand is not a product of two tensors");
  return {v->args[0], v->args[1]};
}

// A leading Add post-op that only varies along logical dim `dim` becomes the bias.
std::optional<TensorRef> take_bias(std::vector<PostOp>* ops, size_t dim, bool keep_rank) {
  if (ops->empty() || (*ops)[0].alg != Alg::Add) return std::nullopt;
  const TensorRef& s = (*ops)[0].src1;
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (d != dim && s.dims[d] != 1) return std::nullopt;
  TensorRef bias = s;
  if (!keep_rank) {
    bias.dims = {s.dims[dim]};
    bias.strides = {s.dims[dim] == 1 ? 1 : s.strides[dim]};
  }
  ops->erase(ops->begin());
  return bias;
}

std::string post_op_names(const std::vector<PostOp>& ops) {
  std::string s;
  for (const PostOp& p : ops)
    s += std::string(" +") + to_string(p.alg);
  return s;
}

Plan try_eltwise(const StageProgram& sp) {
  const Stage& s = sp.stages[0];
  if (s.reduce != Reduce::None) reject("the first step is a reduction");
  std::vector<P::Expr> loads;
  P::post_order_visit(s.value, [&](const P::Expr& e) {
    if (e->kind != P::ExprKind::Load) return;
    if (!sp.is_param(e->buffer)) reject("reads an intermediate");
    for (const auto& l : loads)
      if (P::expr_equal(l, e)) return;
    loads.push_back(e);
  });
  std::vector<int> logical;
  std::vector<int64_t> vars;
  for (size_t d = 0; d < s.out_vars.size(); ++d) {
    logical.push_back(static_cast<int>(d));
    vars.push_back(s.out_vars[d]);
  }
  Plan plan;
  if (loads.size() == 1) {
    auto u = match_unary(s.value, loads[0]);
    if (!u) reject("the first step is not a oneDNN eltwise function");
    EltwiseOp op;
    op.src = view(sp, loads[0]->buffer, loads[0]->args, vars);
    op.op = *u;
    op.dst = output_view(sp, logical);
    plan.family = "eltwise";
    plan.detail = std::string(to_string(u->alg)) + " " + dims_string(op.dst.dims);
    plan.op = op;
  } else if (loads.size() == 2) {
    std::optional<std::pair<Alg, P::Expr>> b;
    P::Expr x;
    for (const auto& l : loads)
      if ((b = match_binary(s.value, l))) {
        x = l;
        break;
      }
    if (!b) reject("the first step is not a oneDNN binary operation");
    BinaryOp op;
    op.alg = b->first;
    op.src0 = view(sp, x->buffer, x->args, vars);
    op.src1 = view(sp, b->second->buffer, b->second->args, vars, /*broadcast=*/true);
    op.dst = output_view(sp, logical);
    plan.family = "binary";
    plan.detail = std::string(to_string(op.alg)) + " " + dims_string(op.dst.dims);
    plan.op = op;
  } else {
    reject("the first step reads " + std::to_string(loads.size()) + " tensors");
  }
  plan.post_ops = match_tail(sp, 1, logical);
  for (const PostOp& p : plan.post_ops)
    plan.detail += std::string(" +") + to_string(p.alg);
  return plan;
}

} // namespace detail

namespace {

Plan recognize_one(const StageProgram& sp) {
  using Fn = Plan (*)(const StageProgram&);
  static const std::pair<const char*, Fn> families[] = {
      // conv first: a 1x1 convolution is also a contraction, and stays a convolution.
      {"conv", detail::try_conv},           {"matmul", detail::try_matmul},
      {"pool", detail::try_pool},           {"softmax", detail::try_softmax},
      {"layernorm", detail::try_layernorm}, {"reduction", detail::try_reduction},
      {"eltwise", detail::try_eltwise}};
  std::string why;
  for (const auto& [name, fn] : families) {
    try {
      return fn(sp);
    } catch (const NotRecognised& e) {
      why += std::string(why.empty() ? "" : "; ") + name + ": " + e.why;
    }
  }
  reject(why);
}

// One primitive per output: only the matmul recogniser computes a windowed result.
Plan recognize_split(const StageProgram& sp) {
  std::vector<StageProgram> parts = split_outputs(sp);
  Plan plan;
  for (size_t i = 0; i < parts.size(); ++i) {
    Plan p;
    try {
      p = detail::try_matmul(parts[i]);
    } catch (const NotRecognised& e) {
      reject("output " + std::to_string(i + 1) + " of " + std::to_string(parts.size()) +
             " (a slice of one result): matmul: " + e.why);
    }
    if (i == 0) {
      plan = p;
      plan.detail = std::to_string(parts.size()) + " outputs: " + p.detail;
    } else {
      plan.more.push_back({p.op, p.post_ops});
      plan.detail += "; " + p.detail;
    }
  }
  return plan;
}

} // namespace

Plan recognize(const P::Program& program) {
  StageProgram sp = extract_stages(program);
  return sp.outputs.size() > 1 ? recognize_split(sp) : recognize_one(sp);
}

} // namespace mt::onednn
