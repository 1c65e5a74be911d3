// std.TransformerFeedForwardLayer: AXLearn's TransformerFeedForwardLayer with one or two
// up-projections. The activation is applied in its own elementwise compute after linear1's
// bias, which fusion (core/graph) folds into linear1's kernel; the residual add likewise into
// linear2's.
#include "feed_forward.hpp"

#include "te_ops.hpp"

namespace mt::std_layers {

TransformerFeedForwardLayer::TransformerFeedForwardLayer(std::string_view config) {
  sdk::LayerConfig cfg(config);
  dim_ = cfg.get<int64_t>("input_dim");
  activation_ = cfg.get<std::string>("activation", "gelu");
  structure_ = cfg.get<std::string>("structure", "prenorm");
  if (structure_ != "prenorm" && structure_ != "postnorm")
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.TransformerFeedForwardLayer: structure '" +
                                                    structure_ + "' (prenorm, postnorm)");
}

std::vector<TeTensor> TransformerFeedForwardLayer::build(sdk::LayerContext& ctx,
                                                         const std::vector<TeTensor>& inputs) {
  TeTensor x = single_input("std.TransformerFeedForwardLayer", inputs, dim_);
  TensorBuilder& b = ctx.builder();
  TeTensor h = structure_ == "prenorm" ? ctx.call1("norm", {x}) : x;
  TeTensor up = ctx.call1("linear1", {h});
  TeTensor act;
  if (ctx.num_children("linear1_gate")) {
    TeTensor gate = ctx.call1("linear1_gate", {h});
    act = b.compute("ffn_gated", up.shape(), [&](const std::vector<TeExpr>& v) {
      return activation(b, activation_, gate(v)) * up(v);
    });
  } else {
    act = b.compute("ffn_act", up.shape(), [&](const std::vector<TeExpr>& v) {
      return activation(b, activation_, up(v));
    });
  }
  TeTensor down = ctx.call1("linear2", {act});
  if (ctx.num_children("post_norm")) {
    if (structure_ != "prenorm")
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.TransformerFeedForwardLayer: post_norm needs the prenorm structure");
    down = ctx.call1("post_norm", {down});
  }
  TeTensor sum = b.compute("ffn_residual", x.shape(),
                           [&](const std::vector<TeExpr>& v) { return x(v) + down(v); });
  return {structure_ == "prenorm" ? sum : ctx.call1("norm", {sum})};
}

} // namespace mt::std_layers
