// Loading Hugging Face checkpoint folders (see hf_checkpoint.h).
#include "core/graph/hf_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/graph/layer_registry.h"
#include "core/model/safetensors_shards.h"
#include "core/plugin/plugin_host.h"

namespace mt {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot be read (a checkpoint folder has one)");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument(path + ": not a JSON object");
  return j;
}

int64_t int_field(const nlohmann::json& j, const std::string& path, const char* name,
                  std::optional<int64_t> fallback = std::nullopt) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    throw std::invalid_argument(path + ": no \"" + std::string(name) + "\"");
  }
  if (!it->is_number_integer() || it->get<int64_t>() <= 0)
    throw std::invalid_argument(path + ": \"" + std::string(name) +
                                "\" is not a positive integer: " + it->dump());
  return it->get<int64_t>();
}

// Optional fields: absent or null is the fallback, a value of another type is refused by name
// (nlohmann's own conversion error would name neither the file nor the field).
double float_field(const nlohmann::json& j, const std::string& path, const char* name,
                   double fallback) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number())
    throw std::invalid_argument(path + ": \"" + std::string(name) +
                                "\" is not a number: " + it->dump());
  return it->get<double>();
}

std::string string_field(const nlohmann::json& j, const std::string& path, const char* name,
                         const std::string& fallback) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string())
    throw std::invalid_argument(path + ": \"" + std::string(name) +
                                "\" is not a string: " + it->dump());
  return it->get<std::string>();
}

bool bool_field(const nlohmann::json& j, const std::string& path, const char* name,
                bool fallback = false) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    throw std::invalid_argument(path + ": \"" + std::string(name) +
                                "\" is not true or false: " + it->dump());
  return it->get<bool>();
}

// One metatune parameter from one checkpoint tensor: its shape there, and whether it is stored
// transposed (GPT-2's Conv1D keeps [in, out]).
struct Source {
  std::string name;
  bool transpose = false;
  bool plus_one = false; // Gemma's norms scale by 1 + weight: stored as weight, read as 1 + it
  // A part of a tensor stacked along its first dimension (Phi-3's gate_up_proj: the gate's
  // rows, then the up projection's): part `part` of `parts` equal ones; parts 0 = the whole.
  int64_t part = 0, parts = 0;
};

class Gpt2 {
public:
  Gpt2(const ConfigRegistry& reg, const std::string& dir) : dir_(dir) {
    std::string cfg_path = dir + "/config.json";
    nlohmann::json j = read_json(cfg_path);
    vocab_ = int_field(j, cfg_path, "vocab_size");
    positions_ = int_field(j, cfg_path, "n_positions");
    dim_ = int_field(j, cfg_path, "n_embd");
    layers_ = int_field(j, cfg_path, "n_layer");
    heads_ = int_field(j, cfg_path, "n_head");
    inner_ = int_field(j, cfg_path, "n_inner", 4 * dim_);
    double eps = float_field(j, cfg_path, "layer_norm_epsilon", 1e-5);
    std::string act = string_field(j, cfg_path, "activation_function", "gelu_new");
    std::string ours = act == "gelu_new" || act == "gelu_pytorch_tanh" ? "gelu_tanh"
                       : act == "gelu"                                 ? "gelu"
                       : act == "relu"                                 ? "relu"
                                                                       : "";
    if (ours.empty())
      throw std::invalid_argument(cfg_path + ": activation_function '" + act +
                                  "' is not supported (gelu_new, gelu, relu)");
    if (dim_ % heads_)
      throw std::invalid_argument(cfg_path + ": n_embd " + std::to_string(dim_) +
                                  " is not a multiple of n_head " + std::to_string(heads_));
    config = reg.make("std.Decoder");
    const std::string a = "transformer.layer.self_attention.",
                      f = "transformer.layer.feed_forward.";
    config.set("vocab_size", vocab_)
        .set("dim", dim_)
        .set("max_positions", positions_)
        .set("tied_lm_head", true)
        .set("transformer.num_layers", layers_)
        .set(a + "structure", "prenorm")
        .set(a + "norm.eps", eps)
        .set(a + "attention.num_heads", heads_)
        .set(a + "attention.causal", true)
        .set(a + "attention.qkv", reg.make("std.FusedQKVLinear"))
        .set(f + "hidden_dim", inner_)
        .set(f + "activation", ours)
        .set(f + "structure", "prenorm")
        .set(f + "norm.eps", eps)
        .set("output_norm.eps", eps);
  }

