// rope.RotaryTable: the sinusoidal table of rotary position embeddings -- for every token and
// frequency the cosine and sine of its angle -- by which rope.RotaryQKVLinear rotates queries
// and keys. Positions come from the model (LayerContext::position), so the same table serves a
// whole sequence, a prefill and a decode step.
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::rope {

// Input x [B, S, ..., W] (its values are never read); outputs cos, sin [B, S, dim / 2] with
// angle(b, s, i) = (position(b, s) + position_offset) * theta^(-2 i / dim).
class RotaryTable : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "cos and sin of (position + position_offset) * theta^(-2i/dim), i < dim/2",
    "fields": [
      {"name": "dim", "type": "int", "default": 0,
       "doc": "rotary width (even); 0 = the last axis W of the input"},
      {"name": "theta", "type": "float", "default": 10000.0, "doc": "base of the frequencies"},
      {"name": "position_offset", "type": "int", "default": 0,
       "doc": "added to every position (a continuation, a shifted window)"}]})json";
  explicit RotaryTable(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t dim_ = 0, offset_ = 0;
  double theta_ = 10000.0;
};

} // namespace mt::rope
