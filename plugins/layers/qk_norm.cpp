// The per-head QK-norm wrapper (see qk_norm.hpp). Heads are addressed in place as the
// attention does (channel c is channel c mod per_head_dim of head c / per_head_dim): a
// reduction gives each head's sum of squares, one elementwise compute scales the channels.
#include "qk_norm.hpp"

#include "te_ops.hpp"

namespace mt::std_layers {

namespace {

const char* const kMe = "std.QKNormQKVLinear";

// t [B, S, heads * d] normalised per head: t * rsqrt(mean over the head of t^2 + eps) * w[e].
TeTensor head_rms_norm(TensorBuilder& b, const std::string& name, const TeTensor& t,
                       const TeTensor& w, int64_t heads, int64_t d, double eps) {
  const std::vector<int64_t> s = t.shape();
  TeExpr k = b.reduce_axis(d, "d");
  TeTensor sq =
      b.compute_reduce(name + "_sq", {s[0], s[1], heads}, [&](const std::vector<TeExpr>& a) {
        TeExpr e = t(a[0], a[1], a[2] * b.int_imm(d) + k);
        return sdk::TeReduction{MT_REDUCE_SUM, e * e, {k}};
      });
  TeExpr inv_n = f32(b, 1.0 / static_cast<double>(d));
  return b.compute(name, s, [&](const std::vector<TeExpr>& a) {
    TeExpr head = b.binary(sdk::ExprKind::FloorDiv, a[2], b.int_imm(d));
    TeExpr e = b.binary(sdk::ExprKind::FloorMod, a[2], b.int_imm(d));
    TeExpr inv = b.call(sdk::MathFn::Rsqrt, {sq(a[0], a[1], head) * inv_n + f32(b, eps)});
    return t(a) * inv * w(e);
  });
}

} // namespace

QKNormQKVLinear::QKNormQKVLinear(std::string_view config) : h_(sdk::LayerConfig(config), kMe) {
  eps_ = sdk::LayerConfig(config).get<double>("eps", 1e-6);
  if (!(eps_ >= 0))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     std::string(kMe) + ": eps " + std::to_string(eps_) + " must not be negative");
}

void QKNormQKVLinear::parameters(sdk::ParamList& p) {
  p.push("q_norm_weight", sdk::DType::f32(), {h_.per_head_dim}, R"({"kind": "ones"})");
  p.push("k_norm_weight", sdk::DType::f32(), {h_.per_head_dim}, R"({"kind": "ones"})");
}

std::vector<TeTensor> QKNormQKVLinear::build(sdk::LayerContext& ctx,
                                             const std::vector<TeTensor>& inputs) {
  std::vector<TeTensor> qkv = ctx.call("input_linear", inputs);
  const int64_t d = h_.per_head_dim;
  const int64_t widths[2] = {h_.num_heads * d, h_.num_kv_heads * d};
  if (qkv.size() != 3)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, std::string(kMe) + ": input_linear gave " +
                                                    std::to_string(qkv.size()) +
                                                    " outputs, q, k and v expected");
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<int64_t> s = qkv[i].shape();
    if (s.size() != 3 || s[2] != widths[i])
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, std::string(kMe) + ": input_linear's " + "qk"[i] +
                                                      " must be [B, S, " +
                                                      std::to_string(widths[i]) + "]");
  }
  TensorBuilder& b = ctx.builder();
  return {head_rms_norm(b, "q_norm", qkv[0], ctx.param("q_norm_weight"), h_.num_heads, d, eps_),
          head_rms_norm(b, "k_norm", qkv[1], ctx.param("k_norm_weight"), h_.num_kv_heads, d, eps_),
          qkv[2]};
}

} // namespace mt::std_layers
