// Loading Hugging Face checkpoint folders (see hf_checkpoint.h).
#include "core/graph/hf_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/model/safetensors_file.h"

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

// One metatune parameter from one checkpoint tensor: its shape there, and whether it is stored
// transposed (GPT-2's Conv1D keeps [in, out]).
struct Source {
  std::string name;
  bool transpose = false;
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
    double eps = j.value("layer_norm_epsilon", 1e-5);
    std::string act = j.value("activation_function", std::string("gelu_new"));
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

// The parameter at `path` of shape `want` from the checkpoint's tensor `src`.
NDArray read_param(const SafetensorsFile& file, const std::string& prefix, const Source& src,
                   const std::string& path, const std::vector<int64_t>& want) {
  std::string name = prefix + src.name;
  const SafetensorsTensorInfo* info = file.find(name);
  if (!info)
    throw std::invalid_argument(file.path() + ": tensor '" + name + "' (for " + path +
                                ") is missing");
  std::vector<int64_t> stored = want;
  if (src.transpose) std::swap(stored[0], stored[1]);
  if (info->shape != stored)
    throw std::invalid_argument(file.path() + ": tensor '" + name + "' is " +
                                shape_text(info->shape) + ", " + shape_text(stored) +
                                " expected (for " + path + ")");
  std::vector<float> v = file.to_f32(name);
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

HfModel load_hf_checkpoint(const ConfigRegistry& layers, const std::string& dir) {
  std::string cfg_path = dir + "/config.json";
  nlohmann::json j = read_json(cfg_path);
  std::string type = j.value("model_type", std::string());
  if (type != "gpt2")
    throw std::invalid_argument(cfg_path + ": model_type '" + type +
                                "' is not supported yet (supported: gpt2)");
  Gpt2 model(layers, dir);
  HfModel out;
  out.model_type = type;
  out.config = model.config;
  std::string weights = dir + "/model.safetensors";
  if (!std::filesystem::exists(weights))
    throw std::invalid_argument(weights + ": missing (the checkpoint's weights)");
  SafetensorsFile file = SafetensorsFile::open(weights);
  // Names may carry the module prefix of GPT2LMHeadModel.
  std::string prefix = file.find("wte.weight") ? "" : "transformer.";
  // Shapes from the config tree itself: the model is instantiated later, so they are
  // derived here from the same numbers.
  Config r = out.config;
  r.resolve();
  const int64_t V = r.get<int64_t>("vocab_size"), D = r.get<int64_t>("dim"),
                P = r.get<int64_t>("max_positions"),
                F = r.get<int64_t>("transformer.layer.feed_forward.hidden_dim");
  std::set<std::string> used;
  for (const auto& [path, src] : model.mapping()) {
    std::vector<int64_t> want;
    if (path == "token_weight")
      want = {V, D};
    else if (path == "position_weight")
      want = {P, D};
    else if (path.ends_with("qkv.weight"))
      want = {3 * D, D};
    else if (path.ends_with("qkv.bias"))
      want = {3 * D};
    else if (path.ends_with("o_weight"))
      want = {D, D};
    else if (path.ends_with("linear1.weight"))
      want = {F, D};
    else if (path.ends_with("linear1.bias"))
      want = {F};
    else if (path.ends_with("linear2.weight"))
      want = {D, F};
    else
      want = {D}; // norms, o_bias, linear2.bias
    out.params.emplace(path, read_param(file, prefix, src, path, want));
    used.insert(prefix + src.name);
  }
  std::string extra;
  for (const std::string& n : file.names())
    if (!used.count(n) && !Gpt2::ignorable(n.substr(n.rfind(prefix, 0) == 0 ? prefix.size() : 0)))
      extra += (extra.empty() ? "" : ", ") + n;
  if (!extra.empty())
    throw std::invalid_argument(weights + ": tensors the model does not use: " + extra);
  return out;
}

} // namespace mt
