// The tensor-expression part of the host API table (for layer plugins): expression
// constructors, placeholders, computes and build, over core/workload/te.h. A builder owns
// everything made with it; expressions from elsewhere are refused, so that a plugin cannot
// smuggle a dangling node into a workload.
#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"
#include "core/plugin/last_error.h"

namespace mt::plugin_detail {

namespace {

mt_te_builder_s& builder(mt_te_builder* b) {
  return *require(b, "builder");
}
std::string string(mt_str s) {
  return std::string(view(s));
}

std::vector<int64_t> shape_of(const int64_t* shape, size_t ndim) {
  if (ndim && !shape) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "shape is NULL");
  return std::vector<int64_t>(shape, shape + ndim);
}

const te::Tensor& tensor(const mt_te_tensor* t, const char* what) {
  if (!t) throw ApiError(MT_ERROR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  return t->tensor;
}

// Handles for the axes passed to a compute callback (kept by the builder).
std::vector<const mt_expr*>& axis_handles(mt_te_builder_s& b, const std::vector<Expr>& axes) {
  std::vector<const mt_expr*> hs;
  for (const Expr& a : axes)
    hs.push_back(b.keep(a));
  b.expr_arrays.push_back(std::move(hs));
  return b.expr_arrays.back();
}

// Turns a failed plugin callback into an exception that carries the plugin's message.
void check_callback(mt_status status, const char* what) {
  if (status != MT_OK)
    throw ApiError(status == MT_ERROR_UNKNOWN ? MT_ERROR_PLUGIN : status,
                   std::string(what) + " callback failed: " + mt::last_error());
}

mt_status te_builder_create(mt_te_builder** out) {
  return guard("te_builder_create", [&] { *require(out, "out") = new mt_te_builder_s(); });
}
void te_builder_retain(mt_te_builder* b) {
  if (b) b->refs.fetch_add(1, std::memory_order_relaxed);
}
void te_builder_release(mt_te_builder* b) {
  if (b && b->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete b;
}

mt_status te_int_imm(mt_te_builder* b, int64_t value, mt_dtype dtype, const mt_expr** out) {
  return guard("te_int_imm",
               [&] { *require(out, "out") = builder(b).keep(int_imm(value, from_c(dtype))); });
}

mt_status te_float_imm(mt_te_builder* b, double value, mt_dtype dtype, const mt_expr** out) {
  return guard("te_float_imm",
               [&] { *require(out, "out") = builder(b).keep(float_imm(value, from_c(dtype))); });
}

mt_status te_var(mt_te_builder* b, mt_str name, mt_dtype dtype, const mt_expr** out) {
  return guard("te_var", [&] {
    *require(out, "out") = builder(b).keep(make_var(string(name), from_c(dtype)));
  });
}

mt_status te_binary(mt_te_builder* b, mt_expr_kind kind, const mt_expr* lhs, const mt_expr* rhs,
                    const mt_expr** out) {
  return guard("te_binary", [&] {
    require(out, "out");
    if (!mt_expr_kind_text(kind) || !is_binary(static_cast<ExprKind>(kind)))
      throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                     "expression kind " + std::to_string(kind) + " is not a binary operator");
    auto& bb = builder(b);
    *out =
        bb.keep(make_binary(static_cast<ExprKind>(kind), bb.get(lhs, "lhs"), bb.get(rhs, "rhs")));
  });
}

mt_status te_not(mt_te_builder* b, const mt_expr* a, const mt_expr** out) {
  return guard("te_not", [&] {
    auto& bb = builder(b);
    *require(out, "out") = bb.keep(make_not(bb.get(a, "operand")));
  });
}

mt_status te_select(mt_te_builder* b, const mt_expr* cond, const mt_expr* t, const mt_expr* f,
                    const mt_expr** out) {
  return guard("te_select", [&] {
    auto& bb = builder(b);
    *require(out, "out") = bb.keep(
        make_select(bb.get(cond, "cond"), bb.get(t, "true value"), bb.get(f, "false value")));
  });
}

mt_status te_cast(mt_te_builder* b, mt_dtype dtype, const mt_expr* value, const mt_expr** out) {
  return guard("te_cast", [&] {
    auto& bb = builder(b);
    *require(out, "out") = bb.keep(make_cast(from_c(dtype), bb.get(value, "value")));
  });
}

mt_status te_call(mt_te_builder* b, mt_math_fn fn, const mt_expr* const* args, size_t n,
                  const mt_expr** out) {
  return guard("te_call", [&] {
    require(out, "out");
    if (!mt_math_fn_text(fn))
      throw ApiError(MT_ERROR_INVALID_ARGUMENT, "unknown math function " + std::to_string(fn));
    if (n && !args) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "args is NULL");
    auto& bb = builder(b);
    std::vector<Expr> xs;
    for (size_t i = 0; i < n; ++i)
      xs.push_back(bb.get(args[i], "argument"));
    *out = bb.keep(make_call(static_cast<MathFn>(fn), std::move(xs)));
  });
}

mt_status te_placeholder(mt_te_builder* b, mt_str name, mt_dtype dtype, const int64_t* shape,
                         size_t ndim, const mt_te_tensor** out) {
  return guard("te_placeholder", [&] {
    require(out, "out");
    *out = builder(b).keep(te::placeholder(shape_of(shape, ndim), from_c(dtype), string(name)));
  });
}

mt_status te_load(mt_te_builder* b, const mt_te_tensor* t, const mt_expr* const* indices, size_t n,
                  const mt_expr** out) {
  return guard("te_load", [&] {
    require(out, "out");
    if (n && !indices) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "indices is NULL");
    auto& bb = builder(b);
    std::vector<Expr> idx;
    for (size_t i = 0; i < n; ++i)
      idx.push_back(bb.get(indices[i], "index"));
    *out = bb.keep(tensor(t, "tensor")(idx));
  });
}

