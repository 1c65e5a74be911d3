// Tensor expressions for layer plugins: TeExpr / TeTensor values with operators, built through
// the host's tensor-expression builder (placeholders, computes, reductions).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "metatune/sdk/error.hpp"
#include "metatune/sdk/handle.hpp"
#include "metatune/sdk/ir.hpp"

namespace mt::sdk {

class TensorBuilder;

// An expression made by a TensorBuilder (valid while the builder lives).
class TeExpr {
public:
  TeExpr() = default;
  TeExpr(TensorBuilder* b, const mt_expr* e) : b_(b), e_(e) {}
  const mt_expr* get() const { return e_; }
  TensorBuilder* builder() const { return b_; }
  ExprRef ref() const { return ExprRef(e_); }

private:
  TensorBuilder* b_ = nullptr;
  const mt_expr* e_ = nullptr;
};

class TeTensor {
public:
  TeTensor() = default;
  TeTensor(TensorBuilder* b, const mt_te_tensor* t) : b_(b), t_(t) {}
  const mt_te_tensor* get() const { return t_; }
  BufferRef buffer() const { return BufferRef(api().te_tensor_buffer(t_)); }
  std::vector<int64_t> shape() const { return buffer().shape(); }
  DType dtype() const { return buffer().dtype(); }
  TeExpr operator()(const std::vector<TeExpr>& indices) const;
  template <typename... I> TeExpr operator()(TeExpr first, I... rest) const {
    return (*this)(std::vector<TeExpr>{first, rest...});
  }

private:
  TensorBuilder* b_ = nullptr;
  const mt_te_tensor* t_ = nullptr;
};

struct TeReduction {
  mt_reduce_kind kind = MT_REDUCE_SUM;
  TeExpr source;
  std::vector<TeExpr> axes;
};

class TensorBuilder {
public:
  TensorBuilder() {
    mt_te_builder* b = nullptr;
    check(api().te_builder_create(&b));
    h_ = handle<mt_te_builder>::adopt(b);
  }
  explicit TensorBuilder(mt_te_builder* borrowed) : h_(handle<mt_te_builder>::borrow(borrowed)) {}
  TensorBuilder(const TensorBuilder&) = delete;
  TensorBuilder& operator=(const TensorBuilder&) = delete;
  mt_te_builder* get() const { return h_.get(); }

  TeExpr int_imm(int64_t v, DType t = DType::index()) {
    return make([&](const mt_expr** o) { return api().te_int_imm(get(), v, to_c(t), o); });
  }
  TeExpr float_imm(double v, DType t = DType::f32()) {
    return make([&](const mt_expr** o) { return api().te_float_imm(get(), v, to_c(t), o); });
  }
  TeExpr var(std::string_view name, DType t = DType::index()) {
    return make(
        [&](const mt_expr** o) { return api().te_var(get(), to_mt_str(name), to_c(t), o); });
  }
  TeExpr binary(ExprKind kind, TeExpr a, TeExpr b) {
    return make([&](const mt_expr** o) {
      return api().te_binary(get(), static_cast<mt_expr_kind>(kind), a.get(), b.get(), o);
    });
  }
  TeExpr logical_not(TeExpr a) {
    return make([&](const mt_expr** o) { return api().te_not(get(), a.get(), o); });
  }
  TeExpr select(TeExpr c, TeExpr t, TeExpr f) {
    return make(
        [&](const mt_expr** o) { return api().te_select(get(), c.get(), t.get(), f.get(), o); });
  }
  TeExpr cast(DType t, TeExpr v) {
    return make([&](const mt_expr** o) { return api().te_cast(get(), to_c(t), v.get(), o); });
  }
  TeExpr call(MathFn fn, const std::vector<TeExpr>& args) {
    std::vector<const mt_expr*> xs;
    for (const TeExpr& a : args)
      xs.push_back(a.get());
    return make([&](const mt_expr** o) {
      return api().te_call(get(), static_cast<mt_math_fn>(fn), xs.data(), xs.size(), o);
    });
  }
  TeExpr reduce_axis(int64_t extent, std::string_view name) {
    return make(
        [&](const mt_expr** o) { return api().te_reduce_axis(get(), extent, to_mt_str(name), o); });
  }
  TeTensor placeholder(std::string_view name, DType t, const std::vector<int64_t>& shape) {
    const mt_te_tensor* out = nullptr;
    check(api().te_placeholder(get(), to_mt_str(name), to_c(t), shape.data(), shape.size(), &out));
    return TeTensor(this, out);
  }
  TeExpr load(const TeTensor& t, const std::vector<TeExpr>& indices) {
    std::vector<const mt_expr*> xs;
    for (const TeExpr& i : indices)
      xs.push_back(i.get());
    return make(
        [&](const mt_expr** o) { return api().te_load(get(), t.get(), xs.data(), xs.size(), o); });
  }

