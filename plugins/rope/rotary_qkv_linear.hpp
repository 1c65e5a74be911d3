// rope.RotaryQKVLinear: rotary position embeddings as a wrapper around any QKV projection
// (std.QKVLinear, std.FusedQKVLinear, multi-head or grouped-query): it calls the projection,
// rotates every head of q and k by the rotary table's angles, and gives q, k, v on -- the
// projection's own output contract, so the attention around it does not change.
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::rope {

// How a head's rotary channels pair up: rotate_half (GPT-NeoX, Llama) rotates (e, e + r/2),
// interleaved (GPT-J) rotates (2i, 2i + 1); either pair turns by the angle of frequency i.
enum class Convention { RotateHalf, Interleaved };

class RotaryQKVLinear : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "q and k of the wrapped projection rotated per head by position (RoPE); v unchanged",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "model width"},
      {"name": "num_heads", "type": "int", "required": true, "doc": "query heads"},
      {"name": "num_kv_heads", "type": "int", "default": 0,
       "doc": "key/value heads (grouped-query attention); 0 = num_heads"},
      {"name": "per_head_dim", "type": "int", "default": 0,
       "doc": "width of a head; 0 = input_dim / num_heads"},
      {"name": "rotary_dim", "type": "int", "default": 0,
       "doc": "rotated channels at the start of each head (even); 0 = per_head_dim"},
      {"name": "convention", "type": "string", "default": "rotate_half",
       "doc": "rotate_half (GPT-NeoX, Llama: pairs i, i + r/2) or interleaved (GPT-J: 2i, 2i+1)"},
      {"name": "input_linear", "type": "layer", "default": {"kind": "std.QKVLinear"},
       "doc": "the projection giving q, k, v"},
      {"name": "rotary", "type": "layer", "default": {"kind": "rope.RotaryTable"},
       "doc": "the cos/sin table (theta, position_offset)"}],
    "push_down": {"input_dim": ["input_linear.input_dim"], "num_heads": ["input_linear.num_heads"],
                  "num_kv_heads": ["input_linear.num_kv_heads"],
                  "per_head_dim": ["input_linear.per_head_dim"], "rotary_dim": ["rotary.dim"]}})json";
  explicit RotaryQKVLinear(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t input_dim_ = 0, heads_ = 0, kv_heads_ = 0, head_dim_ = 0, rotary_dim_ = 0;
  Convention convention_ = Convention::RotateHalf;
};

} // namespace mt::rope
