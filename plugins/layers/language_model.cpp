// std.Decoder and std.Encoder. Each owns its embedding tables (so that the decoder's LM head
// can be the token table itself, as GPT-2 ties them) and gathers from them directly; the sum
// of the embeddings is elementwise work fused into the gather's kernel.
#include "language_model.hpp"

#include <cmath>

#include <optional>
#include <string>

#include "te_ops.hpp"

namespace mt::std_layers {

namespace {

// The ids input and the optional mask, checked.
void check_inputs(const std::string& layer, const std::vector<TeTensor>& inputs) {
  if (inputs.empty() || inputs.size() > 2 || !inputs[0].dtype().is_int() ||
      inputs[0].shape().size() != 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     layer + " takes integer ids [B, S] and optionally a padding mask [B, S]");
}

// table[clamp(ids[b, s])][d] (+ extra(b, s, d) when given).
TeTensor gather(TensorBuilder& b, const std::string& name, const TeTensor& ids,
                const TeTensor& table, int64_t rows, int64_t dim,
                const std::function<TeExpr(const std::vector<TeExpr>&)>& extra) {
  std::vector<int64_t> shape = ids.shape();
  shape.push_back(dim);
  return b.compute(name, shape, [&](const std::vector<TeExpr>& v) {
    TeExpr id = b.cast(sdk::DType::index(), ids(v[0], v[1]));
    id = sdk::min(sdk::max(id, b.int_imm(0)), b.int_imm(rows - 1));
    TeExpr e = table(id, v[2]);
    return extra ? e + extra(v) : e;
  });
}

void check_positions(const std::string& layer, int64_t seq, int64_t max_positions) {
  if (max_positions > 0 && seq > max_positions)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, layer + ": sequence of " + std::to_string(seq) +
                                                    " beyond max_positions " +
                                                    std::to_string(max_positions));
}

} // namespace

Decoder::Decoder(std::string_view config) {
  sdk::LayerConfig cfg(config);
  vocab_ = cfg.get<int64_t>("vocab_size");
  dim_ = cfg.get<int64_t>("dim");
  positions_ = cfg.get<int64_t>("max_positions", 0);
  tied_ = cfg.get<bool>("tied_lm_head", true);
  embedding_scale_ = cfg.get<double>("embedding_scale", 1.0);
  softcap_ = cfg.get<double>("final_logit_softcap", 0.0);
  if (!(softcap_ >= 0) || !std::isfinite(embedding_scale_))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.Decoder: final_logit_softcap must not be negative and embedding_scale "
                     "must be finite");
}

void Decoder::parameters(sdk::ParamList& p) {
  p.push("token_weight", sdk::DType::f32(), {vocab_, dim_});
  if (positions_ > 0) p.push("position_weight", sdk::DType::f32(), {positions_, dim_});
  if (!tied_) p.push("lm_head_weight", sdk::DType::f32(), {vocab_, dim_});
}

std::vector<TeTensor> Decoder::build(sdk::LayerContext& ctx, const std::vector<TeTensor>& inputs) {
  check_inputs("std.Decoder", inputs);
  TensorBuilder& b = ctx.builder();
  const TeTensor& ids = inputs[0];
  check_positions("std.Decoder", ids.shape()[1], positions_);
  TeTensor tok = ctx.param("token_weight");
  TeTensor pos = positions_ > 0 ? ctx.param("position_weight") : TeTensor();
  const bool decoding = ctx.decoding(); // positions are a run-time input
  TeTensor x = gather(
      b, "embed", ids, tok, vocab_, dim_,
      positions_ > 0
          ? std::function<TeExpr(const std::vector<TeExpr>&)>([&](const std::vector<TeExpr>& v) {
              if (!decoding) return pos(v[1], v[2]);
              TeExpr p = ctx.position(v[0], v[1]);
              p = sdk::min(sdk::max(p, b.int_imm(0)), b.int_imm(positions_ - 1));
              return pos(p, v[2]);
            })
          : nullptr);
  if (embedding_scale_ != 1.0)
    x = b.compute("embed_scale", x.shape(),
                  [&](const std::vector<TeExpr>& v) { return x(v) * f32(b, embedding_scale_); });
  std::vector<TeTensor> in = inputs;
  in[0] = x;
  TeTensor h = ctx.call1("transformer", in);
  if (ctx.num_children("output_norm")) h = ctx.call1("output_norm", {h});
  TeTensor head = tied_ ? tok : ctx.param("lm_head_weight");
  std::vector<int64_t> shape = leading(h.shape());
  shape.push_back(vocab_);
  TeExpr k = b.reduce_axis(dim_, "k");
  TeTensor logits = b.compute_reduce("lm_head", shape, [&](const std::vector<TeExpr>& v) {
    return sdk::TeReduction{MT_REDUCE_SUM, h(v[0], v[1], k) * head(v[2], k), {k}};
  });
  if (softcap_ == 0) return {logits};
  return {b.compute("lm_head_softcap", shape, [&](const std::vector<TeExpr>& v) {
    return b.call(sdk::MathFn::Tanh, {logits(v) * f32(b, 1.0 / softcap_)}) * f32(b, softcap_);
  })};
}