  // metatune path -> checkpoint tensor.
  std::map<std::string, Source> mapping() const {
    std::map<std::string, Source> m = {{"token_weight", {"wte.weight"}},
                                       {"position_weight", {"wpe.weight"}},
                                       {"output_norm.weight", {"ln_f.weight"}},
                                       {"output_norm.bias", {"ln_f.bias"}}};
    for (int64_t i = 0; i < layers_; ++i) {
      std::string p = "transformer.layer." + std::to_string(i) + ".",
                  h = "h." + std::to_string(i) + ".";
      std::string a = p + "self_attention.", f = p + "feed_forward.";
      m[a + "norm.weight"] = {h + "ln_1.weight"};
      m[a + "norm.bias"] = {h + "ln_1.bias"};
      m[a + "attention.qkv.weight"] = {h + "attn.c_attn.weight", true};
      m[a + "attention.qkv.bias"] = {h + "attn.c_attn.bias"};
      m[a + "attention.o_weight"] = {h + "attn.c_proj.weight", true};
      m[a + "attention.o_bias"] = {h + "attn.c_proj.bias"};
      m[f + "norm.weight"] = {h + "ln_2.weight"};
      m[f + "norm.bias"] = {h + "ln_2.bias"};
      m[f + "linear1.weight"] = {h + "mlp.c_fc.weight", true};
      m[f + "linear1.bias"] = {h + "mlp.c_fc.bias"};
      m[f + "linear2.weight"] = {h + "mlp.c_proj.weight", true};
      m[f + "linear2.bias"] = {h + "mlp.c_proj.bias"};
    }
    return m;
  }

  // Checkpoint tensors that are not parameters: GPT-2's causal-mask buffers, the tied head.
  static bool ignorable(const std::string& name) {
    auto ends = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    return ends(".attn.bias") || ends(".attn.masked_bias") || name == "lm_head.weight";
  }

  Config config;

private:
  std::string dir_;
  int64_t vocab_ = 0, positions_ = 0, dim_ = 0, layers_ = 0, heads_ = 0, inner_ = 0;
};

class Bert {
public:
  Bert(const ConfigRegistry& reg, const std::string& dir) {
    std::string cfg_path = dir + "/config.json";
    nlohmann::json j = read_json(cfg_path);
    layers_ = int_field(j, cfg_path, "num_hidden_layers");
    int64_t dim = int_field(j, cfg_path, "hidden_size");
    int64_t heads = int_field(j, cfg_path, "num_attention_heads");
    if (dim % heads)
      throw std::invalid_argument(cfg_path + ": hidden_size " + std::to_string(dim) +
                                  " is not a multiple of num_attention_heads " +
                                  std::to_string(heads));
    double eps = float_field(j, cfg_path, "layer_norm_eps", 1e-12);
    std::string act = string_field(j, cfg_path, "hidden_act", "gelu");
    if (act != "gelu" && act != "relu" && act != "gelu_new")
      throw std::invalid_argument(cfg_path + ": hidden_act '" + act +
                                  "' is not supported (gelu, gelu_new, relu)");
    config = reg.make("std.Encoder");
    const std::string a = "transformer.layer.self_attention.",
                      f = "transformer.layer.feed_forward.";
    config.set("vocab_size", int_field(j, cfg_path, "vocab_size"))
        .set("dim", dim)
        .set("max_positions", int_field(j, cfg_path, "max_position_embeddings", 512))
        .set("type_vocab_size", int_field(j, cfg_path, "type_vocab_size", 2))
        .set("embedding_norm.eps", eps)
        .set("transformer.num_layers", layers_)
        .set(a + "structure", "postnorm")
        .set(a + "norm.eps", eps)
        .set(a + "attention.num_heads", heads)
        .set(a + "attention.causal", false)
        .set(f + "hidden_dim", int_field(j, cfg_path, "intermediate_size", 4 * dim))
        .set(f + "activation", act == "gelu_new" ? "gelu_tanh" : act)
        .set(f + "structure", "postnorm")
        .set(f + "norm.eps", eps);
  }

  // metatune path -> checkpoint tensor (nn.Linear weights are [out, in] as ours).
  std::map<std::string, Source> mapping(const SafetensorsShards& file,
                                        const std::string& pre) const {
    // Old checkpoints name LayerNorm's parameters gamma / beta.
    auto ln = [&](const std::string& base, bool weight) {
      std::string modern = base + (weight ? ".weight" : ".bias");
      return file.find(pre + modern) ? modern : base + (weight ? ".gamma" : ".beta");
    };
    std::map<std::string, Source> m = {
        {"token_weight", {"embeddings.word_embeddings.weight"}},
        {"position_weight", {"embeddings.position_embeddings.weight"}},
        {"type_weight", {"embeddings.token_type_embeddings.weight"}},
        {"embedding_norm.weight", {ln("embeddings.LayerNorm", true)}},
        {"embedding_norm.bias", {ln("embeddings.LayerNorm", false)}}};
    for (int64_t i = 0; i < layers_; ++i) {
      std::string p = "transformer.layer." + std::to_string(i) + ".";
      std::string h = "encoder.layer." + std::to_string(i) + ".";
      std::string a = p + "self_attention.", f = p + "feed_forward.";
      for (const char* x : {"q", "k", "v"}) {
        std::string hf = std::string(x) == "q" ? "query" : std::string(x) == "k" ? "key" : "value";
        m[a + "attention.qkv." + x + "_weight"] = {h + "attention.self." + hf + ".weight"};
        m[a + "attention.qkv." + x + "_bias"] = {h + "attention.self." + hf + ".bias"};
      }
      m[a + "attention.o_weight"] = {h + "attention.output.dense.weight"};
      m[a + "attention.o_bias"] = {h + "attention.output.dense.bias"};
      m[a + "norm.weight"] = {ln(h + "attention.output.LayerNorm", true)};
      m[a + "norm.bias"] = {ln(h + "attention.output.LayerNorm", false)};
      m[f + "linear1.weight"] = {h + "intermediate.dense.weight"};
      m[f + "linear1.bias"] = {h + "intermediate.dense.bias"};
      m[f + "linear2.weight"] = {h + "output.dense.weight"};
      m[f + "linear2.bias"] = {h + "output.dense.bias"};
      m[f + "norm.weight"] = {ln(h + "output.LayerNorm", true)};
      m[f + "norm.bias"] = {ln(h + "output.LayerNorm", false)};
    }
    return m;
  }