mt_status te_reduce_axis(mt_te_builder* b, int64_t extent, mt_str name, const mt_expr** out) {
  return guard("te_reduce_axis", [&] {
    require(out, "out");
    auto& bb = builder(b);
    te::Var axis = te::reduce_axis(extent, string(name));
    bb.reduce_axes.emplace(axis.get(), axis);
    *out = bb.keep(axis);
  });
}

mt_status te_compute(mt_te_builder* b, mt_str name, const int64_t* shape, size_t ndim,
                     mt_te_compute_fn fn, void* user_data, const mt_te_tensor** out) {
  return guard("te_compute", [&] {
    require(out, "out");
    if (!fn) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "compute function is NULL");
    auto& bb = builder(b);
    te::ComputeFn body = [&](const std::vector<Expr>& axes) {
      auto& hs = axis_handles(bb, axes);
      const mt_expr* value = nullptr;
      check_callback(fn(user_data, b, hs.data(), hs.size(), &value), "compute");
      return bb.get(value, "compute value");
    };
    *out = bb.keep(te::compute(shape_of(shape, ndim), body, string(name)));
  });
}

mt_status te_compute_reduce(mt_te_builder* b, mt_str name, const int64_t* shape, size_t ndim,
                            mt_te_reduce_fn fn, void* user_data, const mt_te_tensor** out) {
  return guard("te_compute_reduce", [&] {
    require(out, "out");
    if (!fn) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "reduce function is NULL");
    auto& bb = builder(b);
    te::ReduceFn body = [&](const std::vector<Expr>& axes) {
      auto& hs = axis_handles(bb, axes);
      mt_te_reduction r{};
      r.struct_size = sizeof r;
      r.struct_version = 1;
      check_callback(fn(user_data, b, hs.data(), hs.size(), &r), "reduce");
      if (!mt_reduce_kind_text(r.kind))
        throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                       "unknown reduction kind " + std::to_string(r.kind));
      if (r.num_axes && !r.axes) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "reduction axes NULL");
      te::ReduceExpr red;
      red.kind = static_cast<te::ReduceKind>(r.kind);
      red.source = bb.get(r.source, "reduction source");
      for (size_t i = 0; i < r.num_axes; ++i) {
        auto it = bb.reduce_axes.find(node(r.axes[i]));
        if (it == bb.reduce_axes.end())
          throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                         "reduction axis " + std::to_string(i) + " was not made by te_reduce_axis");
        red.axes.push_back(it->second);
      }
      return red;
    };
    *out = bb.keep(te::compute(shape_of(shape, ndim), body, string(name)));
  });
}

const mt_buffer* te_tensor_buffer(const mt_te_tensor* t) {
  return t && t->tensor ? handle(t->tensor.buffer().get()) : nullptr;
}

mt_status te_build(mt_te_builder* b, mt_str name, const mt_te_tensor* const* inputs,
                   size_t num_inputs, const mt_te_tensor* const* outputs, size_t num_outputs,
                   mt_program** out) {
  return guard("te_build", [&] {
    require(out, "out");
    builder(b);
    if ((num_inputs && !inputs) || (num_outputs && !outputs))
      throw ApiError(MT_ERROR_INVALID_ARGUMENT, "tensor array is NULL");
    std::vector<te::Tensor> ins, outs;
    for (size_t i = 0; i < num_inputs; ++i)
      ins.push_back(tensor(inputs[i], "input"));
    for (size_t i = 0; i < num_outputs; ++i)
      outs.push_back(tensor(outputs[i], "output"));
    *out = make_program_handle(te::build(string(name), ins, outs));
  });
}

} // namespace

void fill_te_api(mt_host_api& t) {
  t.te_builder_create = te_builder_create;
  t.te_builder_retain = te_builder_retain;
  t.te_builder_release = te_builder_release;
  t.te_int_imm = te_int_imm;
  t.te_float_imm = te_float_imm;
  t.te_var = te_var;
  t.te_binary = te_binary;
  t.te_not = te_not;
  t.te_select = te_select;
  t.te_cast = te_cast;
  t.te_call = te_call;
  t.te_placeholder = te_placeholder;
  t.te_load = te_load;
  t.te_reduce_axis = te_reduce_axis;
  t.te_compute = te_compute;
  t.te_compute_reduce = te_compute_reduce;
  t.te_tensor_buffer = te_tensor_buffer;
  t.te_build = te_build;
}

} // namespace mt::plugin_detail