Encoder::Encoder(std::string_view config) {
  sdk::LayerConfig cfg(config);
  vocab_ = cfg.get<int64_t>("vocab_size");
  dim_ = cfg.get<int64_t>("dim");
  positions_ = cfg.get<int64_t>("max_positions", 512);
  types_ = cfg.get<int64_t>("type_vocab_size", 2);
  if (positions_ <= 0 || types_ <= 0)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.Encoder: max_positions and type_vocab_size must be positive");
}

void Encoder::parameters(sdk::ParamList& p) {
  p.push("token_weight", sdk::DType::f32(), {vocab_, dim_});
  p.push("position_weight", sdk::DType::f32(), {positions_, dim_});
  p.push("type_weight", sdk::DType::f32(), {types_, dim_});
}

namespace {

// The encoder's inputs after the ids, told apart by dtype: the padding mask is f32, the token
// types integer; each at most once, of the ids' shape.
struct EncoderInputs {
  std::optional<TeTensor> mask, types;
};

EncoderInputs encoder_inputs(const std::vector<TeTensor>& inputs) {
  const std::string want = "std.Encoder takes integer ids [B, S], then optionally a padding mask "
                           "[B, S] (f32) and token types [B, S] (integer)";
  if (inputs.empty() || inputs.size() > 3 || !inputs[0].dtype().is_int() ||
      inputs[0].shape().size() != 2)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, want);
  EncoderInputs e;
  for (size_t i = 1; i < inputs.size(); ++i) {
    std::optional<TeTensor>& slot = inputs[i].dtype().is_int() ? e.types : e.mask;
    if (slot || inputs[i].shape() != inputs[0].shape())
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       want + "; input " + std::to_string(i) +
                           (slot ? " repeats one of them" : " is not of the ids' shape"));
    slot = inputs[i];
  }
  return e;
}

} // namespace

std::vector<TeTensor> Encoder::build(sdk::LayerContext& ctx, const std::vector<TeTensor>& inputs) {
  const EncoderInputs extra = encoder_inputs(inputs);
  TensorBuilder& b = ctx.builder();
  const TeTensor& ids = inputs[0];
  check_positions("std.Encoder", ids.shape()[1], positions_);
  TeTensor pos = ctx.param("position_weight"), type = ctx.param("type_weight");
  // A type outside the table is clamped into it, as ids are (an index read out of bounds
  // would be worse than a wrong row).
  auto type_row = [&](const std::vector<TeExpr>& v) -> TeExpr {
    if (!extra.types) return b.int_imm(0);
    TeExpr t = b.cast(sdk::DType::index(), (*extra.types)(v[0], v[1]));
    return sdk::min(sdk::max(t, b.int_imm(0)), b.int_imm(types_ - 1));
  };
  TeTensor x = gather(
      b, "embed", ids, ctx.param("token_weight"), vocab_, dim_,
      [&](const std::vector<TeExpr>& v) { return pos(v[1], v[2]) + type(type_row(v), v[2]); });
  std::vector<TeTensor> in = {ctx.call1("embedding_norm", {x})};
  if (extra.mask) in.push_back(*extra.mask);
  return {ctx.call1("transformer", in)};
}

} // namespace mt::std_layers
