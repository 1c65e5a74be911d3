// std.LayerNorm and std.RMSNorm. The row's reductions (sum, then sum of squared deviations)
// and the elementwise work over the row are separate computes; fusion (core/graph) puts the
// whole row computation in one kernel. Parameters as Hugging Face names them for LayerNorm
// ("weight", "bias"), the scale of RMSNorm "weight" as Llama's.
#include "layer_norm.hpp"

#include "te_ops.hpp"

namespace mt::std_layers {

LayerNorm::LayerNorm(std::string_view config) {
  sdk::LayerConfig cfg(config);
  dim_ = cfg.get<int64_t>("input_dim");
  eps_ = cfg.get<double>("eps", 1e-5);
}

void LayerNorm::parameters(sdk::ParamList& p) {
  p.push("weight", sdk::DType::f32(), {dim_}, R"({"kind": "ones"})");
  p.push("bias", sdk::DType::f32(), {dim_}, R"({"kind": "zeros"})");
}

std::vector<TeTensor> LayerNorm::build(sdk::LayerContext& ctx,
                                       const std::vector<TeTensor>& inputs) {
  TeTensor x = single_input("std.LayerNorm", inputs, dim_);
  TensorBuilder& b = ctx.builder();
  TeTensor g = ctx.param("weight"), beta = ctx.param("bias");
  std::vector<int64_t> rows = leading(x.shape());
  TeExpr inv_n = f32(b, 1.0 / static_cast<double>(dim_));
  TeExpr k1 = b.reduce_axis(dim_, "k");
  TeTensor sum = b.compute_reduce("ln_sum", rows, [&](const std::vector<TeExpr>& v) {
    return sdk::TeReduction{MT_REDUCE_SUM, x(with(v, k1)), {k1}};
  });
  TeExpr k2 = b.reduce_axis(dim_, "k");
  TeTensor sq = b.compute_reduce("ln_sq", rows, [&](const std::vector<TeExpr>& v) {
    TeExpr d = x(with(v, k2)) - sum(v) * inv_n;
    return sdk::TeReduction{MT_REDUCE_SUM, d * d, {k2}};
  });
  return {b.compute("layer_norm", x.shape(), [&](const std::vector<TeExpr>& v) {
    std::vector<TeExpr> r = leading(v);
    TeExpr inv = b.call(sdk::MathFn::Rsqrt, {sq(r) * inv_n + f32(b, eps_)});
    return (x(v) - sum(r) * inv_n) * inv * g(v.back()) + beta(v.back());
  })};
}

RMSNorm::RMSNorm(std::string_view config) {
  sdk::LayerConfig cfg(config);
  dim_ = cfg.get<int64_t>("input_dim");
  eps_ = cfg.get<double>("eps", 1e-6);
}

void RMSNorm::parameters(sdk::ParamList& p) {
  p.push("weight", sdk::DType::f32(), {dim_}, R"({"kind": "ones"})");
}

std::vector<TeTensor> RMSNorm::build(sdk::LayerContext& ctx, const std::vector<TeTensor>& inputs) {
  TeTensor x = single_input("std.RMSNorm", inputs, dim_);
  TensorBuilder& b = ctx.builder();
  TeTensor g = ctx.param("weight");
  TeExpr k = b.reduce_axis(dim_, "k");
  TeTensor sq = b.compute_reduce("rms_sq", leading(x.shape()), [&](const std::vector<TeExpr>& v) {
    TeExpr e = x(with(v, k));
    return sdk::TeReduction{MT_REDUCE_SUM, e * e, {k}};
  });
  TeExpr inv_n = f32(b, 1.0 / static_cast<double>(dim_));
  return {b.compute("rms_norm", x.shape(), [&](const std::vector<TeExpr>& v) {
    TeExpr inv = b.call(sdk::MathFn::Rsqrt, {sq(leading(v)) * inv_n + f32(b, eps_)});
    return x(v) * inv * g(v.back());
  })};
}

} // namespace mt::std_layers
