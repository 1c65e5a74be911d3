#include "core/workload/te.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/ir/stmt.h"
#include "core/support/check.h"

namespace mt::te {

namespace {

std::atomic<uint64_t> next_tensor_id{1};

// Tensors accessed while a compute function runs, so that the compute knows its inputs
// without a global buffer -> tensor registry. A stack because compute functions may nest.
thread_local std::vector<std::vector<Tensor>*> access_log;

std::string default_axis_name(size_t i, size_t rank) {
  static const char* const kNames[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
  if (rank <= 8) return kNames[i];
  return "i" + std::to_string(i);
}

void check_shape(const std::vector<int64_t>& shape, const std::string& what,
                 const std::string& name) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 1)
      throw std::invalid_argument(what + " '" + name + "': dimension " + std::to_string(d) +
                                  " has extent " + std::to_string(shape[d]) + " (must be >= 1)");
  }
}

std::vector<Expr> make_axes(const std::vector<int64_t>& shape,
                            const std::vector<std::string>& names, const std::string& tensor) {
  if (!names.empty() && names.size() != shape.size())
    throw std::invalid_argument("compute '" + tensor + "': " + std::to_string(names.size()) +
                                " axis names for rank " + std::to_string(shape.size()));
  std::vector<Expr> axes;
  for (size_t d = 0; d < shape.size(); ++d)
    axes.push_back(make_var(names.empty() ? default_axis_name(d, shape.size()) : names[d]));
  return axes;
}

// Runs `fn` while recording the tensors it accesses.
template <typename R, typename F>
R run_logged(const F& fn, const std::vector<Expr>& axes, std::vector<Tensor>* accessed) {
  access_log.push_back(accessed);
  try {
    R r = fn(axes);
    access_log.pop_back();
    return r;
  } catch (...) {
    access_log.pop_back();
    throw;
  }
}

// Checks that `value` only loads accessed tensors and only uses the allowed variables, and
// returns the accessed tensors in order of first access (deduplicated).
std::vector<Tensor> resolve_inputs(const Expr& value, const std::vector<Tensor>& accessed,
                                   const std::vector<Expr>& allowed_vars,
                                   const std::string& tensor) {
  std::unordered_set<const ExprNode*> allowed;
  for (const Expr& v : allowed_vars)
    allowed.insert(v.get());
  std::unordered_map<const BufferNode*, Tensor> by_buffer;
  for (const Tensor& t : accessed)
    by_buffer.emplace(t.buffer().get(), t);
  // Tensors accessed but whose loads were dropped (e.g. by constant folding) are not inputs.
  std::unordered_set<const BufferNode*> loaded;
  post_order_visit(value, [&](const Expr& e) {
    if (e->kind == ExprKind::Var && !allowed.count(e.get()))
      throw std::invalid_argument("compute '" + tensor + "': uses variable '" + e->name +
                                  "' that is neither one of its axes nor a reduction axis of "
                                  "it");
    if (e->kind != ExprKind::Load) return;
    if (!by_buffer.count(e->buffer.get()))
      throw std::invalid_argument("compute '" + tensor + "': loads buffer '" + e->buffer->name +
                                  "' that is not a tensor accessed inside its compute function");
    loaded.insert(e->buffer.get());
  });
  std::vector<Tensor> inputs;
  std::unordered_set<const TensorNode*> seen;
  for (const Tensor& t : accessed) {
    if (loaded.count(t.buffer().get()) && seen.insert(t.get()).second) inputs.push_back(t);
  }
  return inputs;
}

Tensor make_compute(std::vector<int64_t> shape, std::vector<Expr> axes, Expr value,
                    std::optional<ReduceKind> reduce, std::vector<Var> reduce_axes,
                    std::vector<Tensor> accessed, std::string name) {
  if (!value) throw std::invalid_argument("compute '" + name + "': null value");
  std::vector<Expr> allowed = axes;
  for (const Var& r : reduce_axes) {
    if (!is_var(r) || r.extent() < 1)
      throw std::invalid_argument("compute '" + name +
                                  "': reduction axes must come from reduce_axis()");
    for (const Expr& a : axes) {
      if (a.same_as(r))
        throw std::invalid_argument("compute '" + name + "': axis '" + a->name +
                                    "' is both spatial and a reduction axis");
    }
    for (const Expr& a : allowed) {
      if (a.same_as(r))
        throw std::invalid_argument("compute '" + name + "': reduction axis '" + r->name +
                                    "' listed twice");
    }
    allowed.push_back(r);
  }
  auto n = std::make_shared<TensorNode>();
  n->inputs = resolve_inputs(value, accessed, allowed, name);
  n->buffer = make_buffer(std::move(name), value->dtype, std::move(shape));
  n->id = next_tensor_id.fetch_add(1);
  n->placeholder = false;
  n->axes = std::move(axes);
  n->reduce_axes = std::move(reduce_axes);
  n->reduce = reduce;
  n->value = std::move(value);
  return Tensor(std::move(n));
}

} // namespace

