// Attention layers (see attention.cpp): the QKV projections, multi-head / grouped-query
// attention, and the transformer's attention sublayer.
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

// The shape every attention layer shares: heads, kv heads (grouped-query attention when fewer)
// and the per-head width, read from a config with defaults resolved here.
struct HeadShape {
  int64_t input_dim = 0, num_heads = 0, num_kv_heads = 0, per_head_dim = 0;
  explicit HeadShape(const sdk::LayerConfig& cfg, const std::string& layer);
  int64_t q_dim() const { return num_heads * per_head_dim; }
  int64_t kv_dim() const { return num_kv_heads * per_head_dim; }
};

#define MT_STD_HEAD_FIELDS                                                                         \
  "{\"name\": \"input_dim\", \"type\": \"int\", \"required\": true, \"doc\": \"model width\"},"    \
  "{\"name\": \"num_heads\", \"type\": \"int\", \"required\": true, \"doc\": \"query heads\"},"    \
  "{\"name\": \"num_kv_heads\", \"type\": \"int\", \"default\": 0, \"doc\": \"key/value heads "    \
  "(grouped-query attention); 0 = num_heads\"},"                                                   \
  "{\"name\": \"per_head_dim\", \"type\": \"int\", \"default\": 0, \"doc\": \"width of a head; "   \
  "0 = input_dim / num_heads\"}"

// What the two QKV projections share: the head shape and whether there are biases. Both give
// three outputs, q [..., heads * per_head_dim] and k, v [..., kv_heads * per_head_dim].
class QKVProjection : public sdk::ModelLayer {
public:
  QKVProjection(std::string_view config, const std::string& layer);

protected:
  HeadShape h_;
  bool bias_ = true;
};

// std.QKVLinear: q, k, v = x W_q^T + b_q, x W_k^T + b_k, x W_v^T + b_v.
class QKVLinear : public QKVProjection {
public:
  static constexpr const char* kSchema =
      R"json({"doc": "separate query, key and value projections (three outputs)", "fields": [)json" MT_STD_HEAD_FIELDS
      R"json(, {"name": "bias", "type": "bool", "default": true, "doc": "biases"}]})json";
  explicit QKVLinear(std::string_view config) : QKVProjection(config, "std.QKVLinear") {}
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;
};

// std.FusedQKVLinear: one projection to [q | k | v] (GPT-2's c_attn), split into three.
class FusedQKVLinear : public QKVProjection {
public:
  static constexpr const char* kSchema =
      R"json({"doc": "one fused query/key/value projection, split into three outputs", "fields": [)json" MT_STD_HEAD_FIELDS
      R"json(, {"name": "bias", "type": "bool", "default": true, "doc": "bias"}]})json";
  explicit FusedQKVLinear(std::string_view config) : QKVProjection(config, "std.FusedQKVLinear") {}
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;
};

// std.MultiheadAttention (and std.GroupedQueryAttention, the same layer): inputs x [B, S, D]
// and optionally a padding mask [B, S] (1 = a token, 0 = padding); output [B, S, D].
class MultiheadAttention : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema =
      R"json({"doc": "softmax(q k^T * scale + masks) v, then the output projection", "fields": [)json" MT_STD_HEAD_FIELDS
      R"json(,
      {"name": "causal", "type": "bool", "default": false, "doc": "each position sees only those before it"},
      {"name": "sliding_window", "type": "int", "default": 0,
       "doc": "causal: each position sees only the last sliding_window positions, itself included (Mistral); 0 = all"},
      {"name": "scale", "type": "float", "default": 0.0, "doc": "score scale; 0 = 1/sqrt(per_head_dim)"},
      {"name": "logit_softcap", "type": "float", "default": 0.0,
       "doc": "scaled scores squashed to cap * tanh(score / cap) before the masks (Gemma 2); 0 = none"},
      {"name": "qkv", "type": "layer", "default": {"kind": "std.QKVLinear"}, "doc": "the q, k, v projection"},
      {"name": "output_bias", "type": "bool", "default": true, "doc": "bias of the output projection"}],
      "push_down": {"input_dim": ["qkv.input_dim"], "num_heads": ["qkv.num_heads"],
                    "num_kv_heads": ["qkv.num_kv_heads"], "per_head_dim": ["qkv.per_head_dim"]}})json";
  explicit MultiheadAttention(std::string_view config);
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  HeadShape h_;
  bool causal_ = false, output_bias_ = true;
  int64_t window_ = 0; // sliding_window
  double scale_ = 0, softcap_ = 0;
};

// std.TransformerAttentionLayer: x + attention(norm(x)) (prenorm) or norm(x + attention(x))
// (postnorm); with post_norm set, x + post_norm(attention(norm(x))) (Gemma 2's sandwich). A
// padding mask, when given, goes to the attention.
class TransformerAttentionLayer : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "norm + attention + residual (pre- or post-norm)",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "model width"},
      {"name": "structure", "type": "string", "default": "prenorm", "doc": "prenorm or postnorm"},
      {"name": "norm", "type": "layer", "default": {"kind": "std.LayerNorm"}, "doc": "normalisation"},
      {"name": "attention", "type": "layer", "default": {"kind": "std.MultiheadAttention"},
       "doc": "the attention"},
      {"name": "post_norm", "type": "layer",
       "doc": "prenorm: a norm of the attention's output before the residual add (Gemma 2); unset: none"}],
    "push_down": {"input_dim": ["norm.input_dim", "attention.input_dim", "post_norm.input_dim"]}})json";
  explicit TransformerAttentionLayer(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t dim_ = 0;
  bool prenorm_ = true;
};

} // namespace mt::std_layers
