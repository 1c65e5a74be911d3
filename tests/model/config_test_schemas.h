// Config kinds the config tests register by hand: a small transformer family with every field
// type, defaults, required fields, default children, a child list and dimension push-down
// (TransformerLayer.input_dim to its attention, feed-forward and norm; Stack.input_dim to its
// layers; LanguageModel.input_dim to its decoder), plus a wrapper kind for replacement tests
// and a kind that takes no dimension.
#pragma once

#include "core/model/config_registry.h"

namespace mt::test {

inline ConfigRegistry config_test_registry() {
  ConfigRegistry r;
  r.add(ConfigSchema("Linear", "y = x W + b")
            .required("input_dim", FieldType::Int, "input features")
            .required("output_dim", FieldType::Int, "output features")
            .with_default("bias", true, "add a bias"));
  // A wrapper takes the dimension its parent shares and hands it on to what it wraps.
  r.add(ConfigSchema("RotaryLinear", "rotates the output of input_linear")
            .optional("input_dim", FieldType::Int)
            .required_child("input_linear", "the projection it wraps")
            .with_default("theta", 10000.0, "RoPE base")
            .push_down("input_dim", {"input_linear.input_dim"}));
  r.add(ConfigSchema("Dropout").with_default("rate", 0.1));
  r.add(ConfigSchema("LayerNorm").required("input_dim", FieldType::Int).with_default("eps", 1e-5));
  r.add(ConfigSchema("Attention")
            .required("input_dim", FieldType::Int)
            .required("num_heads", FieldType::Int)
            .with_default("dropout", 0.0)
            .with_default("causal", false)
            .child("qkv_proj", "Linear")
            .child("output_proj", "Linear")
            .push_down("input_dim", {"qkv_proj.input_dim", "output_proj.output_dim"}));
  r.add(ConfigSchema("FeedForward")
            .required("input_dim", FieldType::Int)
            .required("hidden_dim", FieldType::Int)
            .with_default("activation", "gelu")
            .child("linear1", "Linear")
            .child("linear2", "Linear")
            .push_down("input_dim", {"linear1.input_dim", "linear2.output_dim"})
            .push_down("hidden_dim", {"linear1.output_dim", "linear2.input_dim"}));
  r.add(ConfigSchema("TransformerLayer")
            .required("input_dim", FieldType::Int)
            .child("attention", "Attention")
            .child("feed_forward", "FeedForward")
            .child("norm", "LayerNorm")
            .push_down("input_dim",
                       {"attention.input_dim", "feed_forward.input_dim", "norm.input_dim"}));
  r.add(ConfigSchema("Stack")
            .with_default("num_layers", 2)
            .optional("input_dim", FieldType::Int)
            .child("layer", "TransformerLayer")
            .child_list("layers", "per-layer configs, when they differ")
            .push_down("input_dim", {"layer.input_dim", "layers.input_dim"}));
  r.add(ConfigSchema("LanguageModel")
            .required("vocab_size", FieldType::Int)
            .required("input_dim", FieldType::Int)
            .child("decoder", "Stack")
            .with_default("tie_embeddings", true)
            .push_down("input_dim", {"decoder.input_dim"}));
  r.add(ConfigSchema("Experiment")
            .with_default("name", "exp")
            .with_default("seed", 0)
            .with_default("learning_rates", std::vector<double>{1e-3, 3e-4})
            .with_default("mesh", {1, 1})
            .optional("note", FieldType::String)
            .child("model", "LanguageModel"));
  return r;
}

} // namespace mt::test