Var reduce_axis(int64_t extent, std::string name) {
  if (extent < 1)
    throw std::invalid_argument("reduce_axis '" + name + "': extent " + std::to_string(extent) +
                                " (must be >= 1)");
  return Var(make_var(std::move(name)), extent);
}

const char* to_string(ReduceKind k) {
  const char* text = mt_reduce_kind_text(static_cast<mt_reduce_kind>(k));
  return text ? text : "?";
}

ReduceExpr sum(Expr source, std::vector<Var> axes) {
  return {ReduceKind::Sum, std::move(source), std::move(axes)};
}
ReduceExpr max_reduce(Expr source, std::vector<Var> axes) {
  return {ReduceKind::Max, std::move(source), std::move(axes)};
}
ReduceExpr min_reduce(Expr source, std::vector<Var> axes) {
  return {ReduceKind::Min, std::move(source), std::move(axes)};
}

Expr reduce_identity(ReduceKind kind, DType t) {
  switch (kind) {
  case ReduceKind::Sum:
    return t.is_float() ? float_imm(0.0, t) : int_imm(0, t);
  case ReduceKind::Max:
    return min_value(t);
  case ReduceKind::Min:
    return max_value(t);
  }
  MT_ICHECK(false, "reduce_identity: reduction kind ", static_cast<int>(kind),
            " is not in the list");
  return {};
}

Expr reduce_combine(ReduceKind kind, Expr acc, Expr v) {
  switch (kind) {
  case ReduceKind::Sum:
    return std::move(acc) + std::move(v);
  case ReduceKind::Max:
    return max(std::move(acc), std::move(v));
  case ReduceKind::Min:
    return min(std::move(acc), std::move(v));
  }
  MT_ICHECK(false, "reduce_combine: reduction kind ", static_cast<int>(kind),
            " is not in the list");
  return {};
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  if (!node_) throw std::invalid_argument("access of an empty tensor handle");
  if (indices.size() != ndim())
    throw std::invalid_argument("tensor '" + name() + "' of rank " + std::to_string(ndim()) +
                                " accessed with " + std::to_string(indices.size()) + " indices");
  for (size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d] || !indices[d]->dtype.is_int())
      throw std::invalid_argument("tensor '" + name() + "': index " + std::to_string(d) +
                                  " is not an integer expression");
  }
  if (!access_log.empty()) access_log.back()->push_back(*this);
  return make_load(buffer(), std::move(indices));
}

Tensor placeholder(std::vector<int64_t> shape, DType dtype, std::string name) {
  check_shape(shape, "placeholder", name);
  auto n = std::make_shared<TensorNode>();
  n->buffer = make_buffer(std::move(name), dtype, std::move(shape));
  n->id = next_tensor_id.fetch_add(1);
  n->placeholder = true;
  return Tensor(std::move(n));
}

Tensor compute(std::vector<int64_t> shape, const ComputeFn& fn, std::string name,
               std::vector<std::string> axis_names) {
  check_shape(shape, "compute", name);
  std::vector<Expr> axes = make_axes(shape, axis_names, name);
  std::vector<Tensor> accessed;
  Expr value = run_logged<Expr>(fn, axes, &accessed);
  return make_compute(std::move(shape), std::move(axes), std::move(value), std::nullopt, {},
                      std::move(accessed), std::move(name));
}

