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
// original_max_positions / high_freq_factor kept, the ones between blended smoothly), "yarn"
// divides the slow ones and blends a band set by beta_fast and beta_slow (turns over the
// original context), "longrope" divides frequency i by factors[i] (Phi-3.5's, Phi-4's short
// factors); yarn and longrope also scale cos and sin by an attention factor.
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
       "doc": "llama3, yarn, longrope: the context length the model was first trained for"},
      {"name": "beta_fast", "type": "float", "default": 32.0,
       "doc": "yarn: frequencies turning more than this over the original context are kept"},
      {"name": "beta_slow", "type": "float", "default": 1.0,
       "doc": "yarn: frequencies turning less than this over it are divided by factor"},
      {"name": "truncate", "type": "bool", "default": true,
       "doc": "yarn: the band's ends rounded outwards to whole frequency indexes"},
      {"name": "mscale", "type": "float", "default": 0.0,
       "doc": "yarn: with mscale_all_dim, the attention factor is m(factor, mscale) / m(factor, mscale_all_dim)"},
      {"name": "mscale_all_dim", "type": "float", "default": 0.0, "doc": "yarn: see mscale"},
      {"name": "factors", "type": "float_list", "default": [],
       "doc": "longrope: frequency i is divided by factors[i] (dim / 2 of them)"},
      {"name": "attention_factor", "type": "float", "default": 0.0,
       "doc": "cos and sin times it; 0 = derived: yarn 0.1 ln(factor) + 1, longrope sqrt(1 + ln(factor) / ln(original_max_positions)), else 1"}]})json";
  explicit RotaryTable(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

  // The frequencies f_i in radians per position, i < dim / 2, scaled as configured.
  std::vector<double> frequencies(int64_t dim) const;
  // What cos and sin are multiplied by.
  double attention_factor() const;

private:
  enum class Scaling { None, Linear, Llama3, Yarn, LongRope };
  void yarn(std::vector<double>& f, int64_t dim) const;
  int64_t dim_ = 0, offset_ = 0, original_max_positions_ = 8192;
  double theta_ = 10000.0, factor_ = 1.0, low_freq_factor_ = 1.0, high_freq_factor_ = 4.0;
  double beta_fast_ = 32.0, beta_slow_ = 1.0, mscale_ = 0.0, mscale_all_dim_ = 0.0,
         attention_factor_ = 0.0;
  bool truncate_ = true;
  std::vector<double> factors_;
  Scaling scaling_ = Scaling::None;
};

} // namespace mt::rope
