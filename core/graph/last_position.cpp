#include "core/graph/last_position.h"

#include <string>
#include <vector>

#include "core/ir/expr.h"

namespace mt {

namespace {

// The one tensor the logits read along their sequence axis: loaded as x[b, s, ...] with b and
// s the logits' own batch and sequence axes and no other index using s, s used nowhere else.
// Null when the logits are not of that form.
const te::Tensor* row_source(const te::TensorNode& logits) {
  const ExprNode* s = logits.axes[1].get();
  const BufferNode* source = nullptr;
  bool ok = true;
  size_t s_in_rows = 0; // uses of s as a row index
  post_order_visit(logits.value, [&](const Expr& e) {
    if (e->kind != ExprKind::Load) return;
    bool uses_s = false;
    for (const Expr& i : e->args)
      uses_s = uses_s || uses_var(i, s);
    if (!uses_s) return;
    if (e->args.size() < 2 || !e->args[0].same_as(logits.axes[0]) ||
        !e->args[1].same_as(logits.axes[1]) || (source && source != e->buffer.get()))
      ok = false;
    for (size_t d = 2; d < e->args.size(); ++d)
      ok = ok && !uses_var(e->args[d], s);
    source = e->buffer.get();
    ++s_in_rows;
  });
  if (!ok || !source) return nullptr;
  // Every use of s is one of those row indices.
  size_t s_uses = 0;
  post_order_visit(logits.value, [&](const Expr& e) { s_uses += e.get() == s; });
  if (s_uses != s_in_rows) return nullptr;
  for (const te::Tensor& in : logits.inputs)
    if (in.buffer().get() == source) return &in;
  return nullptr;
}

// The one tensor an elementwise function of the logits (Gemma 2's soft-cap) reads, read at
// the function's own [b, s, v] only; null otherwise.
const te::Tensor* elementwise_of(const te::TensorNode& n) {
  if (n.reduce || n.inputs.size() != 1 || n.inputs[0].is_placeholder() || n.inputs[0].ndim() != 3)
    return nullptr;
  const BufferNode* inner = n.inputs[0].buffer().get();
  bool ok = true;
  post_order_visit(n.value, [&](const Expr& e) {
    if (e->kind != ExprKind::Load || e->buffer.get() != inner) return;
    ok = ok && e->args.size() == 3;
    for (size_t d = 0; ok && d < 3; ++d)
      ok = e->args[d].same_as(n.axes[d]);
  });
  return ok ? &n.inputs[0] : nullptr;
}

} // namespace

bool keep_last_position_logits(ModelGraph& g) {
  if (g.num_root_outputs < 1 || g.outputs.empty()) return false;
  const te::Tensor logits = g.outputs[0];
  if (logits.is_placeholder() || logits.ndim() != 3 || logits->axes.size() != 3) return false;
  const te::TensorNode& n = *logits.get();
  // f(logits) elementwise: the logits inside kept to the last position, f applied to that row.
  if (const te::Tensor* inner = elementwise_of(n)) {
    ModelGraph within = g;
    within.outputs[0] = *inner;
    if (keep_last_position_logits(within)) {
      const te::Tensor row = within.outputs[0];
      std::vector<std::string> names;
      for (const Expr& a : n.axes)
        names.push_back(a->name);
      g.outputs[0] = te::compute(
          row.shape(),
          [&](const std::vector<Expr>& v) {
            row(std::vector<Expr>(row.ndim(), int_imm(0))); // accessed: the compute's input
            Expr value = transform(n.value, [&](const Expr& e) {
              if (e->kind != ExprKind::Load || e->buffer.get() != inner->buffer().get()) return e;
              return make_load(row.buffer(), e->args);
            });
            VarMap m{{n.axes[0].get(), v[0]}, {n.axes[1].get(), v[1]}, {n.axes[2].get(), v[2]}};
            return substitute(value, m);
          },
          logits.name(), names);
      g.inputs = within.inputs;
      g.last_position_input = within.last_position_input;
      return true;
    }
  }
  const te::Tensor* source = row_source(n);
  if (!source) return false;
  const te::Tensor x = *source;
  const int64_t batch = logits.shape()[0], seq = logits.shape()[1], vocab = logits.shape()[2];
  te::Tensor last = te::placeholder({batch}, DType::i32(), "last_position");

  // x's row at the last position: a gather of its own, so that the product after it is the
  // plain matrix product a decode step's LM head is (the same task, and a library's).
  std::vector<int64_t> row_shape = x.shape();
  row_shape[1] = 1;
  te::Tensor row = te::compute(
      row_shape,
      [&](const std::vector<Expr>& u) {
        Expr pos = make_cast(DType::index(), last(u[0]));
        pos = min(max(pos, int_imm(0)), int_imm(seq - 1));
        std::vector<Expr> at = u;
        at[1] = pos;
        return x(at);
      },
      x.name() + "_last");

  // The logits' value with x[b, s, ...] read as row[b, s, ...], s now of extent 1: the very
  // form of a decode step's LM head (an index 0 in place of s would be another workload).
  auto value_at = [&](const std::vector<Expr>& v) {
    for (const te::Tensor& in : n.inputs) // accessed, so that the compute knows its inputs
      if (!in.same_as(x)) in(std::vector<Expr>(in.ndim(), int_imm(0)));
    row(std::vector<Expr>(row.ndim(), int_imm(0)));
    Expr value = transform(n.value, [&](const Expr& e) {
      if (e->kind != ExprKind::Load || e->buffer.get() != x.buffer().get()) return e;
      return make_load(row.buffer(), e->args);
    });
    VarMap m{{n.axes[0].get(), v[0]}, {n.axes[1].get(), v[1]}, {n.axes[2].get(), v[2]}};
    return substitute(value, m);
  };
  std::vector<std::string> names;
  for (const Expr& a : n.axes)
    names.push_back(a->name);
  te::Tensor kept =
      n.reduce ? te::compute({batch, 1, vocab}, te::ReduceFn([&](const std::vector<Expr>& v) {
                               return te::ReduceExpr{*n.reduce, value_at(v), n.reduce_axes};
                             }),
                             logits.name(), names)
               : te::compute({batch, 1, vocab}, te::ComputeFn(value_at), logits.name(), names);
  g.outputs[0] = kept;
  g.inputs.push_back(last);
  g.last_position_input = g.inputs.size() - 1;
  return true;
}

} // namespace mt