  // What an encoder does not use: the pooler, task heads, position-id buffers.
  static bool ignorable(const std::string& name) {
    return name.rfind("pooler.", 0) == 0 || name.rfind("cls.", 0) == 0 ||
           name == "embeddings.position_ids";
  }

  Config config;

private:
  int64_t layers_ = 0;
};

// Llama (and the checkpoints that share its layout: RMSNorm, SwiGLU, grouped-query attention,
// rotary embeddings in the rotate-half convention, no biases, an untied head by default).
// The rotary layer is the rope plugin's: without it loaded, the folder is refused by name.
// Llama and the decoders that differ from it only in fields of config.json: Qwen2 (biases on
// q, k and v), Qwen3 (q and k RMS-normalised per head before the rotation), Mistral (a sliding
// attention window), Gemma and Gemma 2, Phi-3 (fused qkv and gate-up projections), and Llama's
// own attention_bias, mlp_bias and rope scaling (Llama 3.1/3.2's "llama3", "linear", YaRN,
// and Phi-3.5's and Phi-4's LongRoPE up to their original context).
class Llama {
public:
  static constexpr const char* kRotary = "rope.RotaryQKVLinear";

  Llama(const ConfigRegistry& reg, const std::string& dir, const std::string& type) {
    std::string cfg_path = dir + "/config.json";
    nlohmann::json j = read_json(cfg_path);
    layers_ = int_field(j, cfg_path, "num_hidden_layers");
    const int64_t dim = int_field(j, cfg_path, "hidden_size");
    const int64_t heads = int_field(j, cfg_path, "num_attention_heads");
    const int64_t kv_heads = int_field(j, cfg_path, "num_key_value_heads", heads);
    const int64_t head_dim = int_field(j, cfg_path, "head_dim", dim % heads ? 0 : dim / heads);
    if (dim % heads && !j.contains("head_dim"))
      throw std::invalid_argument(cfg_path + ": hidden_size " + std::to_string(dim) +
                                  " is not a multiple of num_attention_heads " +
                                  std::to_string(heads) + " (and no head_dim)");
    if (heads % kv_heads)
      throw std::invalid_argument(cfg_path + ": num_attention_heads " + std::to_string(heads) +
                                  " is not a multiple of num_key_value_heads " +
                                  std::to_string(kv_heads));
    const bool gemma3 = type == "gemma3_text";
    gemma_ = type == "gemma" || type == "gemma2" || gemma3;
    fused_ = type == "phi3"; // one qkv_proj, one gate_up_proj
    sandwich_ = type == "gemma2" || gemma3;
    // Gemma's MLP: GeGLU with the tanh GELU (hidden_activation, which transformers prefers to
    // hidden_act); the others SwiGLU.
    std::string act = string_field(j, cfg_path, gemma_ ? "hidden_activation" : "hidden_act", "");
    if (act.empty())
      act = string_field(j, cfg_path, "hidden_act", gemma_ ? "gelu_pytorch_tanh" : "silu");
    std::string ffn_act;
    if (act == "silu")
      ffn_act = "silu";
    else if (gemma_ && (act == "gelu_pytorch_tanh" || act == "gelu_tanh"))
      ffn_act = "gelu_tanh";
    else if (gemma_ && act == "gelu")
      ffn_act = "gelu";
    else
      throw std::invalid_argument(cfg_path + ": hidden_act '" + act + "' is not supported (" +
                                  (gemma_ ? "gelu_pytorch_tanh, gelu, silu" : "silu") + ")");
    // Qwen2 always has biases on q, k and v (none on o); Llama's attention_bias puts them on
    // all four projections.
    const bool attention_bias = bool_field(j, cfg_path, "attention_bias");
    qkv_bias_ = type == "qwen2" || attention_bias;
    o_bias_ = type != "qwen2" && attention_bias;
    qk_norm_ = type == "qwen3" || gemma3;
    mlp_bias_ = bool_field(j, cfg_path, "mlp_bias");
    const int64_t window = sliding_layers(j, cfg_path, type);
    // transformers 5 writes the partial rotary factor inside rope_parameters.
    const bool in_rope = j.contains("rope_parameters") && j["rope_parameters"].is_object() &&
                         j["rope_parameters"].contains("partial_rotary_factor");
    double factor =
        float_field(in_rope ? j["rope_parameters"] : j, cfg_path, "partial_rotary_factor", 1.0);
    auto rotary_dim = static_cast<int64_t>(static_cast<double>(head_dim) * factor);
    if (factor <= 0 || factor > 1 || rotary_dim % 2)
      throw std::invalid_argument(cfg_path + ": partial_rotary_factor " + std::to_string(factor) +
                                  " gives an odd or empty rotary width");
    tied_ = bool_field(j, cfg_path, "tie_word_embeddings");
    const double eps = float_field(j, cfg_path, "rms_norm_eps", 1e-6);
    if (!reg.contains(kRotary))
      throw std::invalid_argument(cfg_path + ": a " + type + " model needs the layer '" +
                                  std::string(kRotary) +
                                  "' (plugin not found: the rope plugin is not loaded)");
    Config rotary = reg.make(kRotary);
    if (qk_norm_)
      rotary.set("input_linear", reg.make("std.QKNormQKVLinear"))
          .set("input_linear.eps", eps)
          .set("input_linear.input_linear", reg.make("std.QKVLinear"))
          .set("input_linear.input_linear.bias", qkv_bias_);
    else
      rotary.set("input_linear", reg.make(fused_ ? "std.FusedQKVLinear" : "std.QKVLinear"))
          .set("input_linear.bias", qkv_bias_);
    rotary.set("convention", "rotate_half")
        .set("rotary_dim", rotary_dim == head_dim ? 0 : rotary_dim);
    // Gemma 3: its windowed layers' rotary table has a base of its own (rope_local_base_freq),
    // its global layers' the model's rope_theta and scaling.
    std::optional<nlohmann::json> local_rope, global_rope;
    if (gemma3) gemma3_ropes(j, cfg_path, local_rope, global_rope);
    const int64_t rope_limit = set_rope(
        rotary, "rotary.", gemma3 ? (window > 0 ? *local_rope : *global_rope) : j, cfg_path);
    config = reg.make("std.Decoder");
    const std::string a = "transformer.layer.self_attention.",
                      f = "transformer.layer.feed_forward.";
    config.set("vocab_size", int_field(j, cfg_path, "vocab_size"))
        .set("dim", dim)
        .set("max_positions", 0)
        .set("tied_lm_head", tied_)
        .set("embedding_scale", gemma_ ? std::sqrt(static_cast<double>(dim)) : 1.0)
        .set("transformer.num_layers", layers_)
        .set(a + "structure", "prenorm")
        .set(a + "norm", reg.make("std.RMSNorm"))
        .set(a + "norm.eps", eps)
        .set(a + "attention.num_heads", heads)
        .set(a + "attention.num_kv_heads", kv_heads)
        .set(a + "attention.per_head_dim", head_dim)
        .set(a + "attention.causal", true)
        .set(a + "attention.sliding_window", window)
        .set(a + "attention.output_bias", o_bias_)
        .set(a + "attention.qkv", rotary)
        .set(f + "hidden_dim", int_field(j, cfg_path, "intermediate_size"))
        .set(f + "activation", ffn_act)
        .set(f + "structure", "prenorm")
        .set(f + "norm", reg.make("std.RMSNorm"))
        .set(f + "norm.eps", eps)
        .set(f + "linear1.bias", mlp_bias_)
        .set(f + "linear1_gate", reg.make("std.Linear"))
        .set(f + "linear1_gate.bias", mlp_bias_)
        .set(f + "linear2.bias", mlp_bias_)
        .set("output_norm", reg.make("std.RMSNorm"))
        .set("output_norm.eps", eps);
    max_positions_ = int_field(j, cfg_path, "max_position_embeddings", 2048);
    if (rope_limit > 0) max_positions_ = std::min(max_positions_, rope_limit);
    if (sandwich_) gemma2(reg, j, cfg_path, eps);
    // Layers of both kinds: the windowed ones are `layer`, the others `alternate_layer`, the
    // same config without the window (and for Gemma 3 with the global rotary table).
    if (!full_layers_.empty()) {
      Config full = config.child("transformer.layer");
      full.set("self_attention.attention.sliding_window", int64_t{0});
      if (gemma3) set_rope(full, "self_attention.attention.qkv.rotary.", *global_rope, cfg_path);
      config.set("transformer.alternate_layer", std::move(full))
          .set("transformer.alternate_at", full_layers_);
    }
  }

