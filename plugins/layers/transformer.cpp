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
  const int64_t n = cfg.get<int64_t>("num_layers");
  if (n < 0)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.StackedTransformerLayer: num_layers < 0");
  alternate_.assign(static_cast<size_t>(n), false);
  const auto at = cfg.get<std::vector<int64_t>>("alternate_at", {});
  if (!at.empty() && !cfg.has("alternate_layer"))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.StackedTransformerLayer: alternate_at names layers but alternate_layer "
                     "is unset");
  for (int64_t i : at) {
    if (i < 0 || i >= n)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.StackedTransformerLayer: alternate_at index " + std::to_string(i) +
                           " is outside the " + std::to_string(n) + " layers");
    alternate_[static_cast<size_t>(i)] = true;
  }
}

std::vector<sdk::TeTensor>
StackedTransformerLayer::build(sdk::LayerContext& ctx, const std::vector<sdk::TeTensor>& inputs) {
  if (inputs.empty() || inputs.size() > 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.StackedTransformerLayer takes x and optionally a padding mask");
  std::vector<sdk::TeTensor> in = inputs;
  for (size_t i = 0, n = ctx.num_children("layer"); i < n; ++i)
    in[0] = ctx.call1(i < alternate_.size() && alternate_[i] ? "alternate_layer" : "layer", in, i);
  return {in[0]};
}

} // namespace mt::std_layers