Tensor compute(std::vector<int64_t> shape, const ReduceFn& fn, std::string name,
               std::vector<std::string> axis_names) {
  check_shape(shape, "compute", name);
  std::vector<Expr> axes = make_axes(shape, axis_names, name);
  std::vector<Tensor> accessed;
  ReduceExpr r = run_logged<ReduceExpr>(fn, axes, &accessed);
  if (r.axes.empty()) throw std::invalid_argument("compute '" + name + "': reduction over no axes");
  return make_compute(std::move(shape), std::move(axes), std::move(r.source), r.kind,
                      std::move(r.axes), std::move(accessed), std::move(name));
}

Tensor pad(const Tensor& t, std::vector<int64_t> pads_before, std::vector<int64_t> pads_after,
           Expr value, std::string name, std::vector<std::string> axis_names) {
  const size_t rank = t.ndim();
  if (pads_before.size() > rank || pads_after.size() > rank)
    throw std::invalid_argument("pad '" + name + "' of '" + t.name() + "': more pads than the " +
                                std::to_string(rank) + " dimensions");
  pads_before.resize(rank, 0);
  pads_after.resize(rank, 0);
  std::vector<int64_t> shape(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (pads_before[d] < 0 || pads_after[d] < 0)
      throw std::invalid_argument("pad '" + name + "': negative padding in dimension " +
                                  std::to_string(d));
    shape[d] = t.shape()[d] + pads_before[d] + pads_after[d];
  }
  if (!value) throw std::invalid_argument("pad '" + name + "': null pad value");
  // A literal pad value takes the tensor's type; anything else is cast.
  Expr fill = value;
  if (value->kind == ExprKind::FloatImm || value->kind == ExprKind::IntImm) {
    bool is_f = value->kind == ExprKind::FloatImm;
    fill = t.dtype().is_float()
               ? float_imm(is_f ? value->float_value : static_cast<double>(value->int_value),
                           t.dtype())
               : int_imm(is_f ? static_cast<int64_t>(value->float_value) : value->int_value,
                         t.dtype());
  }
  fill = make_cast(t.dtype(), fill);
  return compute(
      shape,
      [&](const std::vector<Expr>& idx) {
        std::vector<Expr> src(rank);
        Expr inside;
        for (size_t d = 0; d < rank; ++d) {
          if (pads_before[d] == 0 && pads_after[d] == 0) {
            src[d] = idx[d];
            continue;
          }
          Expr lo = idx[d] >= pads_before[d];
          Expr hi = idx[d] < pads_before[d] + t.shape()[d];
          Expr cond = pads_before[d] == 0 ? hi : pads_after[d] == 0 ? lo : (lo && hi);
          inside = inside ? (inside && cond) : cond;
          Expr shifted = pads_before[d] == 0 ? idx[d] : idx[d] - pads_before[d];
          if (pads_before[d] > 0) shifted = max(shifted, 0);
          if (pads_after[d] > 0) shifted = min(shifted, t.shape()[d] - 1);
          src[d] = shifted;
        }
        Expr loaded = t(src);
        if (!inside) return loaded;
        return make_select(inside, loaded, fill);
      },
      std::move(name), std::move(axis_names));
}

namespace {

// Picks `base`, or base_1, base_2, ... if taken.
std::string unique_name(const std::string& base, std::set<std::string>* used) {
  std::string n = base;
  for (int k = 1; used->count(n); ++k)
    n = base + "_" + std::to_string(k);
  used->insert(n);
  return n;
}

} // namespace