  // metatune path -> checkpoint tensor (nn.Linear weights are [out, in] as ours).
  std::map<std::string, Source> mapping() const {
    std::map<std::string, Source> m = {
        {"token_weight", {"model.embed_tokens.weight"}},
        {"output_norm.weight", {"model.norm.weight", false, gemma_}}};
    if (!tied_) m["lm_head_weight"] = {"lm_head.weight"};
    for (int64_t i = 0; i < layers_; ++i) {
      const bool full =
          std::find(full_layers_.begin(), full_layers_.end(), i) != full_layers_.end();
      std::string p = (full ? "transformer.alternate_layer." : "transformer.layer.") +
                      std::to_string(i) + ".",
                  h = "model.layers." + std::to_string(i) + ".";
      std::string a = p + "self_attention.", f = p + "feed_forward.";
      m[a + "norm.weight"] = {h + "input_layernorm.weight", false, gemma_};
      const std::string qkv = a + "attention.qkv.input_linear.";
      if (qk_norm_) { // Gemma 3's scale by 1 + weight as its other norms
        m[qkv + "q_norm_weight"] = {h + "self_attn.q_norm.weight", false, gemma_};
        m[qkv + "k_norm_weight"] = {h + "self_attn.k_norm.weight", false, gemma_};
      }
      if (fused_) {
        m[qkv + "weight"] = {h + "self_attn.qkv_proj.weight"};
        if (qkv_bias_) m[qkv + "bias"] = {h + "self_attn.qkv_proj.bias"};
      }
      for (const std::string x : {"q", "k", "v"}) {
        if (fused_) break;
        const std::string ours = qkv + (qk_norm_ ? "input_linear." : "") + x,
                          theirs = h + "self_attn." + x;
        m[ours + "_weight"] = {theirs + "_proj.weight"};
        if (qkv_bias_) m[ours + "_bias"] = {theirs + "_proj.bias"};
      }
      m[a + "attention.o_weight"] = {h + "self_attn.o_proj.weight"};
      if (o_bias_) m[a + "attention.o_bias"] = {h + "self_attn.o_proj.bias"};
      if (sandwich_) {
        m[a + "post_norm.weight"] = {h + "post_attention_layernorm.weight", false, true};
        m[f + "norm.weight"] = {h + "pre_feedforward_layernorm.weight", false, true};
        m[f + "post_norm.weight"] = {h + "post_feedforward_layernorm.weight", false, true};
      } else {
        m[f + "norm.weight"] = {h + "post_attention_layernorm.weight", false, gemma_};
      }
      if (fused_) {
        m[f + "linear1_gate.weight"] = {h + "mlp.gate_up_proj.weight", false, false, 0, 2};
        m[f + "linear1.weight"] = {h + "mlp.gate_up_proj.weight", false, false, 1, 2};
        m[f + "linear2.weight"] = {h + "mlp.down_proj.weight"};
      }
      for (const auto& [ours, theirs] :
           {std::pair<std::string, std::string>{"linear1_gate", "gate_proj"},
            {"linear1", "up_proj"},
            {"linear2", "down_proj"}}) {
        if (fused_) break;
        m[f + ours + ".weight"] = {h + "mlp." + theirs + ".weight"};
        if (mlp_bias_) m[f + ours + ".bias"] = {h + "mlp." + theirs + ".bias"};
      }
    }
    return m;
  }

