// Hugging Face checkpoint folders (config.json + model.safetensors) as metatune models: the
// config.json becomes a config tree of the standard layers, the tensors are mapped by name onto
// its parameters (transposed where Hugging Face stores them the other way round). GPT-2
// (model_type "gpt2": std.Decoder), the BERT family ("bert": std.Encoder) and Llama ("llama":
// std.Decoder with RMSNorm, SwiGLU, grouped-query attention and the rope plugin's rotary QKV
// layer; its attention_bias, mlp_bias and "linear" or "llama3" rope scaling) with the decoders
// that differ from it in config fields only, Qwen2 ("qwen2": biases on q, k, v), Qwen3
// ("qwen3": per-head RMS norms of q and k) and Mistral ("mistral": a sliding attention window);
// every other model_type is refused by name.
#pragma once

#include <map>
#include <string>

#include "core/model/config.h"
#include "core/runtime/ndarray.h"

namespace mt {

struct HfModel {
  std::string model_type;                // config.json's
  Config config;                         // of the standard layers (plugins/layers)
  std::map<std::string, NDArray> params; // by metatune path, f32
  // The longest sequence the checkpoint was made for, where its positions are not a table of
  // the model's (Llama's max_position_embeddings); 0 otherwise.
  int64_t max_positions = 0;
};

// std::invalid_argument naming the file and the field or tensor: a missing or malformed
// config.json, an unsupported model_type, a missing tensor, one of the wrong shape, a tensor
// the model does not use (except GPT-2's attention-mask buffers and tied lm_head, BERT's
// pooler and task heads). The layers are those `host` loaded (plugins/layers).
class PluginHost;
HfModel load_hf_checkpoint(const PluginHost& host, const std::string& dir);

} // namespace mt
