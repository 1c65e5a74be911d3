// Attention layers. The computation is written so that fusion (core/graph) makes four kernels
// of it: the scores (a contraction over the head width, scaling and masks fused after it), the
// softmax over each row (its max, exponentials, sum and division in one kernel), the context
// (a contraction over the key positions, written straight into [B, S, heads * width]) and the
// output projection with its bias. Heads are addressed in place -- head h of q is columns
// [h * width, (h + 1) * width) of the projection's output -- so no reshape or transpose is
// ever materialised. Weights are [out, in] as Hugging Face stores them.
#include "attention.hpp"

#include <cmath>

#include "te_ops.hpp"

namespace mt::std_layers {

namespace {

TeExpr idiv(TensorBuilder& b, TeExpr a, int64_t d) {
  return b.binary(sdk::ExprKind::FloorDiv, a, b.int_imm(d));
}
TeExpr imod(TensorBuilder& b, TeExpr a, int64_t d) {
  return b.binary(sdk::ExprKind::FloorMod, a, b.int_imm(d));
}
TeExpr imul_add(TensorBuilder& b, TeExpr a, int64_t m, TeExpr c) {
  return a * b.int_imm(m) + c;
}

// x W^T (+ bias), W [out, in], over the last axis of x.
TeTensor project(TensorBuilder& b, const std::string& name, const TeTensor& x, const TeTensor& w,
                 const TeTensor* bias, int64_t out, int64_t in) {
  std::vector<int64_t> shape = leading(x.shape());
  shape.push_back(out);
  TeExpr k = b.reduce_axis(in, "k");
  TeTensor y = b.compute_reduce(name, shape, [&](const std::vector<TeExpr>& v) {
    return sdk::TeReduction{MT_REDUCE_SUM, x(with(leading(v), k)) * w(v.back(), k), {k}};
  });
  if (!bias) return y;
  return b.compute(name + "_bias", shape,
                   [&](const std::vector<TeExpr>& v) { return y(v) + (*bias)(v.back()); });
}

} // namespace

HeadShape::HeadShape(const sdk::LayerConfig& cfg, const std::string& layer) {
  input_dim = cfg.get<int64_t>("input_dim");
  num_heads = cfg.get<int64_t>("num_heads");
  num_kv_heads = cfg.get<int64_t>("num_kv_heads", 0);
  per_head_dim = cfg.get<int64_t>("per_head_dim", 0);
  if (num_kv_heads == 0) num_kv_heads = num_heads;
  if (num_heads <= 0 || num_kv_heads <= 0 || num_heads % num_kv_heads)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     layer + ": num_heads " + std::to_string(num_heads) +
                         " must be a positive multiple of num_kv_heads " +
                         std::to_string(num_kv_heads));
  if (per_head_dim == 0) {
    if (input_dim % num_heads)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       layer + ": input_dim " + std::to_string(input_dim) +
                           " is not a multiple of num_heads " + std::to_string(num_heads) +
                           " (set per_head_dim)");
    per_head_dim = input_dim / num_heads;
  }
}

QKVProjection::QKVProjection(std::string_view config, const std::string& layer)
    : h_(sdk::LayerConfig(config), layer) {
  bias_ = sdk::LayerConfig(config).get<bool>("bias", true);
}

void QKVLinear::parameters(sdk::ParamList& p) {
  for (const char* n : {"q", "k", "v"}) {
    int64_t out = std::string(n) == "q" ? h_.q_dim() : h_.kv_dim();
    p.push(std::string(n) + "_weight", sdk::DType::f32(), {out, h_.input_dim});
    if (bias_) p.push(std::string(n) + "_bias", sdk::DType::f32(), {out}, R"({"kind": "zeros"})");
  }
}

std::vector<TeTensor> QKVLinear::build(sdk::LayerContext& ctx,
                                       const std::vector<TeTensor>& inputs) {
  TeTensor x = single_input("std.QKVLinear", inputs, h_.input_dim);
  TensorBuilder& b = ctx.builder();
  std::vector<TeTensor> out;
  for (const char* n : {"q", "k", "v"}) {
    std::string s(n);
    int64_t dim = s == "q" ? h_.q_dim() : h_.kv_dim();
    TeTensor bias = bias_ ? ctx.param(s + "_bias") : TeTensor();
    out.push_back(project(b, s + "_proj", x, ctx.param(s + "_weight"), bias_ ? &bias : nullptr, dim,
                          h_.input_dim));
  }
  return out;
}

void FusedQKVLinear::parameters(sdk::ParamList& p) {
  int64_t out = h_.q_dim() + 2 * h_.kv_dim();
  p.push("weight", sdk::DType::f32(), {out, h_.input_dim});
  if (bias_) p.push("bias", sdk::DType::f32(), {out}, R"({"kind": "zeros"})");
}