  // The rotary tables some exports keep as buffers; a tied head saved anyway.
  bool ignorable(const std::string& name) const {
    auto ends = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    return ends(".rotary_emb.inv_freq") || (tied_ && name == "lm_head.weight");
  }

  Config config;
  int64_t max_positions_ = 0;

private:
  // The rotary table's base and scaling: rope_theta and rope_scaling at the top of config.json
  // (transformers 4), or both in rope_parameters (transformers 5). Returns the longest sequence
  // the table is right for, 0 where it has no limit of its own: longrope's short factors hold
  // up to the original context (beyond it transformers switches to the long ones, per forward,
  // which one table cannot do).
  static int64_t set_rope(Config& cfg, const std::string& at, const nlohmann::json& j,
                          const std::string& cfg_path) {
    const nlohmann::json* rope = nullptr;
    std::string where = "rope_scaling";
    if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
      rope = &j["rope_parameters"];
      where = "rope_parameters";
    } else if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
      rope = &j["rope_scaling"];
    }
    if (rope && !rope->is_object())
      throw std::invalid_argument(cfg_path + ": " + where + " " + rope->dump() +
                                  " is not an object");
    double theta = float_field(j, cfg_path, "rope_theta", 10000.0);
    if (rope && rope->contains("rope_theta")) theta = number(*rope, cfg_path, where, "rope_theta");
    cfg.set(at + "theta", theta);
    if (!rope) {
      cfg.set(at + "scaling", "none");
      return 0;
    }
    std::string kind = string_field(*rope, cfg_path, "rope_type",
                                    string_field(*rope, cfg_path, "type", "default"));
    // "dynamic" (NTK) changes the base only for sequences past max_position_embeddings,
    // which is where the model stops here anyway.
    if (kind == "default" || kind == "dynamic") {
      cfg.set(at + "scaling", "none");
      return 0;
    }
    if (kind != "linear" && kind != "llama3" && kind != "yarn" && kind != "longrope")
      throw std::invalid_argument(cfg_path + ": " + where + " " + rope->dump() + ": rope type '" +
                                  kind +
                                  "' is not supported (default, linear, llama3, yarn, longrope, "
                                  "dynamic)");
    // The pretraining context, where transformers looks for it: the top of config.json first
    // (Phi-3 keeps it there), then the rope fields, then max_position_embeddings.
    const int64_t max_positions = int_field(j, cfg_path, "max_position_embeddings", 2048);
    const int64_t original = j.contains("original_max_position_embeddings")
                                 ? int_field(j, cfg_path, "original_max_position_embeddings")
                             : rope->contains("original_max_position_embeddings")
                                 ? static_cast<int64_t>(number(*rope, cfg_path, where,
                                                               "original_max_position_embeddings"))
                                 : max_positions;
    cfg.set(at + "scaling", kind);
    auto optional_number = [&](const char* key, const char* field) {
      if (rope->contains(key) && !(*rope)[key].is_null())
        cfg.set(at + field, number(*rope, cfg_path, where, key));
    };
    if (kind == "longrope") {
      // factor: the extension (max / original) unless given; it sets the attention factor.
      const double factor =
          rope->contains("factor") && !(*rope)["factor"].is_null()
              ? number(*rope, cfg_path, where, "factor")
              : static_cast<double>(max_positions) / static_cast<double>(original);
      cfg.set(at + "factor", std::max(1.0, factor))
          .set(at + "original_max_positions", original)
          .set(at + "factors", number_list(*rope, cfg_path, where, "short_factor"));
      optional_number("attention_factor", "attention_factor");
      return original;
    }
    cfg.set(at + "factor", number(*rope, cfg_path, where, "factor"));
    if (kind == "llama3")
      cfg.set(at + "low_freq_factor", number(*rope, cfg_path, where, "low_freq_factor"))
          .set(at + "high_freq_factor", number(*rope, cfg_path, where, "high_freq_factor"))
          .set(at + "original_max_positions", original);
    if (kind == "yarn") {
      cfg.set(at + "original_max_positions", original);
      // transformers takes `beta_fast or 32`: a 0 is the default too.
      for (const char* key :
           {"beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor"})
        if (rope->contains(key) && (*rope)[key].is_number() && (*rope)[key].get<double>() != 0)
          optional_number(key, key);
      if (rope->contains("truncate") && !(*rope)["truncate"].is_null()) {
        if (!(*rope)["truncate"].is_boolean())
          throw std::invalid_argument(cfg_path + ": " + where +
                                      " 'truncate' must be true or false");
        cfg.set(at + "truncate", (*rope)["truncate"].get<bool>());
      }
    }
    return 0;
  }

  static std::vector<double> number_list(const nlohmann::json& o, const std::string& cfg_path,
                                         const std::string& where, const char* key) {
    std::vector<double> out;
    if (o.contains(key) && o[key].is_array())
      for (const auto& x : o[key]) {
        if (!x.is_number()) break;
        out.push_back(x.get<double>());
      }
    if (out.empty() || out.size() != o[key].size())
      throw std::invalid_argument(cfg_path + ": " + where + " needs a list of numbers '" + key +
                                  "'");
    return out;
  }

  static double number(const nlohmann::json& o, const std::string& cfg_path,
                       const std::string& where, const char* key) {
    if (!o.contains(key) || !o[key].is_number())
      throw std::invalid_argument(cfg_path + ": " + where + " needs a number '" + key + "' (" +
                                  o.dump() + ")");
    return o[key].get<double>();
  }

  // The sliding window, 0 for none, and which layers do not have it (full_layers_): those
  // config.json's layer_types (transformers 5 writes it) calls "full_attention", else each
  // family's rule -- every layer of Mistral and Phi-3 windowed, Gemma 2's even ones, Qwen2's
  // and Qwen3's from max_window_layers on (and only with use_sliding_window).
  int64_t sliding_layers(const nlohmann::json& j, const std::string& cfg_path,
                         const std::string& type) {
    const bool qwen = type == "qwen2" || type == "qwen3";
    if (!j.contains("sliding_window") || j["sliding_window"].is_null()) return 0;
    if (type != "mistral" && type != "phi3" && type != "gemma2" && type != "gemma3_text" && !qwen)
      return 0;
    if (qwen && !bool_field(j, cfg_path, "use_sliding_window")) return 0;
    const int64_t window = int_field(j, cfg_path, "sliding_window");
    if (window <= 0) return 0;
    std::vector<bool> windowed(static_cast<size_t>(layers_), true);
    if (j.contains("layer_types") && !j["layer_types"].is_null()) {
      const nlohmann::json& t = j["layer_types"];
      if (!t.is_array() || t.size() != static_cast<size_t>(layers_))
        throw std::invalid_argument(cfg_path + ": layer_types is not a list of " +
                                    std::to_string(layers_) + " layer kinds");
      for (size_t i = 0; i < t.size(); ++i) {
        const std::string kind = t[i].is_string() ? t[i].get<std::string>() : t[i].dump();
        if (kind != "sliding_attention" && kind != "full_attention")
          throw std::invalid_argument(cfg_path + ": layer_types[" + std::to_string(i) + "] '" +
                                      kind +
                                      "' is not supported (sliding_attention, full_attention)");
        windowed[i] = kind == "sliding_attention";
      }
    } else if (type == "gemma2") {
      for (size_t i = 0; i < windowed.size(); ++i)
        windowed[i] = i % 2 == 0;
    } else if (type == "gemma3_text") { // every sliding_window_pattern-th layer global
      const int64_t pattern = int_field(j, cfg_path, "sliding_window_pattern", 6);
      for (size_t i = 0; i < windowed.size(); ++i)
        windowed[i] = (static_cast<int64_t>(i) + 1) % pattern != 0;
    } else if (qwen) {
      const int64_t first = int_field(j, cfg_path, "max_window_layers", 28);
      for (size_t i = 0; i < windowed.size(); ++i)
        windowed[i] = static_cast<int64_t>(i) >= first;
    }
    if (std::find(windowed.begin(), windowed.end(), true) == windowed.end()) return 0;
    for (size_t i = 0; i < windowed.size(); ++i)
      if (!windowed[i]) full_layers_.push_back(static_cast<int64_t>(i));
    return window;
  }

  // Gemma 3's two rotary tables as config.json documents of their own (set_rope reads them):
  // transformers 5 nests them in rope_parameters by layer kind; transformers 4 has the global
  // base in rope_theta (default 1e6) with rope_scaling, the local one in rope_local_base_freq
  // (default 10000) without scaling.
  static void gemma3_ropes(const nlohmann::json& j, const std::string& cfg_path,
                           std::optional<nlohmann::json>& local,
                           std::optional<nlohmann::json>& global) {
    local = j;
    global = j;
    const nlohmann::json* rp = j.contains("rope_parameters") && j["rope_parameters"].is_object()
                                   ? &j["rope_parameters"]
                                   : nullptr;
    if (rp && rp->contains("sliding_attention") && rp->contains("full_attention")) {
      (*local)["rope_parameters"] = (*rp)["sliding_attention"];
      (*global)["rope_parameters"] = (*rp)["full_attention"];
      if (!(*global)["rope_parameters"].contains("rope_theta"))
        (*global)["rope_parameters"]["rope_theta"] = 1e6;
      if (!(*local)["rope_parameters"].contains("rope_theta"))
        (*local)["rope_parameters"]["rope_theta"] = 1e4;
      return;
    }
    if (rp)
      throw std::invalid_argument(cfg_path + ": rope_parameters of a gemma3_text model has no "
                                             "\"sliding_attention\" and \"full_attention\"");
    (*global)["rope_theta"] = float_field(j, cfg_path, "rope_theta", 1e6);
    (*local)["rope_theta"] = float_field(j, cfg_path, "rope_local_base_freq", 1e4);
    local->erase("rope_scaling");
  }

  // Gemma 2: a norm after the attention and after the MLP too (sandwich), the scores scaled by
  // query_pre_attn_scalar^-1/2 and soft-capped, the logits soft-capped; its windowed and global
  // layers as sliding_layers() says.
  void gemma2(const ConfigRegistry& reg, const nlohmann::json& j, const std::string& cfg_path,
              double eps) {
    const std::string a = "transformer.layer.self_attention.",
                      f = "transformer.layer.feed_forward.";
    config.set(a + "post_norm", reg.make("std.RMSNorm"))
        .set(a + "post_norm.eps", eps)
        .set(f + "post_norm", reg.make("std.RMSNorm"))
        .set(f + "post_norm.eps", eps);
    const double scalar = float_field(j, cfg_path, "query_pre_attn_scalar", 0.0);
    if (scalar < 0)
      throw std::invalid_argument(cfg_path + ": query_pre_attn_scalar " + std::to_string(scalar) +
                                  " is negative");
    if (scalar > 0) config.set(a + "attention.scale", 1.0 / std::sqrt(scalar));
    config.set(a + "attention.logit_softcap", float_field(j, cfg_path, "attn_logit_softcapping", 0))
        .set("final_logit_softcap", float_field(j, cfg_path, "final_logit_softcapping", 0));
  }

  int64_t layers_ = 0;
  std::vector<int64_t> full_layers_; // layers without the sliding window, when others have it
  bool gemma_ = false, sandwich_ = false, fused_ = false;
  bool tied_ = false, qkv_bias_ = false, o_bias_ = false, mlp_bias_ = false, qk_norm_ = false;
};

