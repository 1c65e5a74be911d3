// The rotary table (see rotary_table.hpp). Angles are computed in turns (angle / 2 pi), and
// each frequency f_i / 2 pi, computed in double here, is split into a head of 11 significant
// bits and the rest: position * head is exact in f32 for positions below 2^13, so its
// fractional part loses nothing, and the rest adds a small term. The angle's error then stays
// near f32's rounding of a number below one instead of growing with the position.
#include "rotary_table.hpp"

#include <algorithm>
#include <cmath>

#include "sin_cos.hpp"

namespace mt::rope {

using sdk::TeExpr;
using sdk::TensorBuilder;
using sdk::TeTensor;

namespace {

// values[i] for an index expression i in [lo, hi): a balanced tree of selects over constants.
TeExpr lookup(TensorBuilder& b, TeExpr i, const std::vector<double>& values, size_t lo, size_t hi) {
  if (hi - lo == 1) return b.float_imm(values[lo], sdk::DType::f32());
  size_t mid = (lo + hi) / 2;
  return b.select(i < b.int_imm(static_cast<int64_t>(mid)), lookup(b, i, values, lo, mid),
                  lookup(b, i, values, mid, hi));
}

// The frequencies in turns per position, each as head + tail (see the top of the file).
struct Frequencies {
  std::vector<double> head, tail;
  explicit Frequencies(const std::vector<double>& radians) {
    for (double r : radians) {
      double f = r / (2.0 * M_PI);
      int e = 0;
      std::frexp(f, &e); // f = m 2^e, m in [0.5, 1)
      double h = std::ldexp(std::round(std::ldexp(f, 11 - e)), e - 11);
      head.push_back(h);
      tail.push_back(f - h);
    }
  }
};

} // namespace

RotaryTable::RotaryTable(std::string_view config) {
  sdk::LayerConfig cfg(config);
  dim_ = cfg.get<int64_t>("dim", 0);
  theta_ = cfg.get<double>("theta", 10000.0);
  offset_ = cfg.get<int64_t>("position_offset", 0);
  const std::string scaling = cfg.get<std::string>("scaling", "none");
  factor_ = cfg.get<double>("factor", 1.0);
  low_freq_factor_ = cfg.get<double>("low_freq_factor", 1.0);
  high_freq_factor_ = cfg.get<double>("high_freq_factor", 4.0);
  original_max_positions_ = cfg.get<int64_t>("original_max_positions", 8192);
  beta_fast_ = cfg.get<double>("beta_fast", 32.0);
  beta_slow_ = cfg.get<double>("beta_slow", 1.0);
  truncate_ = cfg.get<bool>("truncate", true);
  mscale_ = cfg.get<double>("mscale", 0.0);
  mscale_all_dim_ = cfg.get<double>("mscale_all_dim", 0.0);
  factors_ = cfg.get<std::vector<double>>("factors", {});
  attention_factor_ = cfg.get<double>("attention_factor", 0.0);
  const std::string me = "rope.RotaryTable: ";
  if (scaling == "none")
    scaling_ = Scaling::None;
  else if (scaling == "linear")
    scaling_ = Scaling::Linear;
  else if (scaling == "llama3")
    scaling_ = Scaling::Llama3;
  else if (scaling == "yarn")
    scaling_ = Scaling::Yarn;
  else if (scaling == "longrope")
    scaling_ = Scaling::LongRope;
  else
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + "scaling '" + scaling + "' (none, linear, llama3, yarn or longrope)");
  if ((scaling_ == Scaling::Yarn || scaling_ == Scaling::LongRope) && original_max_positions_ <= 0)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + scaling + " scaling needs a positive original_max_positions");
  if (scaling_ == Scaling::Yarn && (!(beta_fast_ > 0) || !(beta_slow_ > 0)))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + "yarn's beta_fast " + std::to_string(beta_fast_) + " and beta_slow " +
                         std::to_string(beta_slow_) + " must be positive");
  if (scaling_ == Scaling::LongRope && factors_.empty())
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + "longrope scaling needs its per-frequency factors");
  for (double x : factors_)
    if (!(x > 0) || !std::isfinite(x))
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       me + "factors must be positive (" + std::to_string(x) + ")");
  if (attention_factor_ < 0 || !std::isfinite(attention_factor_))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, me + "attention_factor " +
                                                    std::to_string(attention_factor_) +
                                                    " must be positive (0: derived)");
  if (!(factor_ >= 1) || !std::isfinite(factor_))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + "factor " + std::to_string(factor_) + " must be at least 1");
  if (scaling_ == Scaling::Llama3 &&
      (!(low_freq_factor_ > 0) || !(high_freq_factor_ > low_freq_factor_) ||
       !std::isfinite(high_freq_factor_) || original_max_positions_ <= 0))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me +
                         "llama3 scaling needs 0 < low_freq_factor < high_freq_factor and a "
                         "positive original_max_positions (low " +
                         std::to_string(low_freq_factor_) + ", high " +
                         std::to_string(high_freq_factor_) + ", original_max_positions " +
                         std::to_string(original_max_positions_) + ")");
  if (dim_ < 0 || dim_ % 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "rope.RotaryTable: dim " + std::to_string(dim_) + " must be even");
  if (!(theta_ > 0) || !std::isfinite(theta_))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "rope.RotaryTable: theta " + std::to_string(theta_) + " must be positive");
}

