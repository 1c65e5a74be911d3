// rope.RotaryTable: the sinusoidal table of rotary position embeddings -- for every token and
// frequency the cosine and sine of its angle -- by which rope.RotaryQKVLinear rotates queries
// and keys. Positions come from the model (LayerContext::position), so the same table serves a
// whole sequence, a prefill and a decode step.
#pragma once

#include <string>
#include <vector>

#include "metatune/sdk/layer.hpp"

namespace mt::rope {

// Input x [B, S, ..., W] (its values are never read); outputs cos, sin [B, S, dim / 2] with
// angle(b, s, i) = (position(b, s) + position_offset) * f_i, f_i = theta^(-2 i / dim) scaled as
// `scaling` says: "linear" divides every frequency by `factor` (positions interpolated), "llama3"
// divides only the slow ones (Llama 3.1's rule: a wavelength 2 pi / f_i above
// original_max_positions / low_freq_factor is divided by factor, one below
// original_max_positions / high_freq_factor kept, the ones between blended smoothly).
class RotaryTable : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "cos and sin of (position + position_offset) * theta^(-2i/dim), i < dim/2",
    "fields": [
      {"name": "dim", "type": "int", "default": 0,
       "doc": "rotary width (even); 0 = the last axis W of the input"},
      {"name": "theta", "type": "float", "default": 10000.0, "doc": "base of the frequencies"},
      {"name": "position_offset", "type": "int", "default": 0,
       "doc": "added to every position (a continuation, a shifted window)"},
      {"name": "scaling", "type": "string", "default": "none",
       "doc": "frequency scaling for longer contexts: none, linear or llama3"},
      {"name": "factor", "type": "float", "default": 1.0,
       "doc": "linear, llama3: the slow frequencies are divided by it"},
      {"name": "low_freq_factor", "type": "float", "default": 1.0,
       "doc": "llama3: wavelengths above original_max_positions / it are divided by factor"},
      {"name": "high_freq_factor", "type": "float", "default": 4.0,
       "doc": "llama3: wavelengths below original_max_positions / it are kept"},
      {"name": "original_max_positions", "type": "int", "default": 8192,
       "doc": "llama3: the context length the model was first trained for"}]})json";
  explicit RotaryTable(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

  // The frequencies f_i in radians per position, i < dim / 2, scaled as configured.
  std::vector<double> frequencies(int64_t dim) const;

private:
  enum class Scaling { None, Linear, Llama3 };
  int64_t dim_ = 0, offset_ = 0, original_max_positions_ = 8192;
  double theta_ = 10000.0, factor_ = 1.0, low_freq_factor_ = 1.0, high_freq_factor_ = 4.0;
  Scaling scaling_ = Scaling::None;
};

} // namespace mt::rope
