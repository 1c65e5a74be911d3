// std.TransformerLayer and std.StackedTransformerLayer (see transformer.cpp).
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

// Self-attention sublayer then feed-forward sublayer; x [B, S, D] and an optional padding mask.
class TransformerLayer : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "self-attention sublayer, then feed-forward sublayer",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "model width"},
      {"name": "self_attention", "type": "layer",
       "default": {"kind": "std.TransformerAttentionLayer"}, "doc": "attention sublayer"},
      {"name": "feed_forward", "type": "layer",
       "default": {"kind": "std.TransformerFeedForwardLayer"}, "doc": "feed-forward sublayer"}],
    "push_down": {"input_dim": ["self_attention.input_dim", "feed_forward.input_dim"]}})json";
  explicit TransformerLayer(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;
};

// num_layers instances of `layer`, each with its own parameters ("layer.0", "layer.1", ...);
// at the indexes of alternate_at, an instance of `alternate_layer` instead ("alternate_layer.1",
// ...): models whose layers come in two kinds, as Gemma 2's windowed and global attention
// layers, or Qwen2's full-attention first layers before windowed ones.
class StackedTransformerLayer : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "num_layers layers applied in turn: copies of one layer config, or of two",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "model width"},
      {"name": "num_layers", "type": "int", "required": true, "doc": "how many"},
      {"name": "layer", "type": "layer", "repeat": "num_layers",
       "default": {"kind": "std.TransformerLayer"}, "doc": "the layer repeated"},
      {"name": "alternate_layer", "type": "layer", "repeat": "num_layers",
       "doc": "the layer at the indexes of alternate_at; unset: none"},
      {"name": "alternate_at", "type": "int_list", "default": [],
       "doc": "indexes (from 0) of the layers that are alternate_layer"}],
    "push_down": {"input_dim": ["layer.input_dim", "alternate_layer.input_dim"]}})json";
  explicit StackedTransformerLayer(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  std::vector<bool> alternate_; // by layer index
};

} // namespace mt::std_layers