// The parameter at `path` of shape `want` from the checkpoint's tensor `src`.
NDArray read_param(const SafetensorsShards& file, const std::string& prefix, const Source& src,
                   const std::string& path, const std::vector<int64_t>& want) {
  std::string name = prefix + src.name;
  const SafetensorsTensorInfo* info = file.find(name);
  if (!info)
    throw std::invalid_argument(file.path() + ": tensor '" + name + "' (for " + path +
                                ") is missing");
  std::vector<int64_t> stored = want;
  if (src.transpose) std::swap(stored[0], stored[1]);
  if (src.parts) stored[0] *= src.parts;
  if (info->shape != stored)
    throw std::invalid_argument(file.path_of(name) + ": tensor '" + name + "' is " +
                                shape_text(info->shape) + ", " + shape_text(stored) +
                                " expected (for " + path + ")");
  std::vector<float> v = file.to_f32(name);
  if (src.parts) {
    const auto block = static_cast<std::ptrdiff_t>(v.size() / static_cast<size_t>(src.parts));
    v = std::vector<float>(v.begin() + src.part * block, v.begin() + (src.part + 1) * block);
  }
  if (src.plus_one)
    for (float& x : v)
      x += 1.0f;
  NDArray out(DType::f32(), want);
  float* d = out.data_as<float>();
  if (!src.transpose) {
    std::copy(v.begin(), v.end(), d);
    return out;
  }
  const int64_t rows = stored[0], cols = stored[1]; // stored [in, out]; wanted [out, in]
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      d[c * rows + r] = v[r * cols + c];
  return out;
}

} // namespace

