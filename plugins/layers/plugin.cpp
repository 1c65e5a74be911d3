// The standard layer library: registration of its layers.
#include "metatune/sdk/plugin.hpp"

#include "attention.hpp"
#include "dropout.hpp"
#include "embedding.hpp"
#include "feed_forward.hpp"
#include "language_model.hpp"
#include "layer_norm.hpp"
#include "linear.hpp"
#include "qk_norm.hpp"
#include "transformer.hpp"

METATUNE_PLUGIN("std_layers", "0.1", "Standard model layers (AXLearn's set)") {
  using namespace mt::std_layers;
  registry.add<Embedding>("std.Embedding", "a learnt vector per integer id");
  registry.add<Dropout>("std.Dropout", "dropout: the identity at inference");
  registry.add<Linear>("std.Linear", "y = x W^T + b over the last axis");
  registry.add<LayerNorm>("std.LayerNorm", "layer normalisation over the last axis");
  registry.add<RMSNorm>("std.RMSNorm", "root-mean-square normalisation over the last axis");
  registry.add<QKVLinear>("std.QKVLinear", "separate query, key, value projections");
  registry.add<FusedQKVLinear>("std.FusedQKVLinear", "one fused query/key/value projection");
  registry.add<QKNormQKVLinear>("std.QKNormQKVLinear",
                                "a QKV projection with q and k RMS-normalised per head");
  registry.add<MultiheadAttention>("std.MultiheadAttention",
                                   "multi-head attention with causal and padding masks");
  registry.add<MultiheadAttention>("std.GroupedQueryAttention",
                                   "multi-head attention with fewer key/value heads");
  registry.add<TransformerAttentionLayer>("std.TransformerAttentionLayer",
                                          "norm + attention + residual");
  registry.add<TransformerFeedForwardLayer>(
      "std.TransformerFeedForwardLayer",
      "norm, up-projection, activation or SwiGLU, down, residual");
  registry.add<TransformerLayer>("std.TransformerLayer",
                                 "attention sublayer + feed-forward sublayer");
  registry.add<Decoder>("std.Decoder", "GPT-style decoder: embeddings, stack, norm, LM head");
  registry.add<Encoder>("std.Encoder", "BERT-style encoder: embeddings, norm, stack");
  registry.add<StackedTransformerLayer>("std.StackedTransformerLayer",
                                        "a layer config repeated num_layers times");
}
