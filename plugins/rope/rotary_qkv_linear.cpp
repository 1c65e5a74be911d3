// The rotary QKV wrapper (see rotary_qkv_linear.hpp). Heads are addressed in place, as the
// standard attention does: channel c of q is channel e = c mod per_head_dim of head
// c / per_head_dim, so the rotation is one elementwise compute over q (and one over k) that
// reads each channel's partner in the same head; nothing is reshaped.
#include "rotary_qkv_linear.hpp"

namespace mt::rope {

using sdk::TeExpr;
using sdk::TensorBuilder;
using sdk::TeTensor;

namespace {

const char* const kMe = "rope.RotaryQKVLinear";

sdk::Error invalid(const std::string& what) {
  return sdk::Error(MT_ERROR_INVALID_ARGUMENT, std::string(kMe) + ": " + what);
}

// One rotated tensor t [B, S, heads * D]: within each head, channels e < r turn in pairs by
// the table's angles, the others pass through.
class HeadRotation {
public:
  HeadRotation(TensorBuilder& b, Convention convention, int64_t head_dim, int64_t rotary_dim,
               const TeTensor& cos, const TeTensor& sin)
      : b_(b), convention_(convention), d_(head_dim), r_(rotary_dim), cos_(cos), sin_(sin) {}

  TeTensor operator()(const std::string& name, const TeTensor& t) const {
    return b_.compute(name, t.shape(), [&](const std::vector<TeExpr>& a) {
      TeExpr e = b_.binary(sdk::ExprKind::FloorMod, a[2], b_.int_imm(d_));
      TeExpr head_start = a[2] - e;
      // Pass-through channels compute a discarded rotation of the last pair: every index stays
      // in range whichever branch a target evaluates.
      TeExpr ec = r_ == d_ ? e : sdk::min(e, b_.int_imm(r_ - 1));
      TeExpr freq, partner, first;
      if (convention_ == Convention::Interleaved) {
        TeExpr odd = b_.binary(sdk::ExprKind::FloorMod, ec, b_.int_imm(2));
        freq = b_.binary(sdk::ExprKind::FloorDiv, ec, b_.int_imm(2));
        first = b_.binary(sdk::ExprKind::EQ, odd, b_.int_imm(0));
        partner = ec + b_.int_imm(1) - odd * b_.int_imm(2);
      } else {
        TeExpr half = b_.int_imm(r_ / 2);
        first = ec < half;
        freq = b_.select(first, ec, ec - half);
        partner = b_.select(first, ec + half, ec - half);
      }
      TeExpr x = t(a[0], a[1], a[2]), y = t(a[0], a[1], head_start + partner);
      // (x, y) -> (x cos - y sin, y cos + x sin) for the pair's first and second channel.
      TeExpr sign = b_.select(first, b_.float_imm(-1.0), b_.float_imm(1.0));
      TeExpr rotated = x * cos_(a[0], a[1], freq) + y * sign * sin_(a[0], a[1], freq);
      return r_ == d_ ? rotated : b_.select(e < b_.int_imm(r_), rotated, x);
    });
  }

private:
  TensorBuilder& b_;
  Convention convention_;
  int64_t d_, r_;
  TeTensor cos_, sin_;
};

} // namespace

RotaryQKVLinear::RotaryQKVLinear(std::string_view config) {
  sdk::LayerConfig cfg(config);
  input_dim_ = cfg.get<int64_t>("input_dim");
  heads_ = cfg.get<int64_t>("num_heads");
  kv_heads_ = cfg.get<int64_t>("num_kv_heads", 0);
  head_dim_ = cfg.get<int64_t>("per_head_dim", 0);
  rotary_dim_ = cfg.get<int64_t>("rotary_dim", 0);
  if (kv_heads_ == 0) kv_heads_ = heads_;
  if (heads_ <= 0 || kv_heads_ <= 0 || heads_ % kv_heads_)
    throw invalid("num_heads " + std::to_string(heads_) +
                  " must be a positive multiple of num_kv_heads " + std::to_string(kv_heads_));
  if (head_dim_ == 0) {
    if (input_dim_ % heads_)
      throw invalid("input_dim " + std::to_string(input_dim_) + " is not a multiple of num_heads " +
                    std::to_string(heads_) + " (set per_head_dim)");
    head_dim_ = input_dim_ / heads_;
  }
  if (rotary_dim_ == 0) rotary_dim_ = head_dim_;
  if (rotary_dim_ < 0 || rotary_dim_ % 2 || rotary_dim_ > head_dim_)
    throw invalid("rotary_dim " + std::to_string(rotary_dim_) +
                  " must be even and at most per_head_dim " + std::to_string(head_dim_));
  std::string c = cfg.get<std::string>("convention", "rotate_half");
  if (c == "rotate_half")
    convention_ = Convention::RotateHalf;
  else if (c == "interleaved")
    convention_ = Convention::Interleaved;
  else
    throw invalid("convention '" + c + "' (rotate_half, interleaved)");
}

std::vector<TeTensor> RotaryQKVLinear::build(sdk::LayerContext& ctx,
                                             const std::vector<TeTensor>& inputs) {
  TensorBuilder& b = ctx.builder();
  std::vector<TeTensor> qkv = ctx.call("input_linear", inputs);
  if (qkv.size() != 3)
    throw invalid("input_linear gave " + std::to_string(qkv.size()) +
                  " outputs, q, k and v expected");
  const std::vector<int64_t> qs = qkv[0].shape();
  const int64_t widths[3] = {heads_ * head_dim_, kv_heads_ * head_dim_, kv_heads_ * head_dim_};
  for (size_t i = 0; i < 3; ++i) {
    std::vector<int64_t> s = qkv[i].shape();
    if (s.size() != 3 || s[0] != qs[0] || s[1] != qs[1] || s[2] != widths[i])
      throw invalid(std::string("input_linear's ") + "qkv"[i] + " must be [B, S, " +
                    std::to_string(widths[i]) + "]");
  }
  // The table reads only the shape of its input: batch, sequence and (dim 0) the rotary
  // width. This tensor carries them; nothing reads its values, so it is never computed.
  TeTensor width = b.compute("rope_width", {qs[0], qs[1], rotary_dim_},
                             [&](const std::vector<TeExpr>&) { return b.float_imm(0.0); });
  std::vector<TeTensor> table = ctx.call("rotary", {width});
  const std::vector<int64_t> want = {qs[0], qs[1], rotary_dim_ / 2};
  if (table.size() != 2 || table[0].shape() != want || table[1].shape() != want)
    throw invalid("the rotary table must give cos and sin [B, S, " +
                  std::to_string(rotary_dim_ / 2) + "] (rotary_dim " + std::to_string(rotary_dim_) +
                  "; is rotary.dim set to another width?)");
  HeadRotation rotate(b, convention_, head_dim_, rotary_dim_, table[0], table[1]);
  return {rotate("rope_q", qkv[0]), rotate("rope_k", qkv[1]), qkv[2]};
}

} // namespace mt::rope