HfModel load_hf_checkpoint(const PluginHost& host, const std::string& dir) {
  std::string cfg_path = dir + "/config.json";
  nlohmann::json j = read_json(cfg_path);
  std::string type = string_field(j, cfg_path, "model_type", "");
  const bool llama_like = type == "llama" || type == "qwen2" || type == "qwen3" ||
                          type == "mistral" || type == "gemma" || type == "gemma2" ||
                          type == "gemma3_text" || type == "phi3";
  if (type != "gpt2" && type != "bert" && !llama_like)
    throw std::invalid_argument(cfg_path + ": model_type '" + type +
                                "' is not supported yet (supported: gpt2, bert, llama, qwen2, "
                                "qwen3, mistral, gemma, gemma2, gemma3_text, phi3)");
  ConfigRegistry layers = layer_config_registry(host);
  // The config first: its errors name config.json, before the weights are looked at.
  std::optional<Gpt2> gpt2;
  std::optional<Bert> bert;
  std::optional<Llama> llama;
  HfModel out;
  out.model_type = type;
  if (type == "gpt2")
    out.config = gpt2.emplace(layers, dir).config;
  else if (llama_like) {
    out.config = llama.emplace(layers, dir, type).config;
    out.max_positions = llama->max_positions_;
  } else
    out.config = bert.emplace(layers, dir).config;
  const SafetensorsShards file = SafetensorsShards::open(dir);
  std::string prefix;
  std::map<std::string, Source> mapping;
  std::function<bool(const std::string&)> ignorable;
  if (gpt2) {
    // Names may carry the module prefix of GPT2LMHeadModel.
    prefix = file.find("wte.weight") ? "" : "transformer.";
    mapping = gpt2->mapping();
    ignorable = Gpt2::ignorable;
  } else if (llama) {
    prefix = "";
    mapping = llama->mapping();
    ignorable = [&](const std::string& n) { return llama->ignorable(n); };
  } else {
    // BertModel saves without a prefix, the task models (BertForMaskedLM, ...) with "bert.";
    // their heads ("cls.") sit outside it.
    prefix = file.find("embeddings.word_embeddings.weight") ? "" : "bert.";
    mapping = bert->mapping(file, prefix);
    ignorable = Bert::ignorable;
  }
  // The parameters' shapes from the model itself: instantiated on a one-token input (the
  // shapes of parameters do not depend on the input's).
  te::Tensor probe = te::placeholder({1, 1}, DType::i32(), "ids");
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ModelParam& p : instantiate_model(host, out.config, {probe}).params)
    shapes[p.path] = p.shape;
  std::set<std::string> used;
  for (const auto& [path, src] : mapping) {
    auto it = shapes.find(path);
    if (it == shapes.end())
      throw std::logic_error("hf_checkpoint: no parameter '" + path + "' in the " + type +
                             " model (a bug in metatune's mapping)");
    out.params.emplace(path, read_param(file, prefix, src, path, it->second));
    used.insert(prefix + src.name);
  }
  if (out.params.size() != shapes.size())
    throw std::logic_error("hf_checkpoint: the " + type + " mapping covers " +
                           std::to_string(out.params.size()) + " of " +
                           std::to_string(shapes.size()) + " parameters (a bug in metatune)");
  std::string extra;
  for (const std::string& n : file.names())
    if (!used.count(n) && !ignorable(n) &&
        !ignorable(n.substr(!prefix.empty() && n.rfind(prefix, 0) == 0 ? prefix.size() : 0)))
      extra += (extra.empty() ? "" : ", ") + n;
  if (!extra.empty())
    throw std::invalid_argument(file.path() + ": tensors the model does not use: " + extra);
  return out;
}

} // namespace mt
