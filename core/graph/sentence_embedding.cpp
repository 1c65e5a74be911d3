#include "core/graph/sentence_embedding.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/model/safetensors_file.h"
#include "metatune/runtime/sentence_dense.h"
#include "metatune/runtime/sentence_pooling.h"

namespace mt {

namespace fs = std::filesystem;

namespace {

rt::SentencePooling runtime_pooling(SentencePooling p) {
  switch (p) {
  case SentencePooling::Cls:
    return rt::SentencePooling::Cls;
  case SentencePooling::Max:
    return rt::SentencePooling::Max;
  case SentencePooling::Mean:
    return rt::SentencePooling::Mean;
  case SentencePooling::MeanSqrtLength:
    return rt::SentencePooling::MeanSqrtLength;
  case SentencePooling::WeightedMean:
    return rt::SentencePooling::WeightedMean;
  case SentencePooling::LastToken:
    return rt::SentencePooling::LastToken;
  }
  return rt::SentencePooling::Mean;
}

} // namespace

const char* to_string(SentencePooling p) {
  return rt::pooling_name(runtime_pooling(p));
}

namespace {

// A JSON file of the folder, or std::invalid_argument naming it.
nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path.string() + ": cannot be read");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// The class a modules.json entry names, without its Python package: "Pooling" for
// "sentence_transformers.models.Pooling" (and for the longer module paths of newer releases).
std::string module_class(const std::string& type) {
  size_t dot = type.rfind('.');
  return dot == std::string::npos ? type : type.substr(dot + 1);
}

// The enabled modes of a Pooling config, in sentence-transformers' order of concatenation.
class PoolingConfig {
public:
  PoolingConfig(const nlohmann::json& j, std::string file) : j_(j), file_(std::move(file)) {
    if (!j_.is_object()) throw std::invalid_argument(file_ + ": not a JSON object");
  }

  std::vector<SentencePooling> modes() const {
    if (j_.contains("pooling_mode") && j_["pooling_mode"].is_string()) return named_mode();
    std::vector<SentencePooling> out;
    if (flag("pooling_mode_cls_token")) out.push_back(SentencePooling::Cls);
    if (flag("pooling_mode_max_tokens")) out.push_back(SentencePooling::Max);
    if (flag("pooling_mode_mean_tokens")) out.push_back(SentencePooling::Mean);
    if (flag("pooling_mode_mean_sqrt_len_tokens")) out.push_back(SentencePooling::MeanSqrtLength);
    if (flag("pooling_mode_weightedmean_tokens")) out.push_back(SentencePooling::WeightedMean);
    if (flag("pooling_mode_lasttoken")) out.push_back(SentencePooling::LastToken);
    if (out.empty())
      throw std::invalid_argument(file_ + ": no pooling mode is enabled (pooling_mode_*_tokens)");
    return out;
  }

  int64_t dimension() const {
    auto it = j_.find("word_embedding_dimension");
    if (it == j_.end()) return 0;
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      throw std::invalid_argument(file_ + ": word_embedding_dimension must be a positive integer");
    return it->get<int64_t>();
  }

private:
  bool flag(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end() || it->is_null()) return false;
    if (!it->is_boolean())
      throw std::invalid_argument(file_ + ": " + name + " must be true or false");
    return it->get<bool>();
  }

  std::vector<SentencePooling> named_mode() const {
    const std::string m = j_["pooling_mode"].get<std::string>();
    if (m == "cls") return {SentencePooling::Cls};
    if (m == "max") return {SentencePooling::Max};
    if (m == "mean") return {SentencePooling::Mean};
    if (m == "mean_sqrt_len_tokens") return {SentencePooling::MeanSqrtLength};
    if (m == "weightedmean") return {SentencePooling::WeightedMean};
    if (m == "lasttoken") return {SentencePooling::LastToken};
    throw std::invalid_argument(file_ + ": pooling_mode '" + m +
                                "' is not supported (cls, max, mean, mean_sqrt_len_tokens, "
                                "weightedmean, lasttoken)");
  }

  const nlohmann::json& j_;
  std::string file_;
};