std::vector<double> RotaryTable::frequencies(int64_t dim) const {
  std::vector<double> f;
  for (int64_t i = 0; i < dim / 2; ++i)
    f.push_back(std::pow(theta_, -2.0 * static_cast<double>(i) / static_cast<double>(dim)));
  if (scaling_ == Scaling::Linear)
    for (double& x : f)
      x /= factor_;
  if (scaling_ == Scaling::Llama3) {
    // Wavelengths (positions per turn) against the original context: those that fit in it
    // many times keep their frequency, those longer than it are stretched by factor, and the
    // band between moves linearly in original / wavelength from one to the other.
    const double original = static_cast<double>(original_max_positions_);
    for (double& x : f) {
      const double wavelength = 2.0 * M_PI / x;
      if (wavelength < original / high_freq_factor_) continue;
      if (wavelength > original / low_freq_factor_) {
        x /= factor_;
        continue;
      }
      const double smooth =
          (original / wavelength - low_freq_factor_) / (high_freq_factor_ - low_freq_factor_);
      x = (1 - smooth) * x / factor_ + smooth * x;
    }
  }
  if (scaling_ == Scaling::Yarn) yarn(f, dim);
  if (scaling_ == Scaling::LongRope) {
    if (factors_.size() != f.size())
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "rope.RotaryTable: longrope has " +
                                                      std::to_string(factors_.size()) +
                                                      " factors for " + std::to_string(f.size()) +
                                                      " frequencies (the rotary width / 2)");
    for (size_t i = 0; i < f.size(); ++i)
      f[i] /= factors_[i];
  }
  return f;
}

// YaRN: frequency index i of the dim / 2 is divided by factor below the band [low, high] of
// indexes, kept above it, blended linearly across it; the band's ends are the indexes whose
// frequencies turn beta_fast and beta_slow times over the original context.
void RotaryTable::yarn(std::vector<double>& f, int64_t dim) const {
  const double d = static_cast<double>(dim),
               original = static_cast<double>(original_max_positions_);
  auto index_turning = [&](double turns) {
    return d * std::log(original / (turns * 2 * M_PI)) / (2 * std::log(theta_));
  };
  double low = index_turning(beta_fast_), high = index_turning(beta_slow_);
  if (truncate_) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, d - 1);
  if (low == high) high += 0.001; // as the reference: no division by zero
  for (size_t i = 0; i < f.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    f[i] = f[i] / factor_ * ramp + f[i] * (1 - ramp);
  }
}

double RotaryTable::attention_factor() const {
  if (attention_factor_ > 0) return attention_factor_;
  auto m = [this](double mscale) {
    return factor_ <= 1 ? 1.0 : 0.1 * mscale * std::log(factor_) + 1.0;
  };
  if (scaling_ == Scaling::Yarn)
    return mscale_ > 0 && mscale_all_dim_ > 0 ? m(mscale_) / m(mscale_all_dim_) : m(1.0);
  if (scaling_ == Scaling::LongRope && factor_ > 1)
    return std::sqrt(1 +
                     std::log(factor_) / std::log(static_cast<double>(original_max_positions_)));
  return 1.0;
}

std::vector<TeTensor> RotaryTable::build(sdk::LayerContext& ctx,
                                         const std::vector<TeTensor>& inputs) {
  const std::string me = "rope.RotaryTable";
  if (inputs.size() != 1)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + " takes one input, " + std::to_string(inputs.size()) + " given");
  std::vector<int64_t> xs = inputs[0].shape();
  if (xs.size() < 2 || (dim_ == 0 && xs.size() < 3))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + ": the input must be [B, S, ...]" +
                         (dim_ == 0 ? std::string(", W] (dim 0 takes W from it)") : ""));
  const int64_t dim = dim_ ? dim_ : xs.back();
  if (dim <= 0 || dim % 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + ": rotary width " + std::to_string(dim) + " must be even and positive");
  TensorBuilder& b = ctx.builder();
  Frequencies freq(frequencies(dim));
  const size_t half = static_cast<size_t>(dim / 2);
  auto turns = [&](const std::vector<TeExpr>& a) {
    TeExpr pos = ctx.position(a[0], a[1]);
    if (offset_) pos = pos + b.int_imm(offset_);
    TeExpr p = b.cast(sdk::DType::f32(), pos);
    TeExpr whole = p * lookup(b, a[2], freq.head, 0, half);
    TeExpr frac = whole - b.cast(sdk::DType::f32(), floor_to_index(b, whole));
    return frac + p * lookup(b, a[2], freq.tail, 0, half);
  };
  const std::vector<int64_t> shape = {xs[0], xs[1], dim / 2};
  // The angle is a stage of its own: sin and cos use it about 250 times each (the quadrant
  // reduction, then the polynomials and the quadrant's choice of sign), and inside one
  // expression -- a tree, once printed, hashed, searched or compiled -- the frequency lookup
  // was repeated in every use: 1.9 MB of IR per table, 16 s of search and 1.2 s per build for a
  // six-trial decode task. One stage per table, not one for both: a shared one would fuse
  // both tables and the rotation into one kernel (measured 30 % slower than the two).
  TeTensor cos_turns = b.compute("rope_cos_turns", shape, turns);
  TeTensor sin_turns = b.compute("rope_sin_turns", shape, turns);
  const double amplitude = attention_factor();
  auto scaled = [&](TeExpr x) {
    return amplitude == 1.0 ? x : x * b.float_imm(amplitude, sdk::DType::f32());
  };
  TeTensor cos = b.compute("rope_cos", shape, [&](const std::vector<TeExpr>& a) {
    return scaled(sin_cos_of_turns(b, cos_turns(a)).cos);
  });
  TeTensor sin = b.compute("rope_sin", shape, [&](const std::vector<TeExpr>& a) {
    return scaled(sin_cos_of_turns(b, sin_turns(a)).sin);
  });
  return {cos, sin};
}

} // namespace mt::rope
