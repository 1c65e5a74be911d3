// std.TransformerFeedForwardLayer (see feed_forward.cpp).
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

class TransformerFeedForwardLayer : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "norm, linear1, activation (or a gated pair: SwiGLU), linear2, residual",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "model width"},
      {"name": "hidden_dim", "type": "int", "required": true, "doc": "inner width"},
      {"name": "activation", "type": "string", "default": "gelu",
       "doc": "gelu, gelu_tanh, relu, silu; with linear1_gate set: act(gate) * linear1"},
      {"name": "structure", "type": "string", "default": "prenorm",
       "doc": "prenorm: x + ffn(norm(x)); postnorm: norm(x + ffn(x))"},
      {"name": "norm", "type": "layer", "default": {"kind": "std.LayerNorm"},
       "doc": "normalisation"},
      {"name": "linear1", "type": "layer", "default": {"kind": "std.Linear"}, "doc": "up"},
      {"name": "linear1_gate", "type": "layer", "doc": "gate projection (SwiGLU); unset: none"},
      {"name": "linear2", "type": "layer", "default": {"kind": "std.Linear"}, "doc": "down"},
      {"name": "post_norm", "type": "layer",
       "doc": "prenorm: a norm of linear2's output before the residual add (Gemma 2); unset: none"}],
    "push_down": {
      "input_dim": ["norm.input_dim", "linear1.input_dim", "linear1_gate.input_dim",
                    "linear2.output_dim", "post_norm.input_dim"],
      "hidden_dim": ["linear1.output_dim", "linear1_gate.output_dim", "linear2.input_dim"]}})json";
  explicit TransformerFeedForwardLayer(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t dim_ = 0;
  std::string activation_, structure_;
};

} // namespace mt::std_layers