// The Transformer module's sentence_bert_config.json: truncation and lower-casing.
void read_transformer_config(const fs::path& dir, SentenceEmbedding& e) {
  const fs::path path = dir / "sentence_bert_config.json";
  if (!fs::exists(path)) return;
  nlohmann::json j = read_json(path);
  if (!j.is_object()) throw std::invalid_argument(path.string() + ": not a JSON object");
  if (auto it = j.find("max_seq_length"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      throw std::invalid_argument(path.string() + ": max_seq_length must be a positive integer");
    e.max_seq_length = it->get<int64_t>();
  }
  if (auto it = j.find("do_lower_case"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean())
      throw std::invalid_argument(path.string() + ": do_lower_case must be true or false");
    e.lower_case = it->get<bool>();
  }
}

// A Dense module's folder: config.json (in_features, out_features, bias, activation_function
// as a Python class path) and model.safetensors (linear.weight [out, in], linear.bias [out]).
SentenceDense read_dense(const fs::path& dir) {
  SentenceDense d;
  d.path = dir.string();
  const fs::path cfg = dir / "config.json";
  nlohmann::json j = read_json(cfg);
  const std::string where = cfg.string();
  if (!j.is_object()) throw std::invalid_argument(where + ": not a JSON object");
  auto size = [&](const char* name) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() <= 0)
      throw std::invalid_argument(where + ": " + name + " must be a positive integer");
    return it->get<int64_t>();
  };
  d.in = size("in_features");
  d.out = size("out_features");
  bool bias = true;
  if (auto it = j.find("bias"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) throw std::invalid_argument(where + ": bias must be true or false");
    bias = it->get<bool>();
  }
  // torch.nn.modules.activation.Tanh (the module's default), ...: the class decides.
  std::string act = "torch.nn.modules.activation.Tanh";
  if (auto it = j.find("activation_function"); it != j.end() && !it->is_null()) {
    if (!it->is_string())
      throw std::invalid_argument(where + ": activation_function must be a class name");
    act = it->get<std::string>();
  }
  static const std::pair<const char*, const char*> kActivations[] = {{"Identity", "identity"},
                                                                     {"Tanh", "tanh"},
                                                                     {"ReLU", "relu"},
                                                                     {"Sigmoid", "sigmoid"},
                                                                     {"GELU", "gelu"}};
  const std::string cls = module_class(act);
  for (const auto& [torch_name, name] : kActivations)
    if (cls == torch_name) d.activation = name;
  if (d.activation.empty())
    throw std::invalid_argument(where + ": activation_function '" + act +
                                "' is not supported (Identity, Tanh, ReLU, Sigmoid, GELU)");
  const fs::path weights = dir / "model.safetensors";
  if (!fs::exists(weights)) {
    if (fs::exists(dir / "pytorch_model.bin"))
      throw std::invalid_argument((dir / "pytorch_model.bin").string() +
                                  ": a pickled PyTorch file, which metatune does not read; save "
                                  "the model with safe_serialization (model.safetensors)");
    throw std::invalid_argument(weights.string() + ": missing (the Dense module's weights)");
  }
  // SafetensorsError is an std::invalid_argument naming the file and the tensor.
  SafetensorsFile f = SafetensorsFile::open(weights.string());
  auto tensor = [&](const char* name, std::vector<int64_t> shape) {
    const SafetensorsTensorInfo& t = f.info(name);
    if (t.shape != shape) {
      std::string want;
      for (int64_t s : shape)
        want += (want.empty() ? "" : ", ") + std::to_string(s);
      throw std::invalid_argument(weights.string() + ": " + name + " is not [" + want +
                                  "] (config.json's sizes)");
    }
    return f.to_f32(name);
  };
  d.weight = tensor("linear.weight", {d.out, d.in});
  if (bias) d.bias = tensor("linear.bias", {d.out});
  return d;
}

} // namespace

SentenceEmbedding SentenceEmbedding::read(const std::string& dir) {
  SentenceEmbedding e;
  const fs::path root(dir), modules_path = root / "modules.json";
  if (!fs::exists(modules_path)) {
    read_transformer_config(root, e);
    return e;
  }
  e.from_modules = true;
  nlohmann::json modules = read_json(modules_path);
  const std::string where = modules_path.string();
  if (!modules.is_array() || modules.empty())
    throw std::invalid_argument(where + ": not a list of modules");
  // Transformer, Pooling, then optionally Dense modules and Normalize: the pipelines this
  // runs after the encoder.
  enum { kEncoder, kPooling, kNormalize, kDone } next = kEncoder;
  for (size_t i = 0; i < modules.size(); ++i) {
    const nlohmann::json& m = modules[i];
    const std::string at = where + ": module " + std::to_string(i);
    if (!m.is_object() || !m.contains("type") || !m["type"].is_string())
      throw std::invalid_argument(at + " has no type");
    const std::string type = m["type"].get<std::string>(), cls = module_class(type);
    const std::string path =
        m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
    if (path.find("..") != std::string::npos || (!path.empty() && path.front() == '/'))
      throw std::invalid_argument(at + ": path '" + path + "' leaves the folder");
    if (cls == "Transformer" && next == kEncoder) {
      e.encoder_path = path;
      read_transformer_config(root / path, e);
      next = kPooling;
    } else if (cls == "Pooling" && next == kPooling) {
      const fs::path cfg = root / path / "config.json";
      e.pooling_config = cfg.string();
      nlohmann::json j = read_json(cfg);
      PoolingConfig pc(j, cfg.string());
      e.poolings = pc.modes();
      e.word_embedding_dimension = pc.dimension();
      next = kNormalize;
    } else if (cls == "Dense" && next == kNormalize) {
      SentenceDense d = read_dense(root / path);
      if (!e.dense.empty() && e.dense.back().out != d.in)
        throw std::invalid_argument(d.path + "/config.json: in_features " + std::to_string(d.in) +
                                    " is not the previous Dense module's out_features " +
                                    std::to_string(e.dense.back().out));
      e.dense.push_back(std::move(d));
    } else if (cls == "Normalize" && next == kNormalize) {
      e.normalize = true;
      next = kDone;
    } else {
      static const char* expected[] = {"Transformer", "Pooling", "Dense or Normalize", "nothing"};
      throw std::invalid_argument(at + " is " + type + " where " + expected[next] +
                                  " was expected (supported: Transformer, Pooling, then "
                                  "optionally Dense modules and Normalize)");
    }
  }
  if (next == kEncoder || next == kPooling)
    throw std::invalid_argument(where + ": no " + (next == kEncoder ? "Transformer" : "Pooling") +
                                " module");
  return e;
}