  using ComputeFn = std::function<TeExpr(const std::vector<TeExpr>& axes)>;
  using ReduceFn = std::function<TeReduction(const std::vector<TeExpr>& axes)>;

  TeTensor compute(std::string_view name, const std::vector<int64_t>& shape, const ComputeFn& fn) {
    struct Ctx {
      TensorBuilder* self;
      const ComputeFn* fn;
    } ctx{this, &fn};
    mt_te_compute_fn tramp = [](void* user, mt_te_builder*, const mt_expr* const* axes, size_t n,
                                const mt_expr** out) -> mt_status {
      auto* c = static_cast<Ctx*>(user);
      return detail::guard([&] { *out = (*c->fn)(c->self->wrap(axes, n)).get(); });
    };
    const mt_te_tensor* out = nullptr;
    check(api().te_compute(get(), to_mt_str(name), shape.data(), shape.size(), tramp, &ctx, &out));
    return TeTensor(this, out);
  }

  TeTensor compute_reduce(std::string_view name, const std::vector<int64_t>& shape,
                          const ReduceFn& fn) {
    struct Ctx {
      TensorBuilder* self;
      const ReduceFn* fn;
      std::vector<const mt_expr*> axes;
    } ctx{this, &fn, {}};
    mt_te_reduce_fn tramp = [](void* user, mt_te_builder*, const mt_expr* const* axes, size_t n,
                               mt_te_reduction* out) -> mt_status {
      auto* c = static_cast<Ctx*>(user);
      return detail::guard([&] {
        TeReduction r = (*c->fn)(c->self->wrap(axes, n));
        c->axes.clear();
        for (const TeExpr& a : r.axes)
          c->axes.push_back(a.get());
        out->kind = r.kind;
        out->source = r.source.get();
        out->axes = c->axes.data();
        out->num_axes = c->axes.size();
      });
    };
    const mt_te_tensor* out = nullptr;
    check(api().te_compute_reduce(get(), to_mt_str(name), shape.data(), shape.size(), tramp, &ctx,
                                  &out));
    return TeTensor(this, out);
  }

  Program build(std::string_view name, const std::vector<TeTensor>& inputs,
                const std::vector<TeTensor>& outputs) {
    std::vector<const mt_te_tensor*> ins, outs;
    for (const auto& t : inputs)
      ins.push_back(t.get());
    for (const auto& t : outputs)
      outs.push_back(t.get());
    mt_program* p = nullptr;
    check(api().te_build(get(), to_mt_str(name), ins.data(), ins.size(), outs.data(), outs.size(),
                         &p));
    return Program(handle<mt_program>::adopt(p));
  }

  std::vector<TeExpr> wrap(const mt_expr* const* xs, size_t n) {
    std::vector<TeExpr> out;
    for (size_t i = 0; i < n; ++i)
      out.emplace_back(this, xs[i]);
    return out;
  }

private:
  template <typename F> TeExpr make(F&& f) {
    const mt_expr* out = nullptr;
    check(f(&out));
    return TeExpr(this, out);
  }
  handle<mt_te_builder> h_;
};

inline TeExpr TeTensor::operator()(const std::vector<TeExpr>& indices) const {
  return b_->load(*this, indices);
}

// Operators (both operands from the same builder).
inline TeExpr operator+(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::Add, a, b);
}
inline TeExpr operator-(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::Sub, a, b);
}
inline TeExpr operator*(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::Mul, a, b);
}
inline TeExpr operator/(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::Div, a, b);
}
inline TeExpr operator%(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::FloorMod, a, b);
}
inline TeExpr operator<(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::LT, a, b);
}
inline TeExpr operator<=(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::LE, a, b);
}
inline TeExpr operator>(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::GT, a, b);
}
inline TeExpr operator>=(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::GE, a, b);
}
inline TeExpr min(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::Min, a, b);
}
inline TeExpr max(TeExpr a, TeExpr b) {
  return a.builder()->binary(ExprKind::Max, a, b);
}
inline TeExpr exp(TeExpr a) {
  return a.builder()->call(MathFn::Exp, {a});
}
inline TeExpr sqrt(TeExpr a) {
  return a.builder()->call(MathFn::Sqrt, {a});
}

} // namespace mt::sdk
