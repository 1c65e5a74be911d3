// std.QKNormQKVLinear: a QKV projection whose q and k are RMS-normalised head by head, each
// head's channels scaled by a learnt weight of the head's width shared by all heads (Qwen3's
// q_norm and k_norm, applied before the rotary embedding); v passes through. It wraps any QKV
// projection, as rope.RotaryQKVLinear does, and gives the same three outputs, so the attention
// around it and a rotary wrapper outside it do not change.
#pragma once

#include "attention.hpp"

namespace mt::std_layers {

class QKNormQKVLinear : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema =
      R"json({"doc": "q and k of the wrapped projection RMS-normalised per head (Qwen3's QK-norm); v unchanged", "fields": [)json" MT_STD_HEAD_FIELDS
      R"json(,
      {"name": "eps", "type": "float", "default": 1e-6, "doc": "added to each head's mean square"},
      {"name": "input_linear", "type": "layer", "default": {"kind": "std.QKVLinear"}, "doc": "the projection giving q, k, v"}],
      "push_down": {"input_dim": ["input_linear.input_dim"], "num_heads": ["input_linear.num_heads"],
                    "num_kv_heads": ["input_linear.num_kv_heads"],
                    "per_head_dim": ["input_linear.per_head_dim"]}})json";
  explicit QKNormQKVLinear(std::string_view config);
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  HeadShape h_;
  double eps_ = 1e-6;
};

} // namespace mt::std_layers