namespace {

Function build_function(std::string name, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>& outputs, bool computes_as_inputs) {
  auto fail = [&](const std::string& msg) {
    throw std::invalid_argument("build '" + name + "': " + msg);
  };
  if (outputs.empty()) fail("no outputs");
  std::unordered_set<const TensorNode*> input_set, output_set;
  for (const Tensor& t : inputs) {
    if (!t) fail("empty input tensor handle");
    if (!t.is_placeholder() && !computes_as_inputs)
      fail("input '" + t.name() + "' is a compute, not a placeholder");
    if (!input_set.insert(t.get()).second) fail("input '" + t.name() + "' listed twice");
  }
  for (const Tensor& t : outputs) {
    if (!t) fail("empty output tensor handle");
    if (t.is_placeholder()) fail("output '" + t.name() + "' is a placeholder, not a compute");
    if (!output_set.insert(t.get()).second) fail("output '" + t.name() + "' listed twice");
  }

  // Every compute reachable from the outputs; placeholders must be declared inputs.
  std::vector<Tensor> computes;
  std::unordered_set<const TensorNode*> visited;
  std::vector<Tensor> stack(outputs.rbegin(), outputs.rend());
  while (!stack.empty()) {
    Tensor t = stack.back();
    stack.pop_back();
    if (!visited.insert(t.get()).second) continue;
    if (input_set.count(t.get())) continue;
    if (t.is_placeholder()) fail("tensor '" + t.name() + "' is read but is not one of the inputs");
    computes.push_back(t);
    for (const Tensor& in : t->inputs)
      stack.push_back(in);
  }
  std::sort(computes.begin(), computes.end(),
            [](const Tensor& a, const Tensor& b) { return a->id < b->id; });

  // Unique buffer names: params first so that they keep their names.
  std::set<std::string> used;
  std::unordered_map<const BufferNode*, Buffer> buf_map;
  auto assign = [&](const Tensor& t) {
    std::string n = unique_name(t.name(), &used);
    buf_map[t.buffer().get()] =
        n == t.name() ? t.buffer() : make_buffer(n, t.dtype(), t.shape(), t.buffer()->scope);
  };
  for (const Tensor& t : inputs)
    assign(t);
  for (const Tensor& t : outputs)
    assign(t);
  for (const Tensor& t : computes) {
    if (!output_set.count(t.get())) assign(t);
  }
  auto rebuf = [&](const Expr& e) {
    return transform(e, [&](const Expr& x) {
      if (x->kind != ExprKind::Load) return x;
      const Buffer& nb = buf_map.at(x->buffer.get());
      return nb == x->buffer ? x : make_load(nb, x->args);
    });
  };

  Function f;
  f.name = name;
  for (const Tensor& t : inputs)
    f.params.push_back(buf_map.at(t.buffer().get()));
  for (const Tensor& t : outputs)
    f.params.push_back(buf_map.at(t.buffer().get()));

  std::vector<Stmt> nests;
  for (const Tensor& t : computes) {
    const TensorNode& n = *t.get();
    const Buffer& out = buf_map.at(n.buffer.get());
    if (!output_set.count(t.get())) f.buffers.push_back(out);

    // Fresh iter vars per block so that blocks never share variables (a reduction axis may be
    // used by several computes, and a tensor may be built into several functions).
    Block block;
    block.name = out->name;
    std::set<std::string> var_names;
    VarMap vmap;
    std::vector<Expr> spatial;
    for (size_t d = 0; d < n.axes.size(); ++d) {
      Expr v = make_var(unique_name(n.axes[d]->name, &var_names));
      vmap[n.axes[d].get()] = v;
      spatial.push_back(v);
      block.iter_vars.push_back({v, out->shape[d], IterKind::Spatial});
    }
    for (const Var& r : n.reduce_axes) {
      Expr v = make_var(unique_name(r->name, &var_names));
      vmap[r.get()] = v;
      block.iter_vars.push_back({v, r.extent(), IterKind::Reduce});
    }
    Expr value = rebuf(substitute(n.value, vmap));
    if (n.reduce) {
      DType t_acc = out->dtype;
      block.init = make_store(out, spatial, reduce_identity(*n.reduce, t_acc));
      block.body =
          make_store(out, spatial, reduce_combine(*n.reduce, make_load(out, spatial), value));
    } else {
      block.body = make_store(out, spatial, value);
    }

    std::vector<Expr> loop_vars;
    for (const IterVar& iv : block.iter_vars)
      loop_vars.push_back(make_var(iv.var->name));
    Stmt s = make_block_realize(loop_vars, Expr(), block);
    for (size_t k = block.iter_vars.size(); k-- > 0;)
      s = make_for(loop_vars[k], block.iter_vars[k].extent, s);
    nests.push_back(s);
  }
  f.body = make_seq(std::move(nests));
  return f;
}

} // namespace

Function build(std::string name, const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& outputs) {
  return build_function(std::move(name), inputs, outputs, /*computes_as_inputs=*/false);
}

Function build_region(std::string name, const std::vector<Tensor>& inputs,
                      const std::vector<Tensor>& outputs) {
  return build_function(std::move(name), inputs, outputs, /*computes_as_inputs=*/true);
}

} // namespace mt::te