std::vector<TeTensor> FusedQKVLinear::build(sdk::LayerContext& ctx,
                                            const std::vector<TeTensor>& inputs) {
  TeTensor x = single_input("std.FusedQKVLinear", inputs, h_.input_dim);
  TensorBuilder& b = ctx.builder();
  TeTensor bias = bias_ ? ctx.param("bias") : TeTensor();
  TeTensor qkv = project(b, "qkv_proj", x, ctx.param("weight"), bias_ ? &bias : nullptr,
                         h_.q_dim() + 2 * h_.kv_dim(), h_.input_dim);
  std::vector<TeTensor> out;
  int64_t offset = 0;
  for (int64_t dim : {h_.q_dim(), h_.kv_dim(), h_.kv_dim()}) {
    std::vector<int64_t> shape = leading(x.shape());
    shape.push_back(dim);
    int64_t off = offset;
    out.push_back(b.compute("qkv_split", shape, [&](const std::vector<TeExpr>& v) {
      return qkv(with(leading(v), v.back() + b.int_imm(off)));
    }));
    offset += dim;
  }
  return out;
}

MultiheadAttention::MultiheadAttention(std::string_view config)
    : h_(sdk::LayerConfig(config), "std.MultiheadAttention") {
  sdk::LayerConfig cfg(config);
  causal_ = cfg.get<bool>("causal", false);
  scale_ = cfg.get<double>("scale", 0.0);
  output_bias_ = cfg.get<bool>("output_bias", true);
  window_ = cfg.get<int64_t>("sliding_window", 0);
  softcap_ = cfg.get<double>("logit_softcap", 0.0);
  if (!(softcap_ >= 0))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.MultiheadAttention: logit_softcap " +
                                                    std::to_string(softcap_) +
                                                    " must not be negative");
  if (window_ < 0 || (window_ && !causal_))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.MultiheadAttention: sliding_window " + std::to_string(window_) +
                         (window_ < 0 ? " must not be negative" : " needs causal attention"));
  if (scale_ == 0) scale_ = 1.0 / std::sqrt(static_cast<double>(h_.per_head_dim));
}

void MultiheadAttention::parameters(sdk::ParamList& p) {
  p.push("o_weight", sdk::DType::f32(), {h_.input_dim, h_.q_dim()});
  if (output_bias_) p.push("o_bias", sdk::DType::f32(), {h_.input_dim}, R"({"kind": "zeros"})");
}