std::string SentenceEmbedding::encoder_dir(const std::string& dir) const {
  return encoder_path.empty() ? dir : (fs::path(dir) / encoder_path).string();
}

void SentenceEmbedding::check_dimension(int64_t hidden) const {
  if (word_embedding_dimension != 0 && word_embedding_dimension != hidden)
    throw std::invalid_argument(pooling_config + ": word_embedding_dimension " +
                                std::to_string(word_embedding_dimension) +
                                " is not the model's hidden size " + std::to_string(hidden));
  if (!dense.empty() && dense.front().in != pooled_dimension(hidden))
    throw std::invalid_argument(dense.front().path + "/config.json: in_features " +
                                std::to_string(dense.front().in) + " is not the pooled size " +
                                std::to_string(pooled_dimension(hidden)));
}

NDArray SentenceEmbedding::pool(const NDArray& hidden, const NDArray& mask) const {
  if (hidden.ndim() != 3 || mask.ndim() != 2 || mask.shape()[0] != hidden.shape()[0] ||
      mask.shape()[1] != hidden.shape()[1] || hidden.dtype() != DType::f32() ||
      mask.dtype() != DType::f32())
    throw std::invalid_argument("sentence pooling: hidden state " + hidden.shape_string() +
                                " and mask " + mask.shape_string() +
                                " are not f32 [B, S, H] and [B, S]");
  const int64_t B = hidden.shape()[0], S = hidden.shape()[1], H = hidden.shape()[2];
  check_dimension(H);
  std::vector<rt::SentencePooling> modes;
  for (SentencePooling p : poolings)
    modes.push_back(runtime_pooling(p));
  std::vector<rt::DenseLayerView> layers;
  for (const SentenceDense& d : dense) {
    rt::DenseLayerView v{d.in, d.out, rt::DenseActivation::Tanh, d.weight.data(),
                         d.bias.empty() ? nullptr : d.bias.data()};
    if (!rt::activation_from_name(d.activation, &v.activation))
      throw std::logic_error(d.path + ": activation '" + d.activation + "' has no runtime form");
    layers.push_back(v);
  }
  std::vector<float> pooled;
  const int64_t empty = rt::embed_sentences(hidden.data_as<float>(), mask.data_as<float>(), B, S, H,
                                            modes, layers, normalize, &pooled);
  if (empty >= 0)
    throw std::invalid_argument("sentence pooling: row " + std::to_string(empty) +
                                " of the mask has no token");
  NDArray out(DType::f32(), {B, dimension(H)});
  std::copy(pooled.begin(), pooled.end(), out.data_as<float>());
  return out;
}

std::string SentenceEmbedding::describe() const {
  std::ostringstream s;
  for (size_t k = 0; k < poolings.size(); ++k)
    s << (k ? "+" : "") << to_string(poolings[k]);
  s << " pooling";
  for (const SentenceDense& d : dense)
    s << ", Dense " << d.in << " -> " << d.out << " " << d.activation;
  s << (normalize ? ", normalized" : ", not normalized");
  if (max_seq_length > 0) s << ", at most " << max_seq_length << " tokens";
  if (lower_case) s << ", lower-cased";
  s << (from_modules ? " (modules.json)" : " (no modules.json: a plain encoder's default)");
  return s.str();
}

} // namespace mt
