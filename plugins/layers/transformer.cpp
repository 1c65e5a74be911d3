// std.TransformerLayer and std.StackedTransformerLayer. The padding mask, when the model has
// one, is passed along to every attention; the feed-forward sublayer sees only x.
#include "transformer.hpp"

namespace mt::std_layers {

TransformerLayer::TransformerLayer(std::string_view config) {
  sdk::LayerConfig(config).get<int64_t>("input_dim");
}

std::vector<sdk::TeTensor> TransformerLayer::build(sdk::LayerContext& ctx,
                                                   const std::vector<sdk::TeTensor>& inputs) {
  if (inputs.empty() || inputs.size() > 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.TransformerLayer takes x and optionally a padding mask");
  std::vector<sdk::TeTensor> in = inputs;
  in[0] = ctx.call1("self_attention", inputs);
  return {ctx.call1("feed_forward", {in[0]})};
}

StackedTransformerLayer::StackedTransformerLayer(std::string_view config) {
  sdk::LayerConfig cfg(config);
  if (cfg.get<int64_t>("num_layers") < 0)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.StackedTransformerLayer: num_layers < 0");
}

std::vector<sdk::TeTensor>
StackedTransformerLayer::build(sdk::LayerContext& ctx, const std::vector<sdk::TeTensor>& inputs) {
  if (inputs.empty() || inputs.size() > 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.StackedTransformerLayer takes x and optionally a padding mask");
  std::vector<sdk::TeTensor> in = inputs;
  for (size_t i = 0, n = ctx.num_children("layer"); i < n; ++i)
    in[0] = ctx.call1("layer", in, i);
  return {in[0]};
}

} // namespace mt::std_layers
