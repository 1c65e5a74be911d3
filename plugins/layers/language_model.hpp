// Whole language models (see language_model.cpp): std.Decoder (GPT-style, with its LM head)
// and std.Encoder (BERT-style).
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

// ids [B, S] (+ an optional padding mask [B, S]) -> logits [B, S, vocab_size].
class Decoder : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "token (+ learnt position) embeddings, a transformer stack, output norm, LM head",
    "fields": [
      {"name": "vocab_size", "type": "int", "required": true, "doc": "ids"},
      {"name": "dim", "type": "int", "required": true, "doc": "model width"},
      {"name": "max_positions", "type": "int", "default": 0,
       "doc": "learnt position embeddings for this many positions; 0 = none (rotary or none)"},
      {"name": "tied_lm_head", "type": "bool", "default": true,
       "doc": "the LM head is the token embedding table (GPT-2); false: a table of its own"},
      {"name": "transformer", "type": "layer", "default": {"kind": "std.StackedTransformerLayer"},
       "doc": "the stack (causal attention)"},
      {"name": "output_norm", "type": "layer", "default": {"kind": "std.LayerNorm"},
       "doc": "final norm; unset: none"},
      {"name": "embedding_scale", "type": "float", "default": 1.0,
       "doc": "the token embeddings multiplied by it before the stack (Gemma: sqrt(dim)); the tied head reads the table unscaled"},
      {"name": "final_logit_softcap", "type": "float", "default": 0.0,
       "doc": "logits squashed to cap * tanh(logit / cap) (Gemma 2); 0 = none"}],
    "push_down": {"dim": ["transformer.input_dim", "output_norm.input_dim"]}})json";
  explicit Decoder(std::string_view config);
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t vocab_ = 0, dim_ = 0, positions_ = 0;
  bool tied_ = true;
  double embedding_scale_ = 1.0, softcap_ = 0.0;
};

// ids [B, S] (+ an optional padding mask [B, S], f32; + optional token types [B, S], integer,
// Hugging Face's token_type_ids: the segment of a sentence pair) -> hidden states [B, S, dim].
// Without token types every token is of type 0.
class Encoder : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "token + position + type embeddings, their norm, a transformer stack (BERT)",
    "fields": [
      {"name": "vocab_size", "type": "int", "required": true, "doc": "ids"},
      {"name": "dim", "type": "int", "required": true, "doc": "model width"},
      {"name": "max_positions", "type": "int", "default": 512, "doc": "learnt positions"},
      {"name": "type_vocab_size", "type": "int", "default": 2, "doc": "token types"},
      {"name": "embedding_norm", "type": "layer", "default": {"kind": "std.LayerNorm"},
       "doc": "norm of the summed embeddings"},
      {"name": "transformer", "type": "layer", "default": {"kind": "std.StackedTransformerLayer"},
       "doc": "the stack (post-norm in BERT)"}],
    "push_down": {"dim": ["embedding_norm.input_dim", "transformer.input_dim"]}})json";
  explicit Encoder(std::string_view config);
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t vocab_ = 0, dim_ = 0, positions_ = 0, types_ = 0;
};

} // namespace mt::std_layers