std::vector<TeTensor> MultiheadAttention::build(sdk::LayerContext& ctx,
                                                const std::vector<TeTensor>& inputs) {
  const std::string me = "std.MultiheadAttention";
  if (inputs.empty() || inputs.size() > 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, me +
                                                    " takes x [B, S, D] and optionally a mask "
                                                    "[B, S]; " +
                                                    std::to_string(inputs.size()) + " given");
  const TeTensor& x = inputs[0];
  std::vector<int64_t> xs = x.shape();
  if (xs.size() != 3 || xs[2] != h_.input_dim)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     me + ": x must be [B, S, " + std::to_string(h_.input_dim) + "]");
  const int64_t B = xs[0], S = xs[1], H = h_.num_heads, D = h_.per_head_dim;
  const int64_t group = h_.num_heads / h_.num_kv_heads;
  const TeTensor* mask = inputs.size() == 2 ? &inputs[1] : nullptr;
  if (mask && mask->shape() != std::vector<int64_t>{B, S})
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, me + ": the mask must be [B, S]");
  TensorBuilder& b = ctx.builder();

  std::vector<TeTensor> qkv = ctx.call("qkv", {x});
  if (qkv.size() != 3)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, me + ": the qkv layer gave " +
                                                    std::to_string(qkv.size()) +
                                                    " outputs, q, k and v expected");
  const TeTensor& q = qkv[0];
  TeTensor k = qkv[1], v = qkv[2];

  // Generation (ABI 1.7): this step's keys and values go to the host's caches; a decode step
  // reads the keys of every earlier position back (row j = position j) and attends over the
  // cache's capacity, the rows after its own positions masked. A host of ABI 1.9 writes the
  // step's rows into the caches itself before they are read, so the step reads them alone;
  // an older one keeps the cache of the earlier rows only, and the step splices its rows in.
  const bool written = ctx.can_write_state();
  TeTensor k_cache = written ? ctx.state_write("k", k) : ctx.state_append("k", k);
  TeTensor v_cache = written ? ctx.state_write("v", v) : ctx.state_append("v", v);
  const bool decode = k_cache.get() != nullptr;
  if (decode && !causal_)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, me + ": a decode step needs causal attention");
  if (decode && mask)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, me + ": a decode step takes no padding mask");
  const int64_t Sk = decode ? k_cache.shape()[1] : S; // key positions attended over
  if (decode && written) {
    k = k_cache;
    v = v_cache;
  } else if (decode) {
    auto with_step = [&](const std::string& name, const TeTensor& rows, const TeTensor& cache) {
      return b.compute(name, cache.shape(), [&](const std::vector<TeExpr>& a) {
        TeExpr first = ctx.position(a[0], b.int_imm(0));
        TeExpr r = a[1] - first;
        TeExpr in_step = b.binary(sdk::ExprKind::And, r >= b.int_imm(0), r < b.int_imm(S));
        TeExpr row = sdk::min(sdk::max(r, b.int_imm(0)), b.int_imm(S - 1));
        return b.select(in_step, rows(a[0], row, a[2]), cache(a));
      });
    };
    k = with_step("attn_keys", k, k_cache);
    v = with_step("attn_values", v, v_cache);
  }

  TeExpr d = b.reduce_axis(D, "d");
  TeTensor scores =
      b.compute_reduce("attn_scores", {B, H, S, Sk}, [&](const std::vector<TeExpr>& a) {
        TeExpr kv_head = idiv(b, a[1], group);
        return sdk::TeReduction{MT_REDUCE_SUM,
                                q(a[0], a[2], imul_add(b, a[1], D, d)) *
                                    k(a[0], a[3], imul_add(b, kv_head, D, d)),
                                {d}};
      });
  TeTensor masked = b.compute("attn_masked", {B, H, S, Sk}, [&](const std::vector<TeExpr>& a) {
    TeExpr s = scores(a) * f32(b, scale_);
    if (softcap_ > 0)
      s = b.call(sdk::MathFn::Tanh, {s * f32(b, 1.0 / softcap_)}) * f32(b, softcap_);
    TeExpr neg = f32(b, -1e30);
    if (decode || causal_) {
      // Key a[3] is seen from the query at position `at` when it is not later and, under a
      // sliding window, not window_ or more positions earlier.
      TeExpr at = decode ? ctx.position(a[0], a[2]) : a[2];
      TeExpr seen = a[3] <= at;
      if (window_) seen = b.binary(sdk::ExprKind::And, seen, a[3] > at - b.int_imm(window_));
      s = b.select(seen, s, neg);
    }
    if (mask) s = b.select((*mask)(a[0], a[3]) > f32(b, 0.5), s, neg);
    return s;
  });
  TeExpr j1 = b.reduce_axis(Sk, "j");
  TeTensor row_max = b.compute_reduce("attn_max", {B, H, S}, [&](const std::vector<TeExpr>& a) {
    return sdk::TeReduction{MT_REDUCE_MAX, masked(a[0], a[1], a[2], j1), {j1}};
  });
  TeTensor ex = b.compute("attn_exp", {B, H, S, Sk}, [&](const std::vector<TeExpr>& a) {
    return b.call(sdk::MathFn::Exp, {masked(a) - row_max(a[0], a[1], a[2])});
  });
  TeExpr j2 = b.reduce_axis(Sk, "j");
  TeTensor row_sum = b.compute_reduce("attn_sum", {B, H, S}, [&](const std::vector<TeExpr>& a) {
    return sdk::TeReduction{MT_REDUCE_SUM, ex(a[0], a[1], a[2], j2), {j2}};
  });
  TeTensor probs = b.compute("attn_probs", {B, H, S, Sk}, [&](const std::vector<TeExpr>& a) {
    return ex(a) / row_sum(a[0], a[1], a[2]);
  });
  TeExpr j = b.reduce_axis(Sk, "j");
  TeTensor context =
      b.compute_reduce("attn_context", {B, S, H * D}, [&](const std::vector<TeExpr>& a) {
        TeExpr head = idiv(b, a[2], D), within = imod(b, a[2], D);
        TeExpr kv_head = idiv(b, head, group);
        return sdk::TeReduction{MT_REDUCE_SUM,
                                probs(a[0], head, a[1], j) *
                                    v(a[0], j, imul_add(b, kv_head, D, within)),
                                {j}};
      });
  TeTensor bias = output_bias_ ? ctx.param("o_bias") : TeTensor();
  return {project(b, "attn_out", context, ctx.param("o_weight"), output_bias_ ? &bias : nullptr,
                  h_.input_dim, H * D)};
}

TransformerAttentionLayer::TransformerAttentionLayer(std::string_view config) {
  sdk::LayerConfig cfg(config);
  dim_ = cfg.get<int64_t>("input_dim");
  std::string s = cfg.get<std::string>("structure", "prenorm");
  if (s != "prenorm" && s != "postnorm")
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.TransformerAttentionLayer: structure '" + s + "' (prenorm, postnorm)");
  prenorm_ = s == "prenorm";
}

std::vector<TeTensor> TransformerAttentionLayer::build(sdk::LayerContext& ctx,
                                                       const std::vector<TeTensor>& inputs) {
  if (inputs.empty() || inputs.size() > 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.TransformerAttentionLayer takes x and optionally a mask");
  const TeTensor& x = inputs[0];
  TensorBuilder& b = ctx.builder();
  std::vector<TeTensor> att_in = inputs;
  if (prenorm_) att_in[0] = ctx.call1("norm", {x});
  TeTensor att = ctx.call1("attention", att_in);
  if (ctx.num_children("post_norm")) {
    if (!prenorm_)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "std.TransformerAttentionLayer: post_norm needs the prenorm structure");
    att = ctx.call1("post_norm", {att});
  }
  TeTensor sum = b.compute("attn_residual", x.shape(),
                           [&](const std::vector<TeExpr>& v) { return x(v) + att(v); });
  return {prenorm_ ? sum : ctx.call1("norm", {sum})};
}

} // namespace mt::std_layers
