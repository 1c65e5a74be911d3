// std.Linear: y = x W^T + b over the last axis, the weight stored [output_dim, input_dim] as
// Hugging Face checkpoints store it (torch.nn.Linear), so weights load without a transpose.
#include "linear.hpp"

#include "te_ops.hpp"

namespace mt::std_layers {

Linear::Linear(std::string_view config) : cfg_(config) {
  in_ = cfg_.get<int64_t>("input_dim");
  out_ = cfg_.get<int64_t>("output_dim");
  bias_ = cfg_.get<bool>("bias", true);
}

void Linear::parameters(sdk::ParamList& p) {
  p.push("weight", sdk::DType::f32(), {out_, in_});
  if (bias_) p.push("bias", sdk::DType::f32(), {out_}, R"({"kind": "zeros"})");
}

std::vector<TeTensor> Linear::build(sdk::LayerContext& ctx, const std::vector<TeTensor>& inputs) {
  TeTensor x = single_input("std.Linear", inputs, in_);
  TensorBuilder& b = ctx.builder();
  TeTensor w = ctx.param("weight");
  std::vector<int64_t> shape = leading(x.shape());
  shape.push_back(out_);
  TeExpr k = b.reduce_axis(in_, "k");
  TeTensor y = b.compute_reduce("linear", shape, [&](const std::vector<TeExpr>& v) {
    return sdk::TeReduction{MT_REDUCE_SUM, x(with(leading(v), k)) * w(v.back(), k), {k}};
  });
  if (!bias_) return {y};
  TeTensor bias = ctx.param("bias");
  return {b.compute("bias_add", shape,
                    [&](const std::vector<TeExpr>& v) { return y(v) + bias(v.back()); })};
}

} // namespace mt::std_layers
