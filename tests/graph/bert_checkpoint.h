// A Hugging Face BERT checkpoint folder written by a test (random weights in HF's names and
// layouts, as BertForMaskedLM saves them) and its float64 forward computed straight from those
// arrays: the reference of the BERT loader's tests and of sentence embeddings.
#pragma once

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph_test_util.h"
#include "hf_tensors.h"

namespace mt::graph_test {

// A BERT folder as BertForMaskedLM saves it: "bert."-prefixed encoder tensors, nn.Linear
// weights [out, in], the pooler and an MLM head the encoder does not use.
struct BertCheckpoint : HfTensors {
  std::filesystem::path dir;
  int64_t V = 31, P = 12, D = 16, L = 2, H = 4, F = 24;

  explicit BertCheckpoint(const std::string& tag = "bert") : HfTensors(cosine, 0.29, 3) {
    dir =
        std::filesystem::temp_directory_path() / ("mt_hf_" + tag + "_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json")
        << nlohmann::json{{"model_type", "bert"},     {"vocab_size", V},
                          {"hidden_size", D},         {"num_hidden_layers", L},
                          {"num_attention_heads", H}, {"intermediate_size", F},
                          {"hidden_act", "gelu"},     {"max_position_embeddings", P},
                          {"type_vocab_size", 2},     {"layer_norm_eps", 1e-12}}
               .dump(2);
    const std::string e = "bert.embeddings.";
    add(e + "word_embeddings.weight", {V, D}, 0.2, 0);
    add(e + "position_embeddings.weight", {P, D}, 0.1, 0);
    add(e + "token_type_embeddings.weight", {2, D}, 0.1, 0);
    add(e + "LayerNorm.weight", {D}, 0.1, 1), add(e + "LayerNorm.bias", {D}, 0.05, 0);
    for (int64_t l = 0; l < L; ++l) {
      std::string h = "bert.encoder.layer." + std::to_string(l) + ".";
      for (const char* x : {"query", "key", "value"}) {
        add(h + "attention.self." + x + ".weight", {D, D}, 0.2, 0);
        add(h + "attention.self." + x + ".bias", {D}, 0.02, 0);
      }
      add(h + "attention.output.dense.weight", {D, D}, 0.15, 0);
      add(h + "attention.output.dense.bias", {D}, 0.02, 0);
      add(h + "attention.output.LayerNorm.weight", {D}, 0.1, 1);
      add(h + "attention.output.LayerNorm.bias", {D}, 0.05, 0);
      add(h + "intermediate.dense.weight", {F, D}, 0.15, 0);
      add(h + "intermediate.dense.bias", {F}, 0.02, 0);
      add(h + "output.dense.weight", {D, F}, 0.15, 0);
      add(h + "output.dense.bias", {D}, 0.02, 0);
      add(h + "output.LayerNorm.weight", {D}, 0.1, 1);
      add(h + "output.LayerNorm.bias", {D}, 0.05, 0);
    }
    add("bert.pooler.dense.weight", {D, D}, 0.1, 0), add("bert.pooler.dense.bias", {D}, 0, 0);
    add("cls.predictions.bias", {V}, 0.01, 0);
    write(dir / "model.safetensors");
  }
  ~BertCheckpoint() { std::filesystem::remove_all(dir); }

  // `types`: Hugging Face's token_type_ids (empty: all 0).
  Matrix forward(const std::vector<int32_t>& ids, const Matrix& mask,
                 const std::vector<int32_t>& types = {}) const {
    const size_t S = ids.size(), d = D, f = F;
    const std::string e = "bert.embeddings.";
    Matrix w = m(e + "word_embeddings.weight"), p = m(e + "position_embeddings.weight"),
           t = m(e + "token_type_embeddings.weight"), h(S * d);
    for (size_t i = 0; i < S; ++i)
      for (size_t c = 0; c < d; ++c)
        h[i * d + c] = w[ids[i] * d + c] + p[i * d + c] + t[(types.empty() ? 0 : types[i]) * d + c];
    h = layer_norm_ref(h, m(e + "LayerNorm.weight"), m(e + "LayerNorm.bias"), S, d, 1e-12);
    for (int64_t l = 0; l < L; ++l) {
      std::string pre = "bert.encoder.layer." + std::to_string(l) + ".";
      auto lin = [&](const std::string& n, const Matrix& x, size_t in, size_t out) {
        Matrix b = m(pre + n + ".bias");
        return linear_ref(x, m(pre + n + ".weight"), &b, S, in, out);
      };
      Matrix q = lin("attention.self.query", h, d, d), k = lin("attention.self.key", h, d, d),
             v = lin("attention.self.value", h, d, d);
      Matrix ob = m(pre + "attention.output.dense.bias");
      Dims dims{1, S, d, static_cast<size_t>(H), static_cast<size_t>(H), d / H};
      Matrix a =
          attention_ref(dims, q, k, v, m(pre + "attention.output.dense.weight"), &ob, false, &mask);
      for (size_t i = 0; i < h.size(); ++i)
        h[i] += a[i];
      h = layer_norm_ref(h, m(pre + "attention.output.LayerNorm.weight"),
                         m(pre + "attention.output.LayerNorm.bias"), S, d, 1e-12);
      Matrix u = lin("intermediate.dense", h, d, f);
      for (double& x : u)
        x = gelu(x);
      Matrix y = lin("output.dense", u, f, d);
      for (size_t i = 0; i < h.size(); ++i)
        h[i] += y[i];
      h = layer_norm_ref(h, m(pre + "output.LayerNorm.weight"), m(pre + "output.LayerNorm.bias"), S,
                         d, 1e-12);
    }
    return h;
  }
};

// modules.json as sentence-transformers writes it: the encoder, mean pooling, Normalize.
inline const char* kSentenceModules = R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])";

// The tiny BERT folder as sentence-transformers saves a model: a WordPiece vocabulary, the
// modules, mean pooling and Normalize, max_seq_length 7.
struct SentenceBert : BertCheckpoint {
  explicit SentenceBert(const std::string& tag = "sentence_bert") : BertCheckpoint(tag) {
    std::ofstream vocab(dir / "vocab.txt");
    for (const char* w : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",   "sat",
                          "on",    "mat",   "a",     "dog",   "ran",    "in",  "park",  "quick",
                          "brown", "fox",   "jumps", "over",  "lazy",   "big", "small", "red",
                          "blue",  "green", "house", "tree",  "sky",    "sun", "moon"})
      vocab << w << "\n";
    std::ofstream(dir / "modules.json") << kSentenceModules;
    std::filesystem::create_directories(dir / "1_Pooling");
    std::ofstream(dir / "1_Pooling" / "config.json")
        << R"({"word_embedding_dimension": 16, "pooling_mode_mean_tokens": true})";
    std::ofstream(dir / "sentence_bert_config.json") << R"({"max_seq_length": 7})";
  }

  // A Dense module between the pooling and Normalize, as sentence-transformers saves one
  // (2_Dense/config.json and model.safetensors): `out` floats, tanh, with a bias.
  void add_dense(int64_t out) {
    dense_out = out;
    HfTensors t(sine, 0.37, 11);
    t.add("linear.weight", {out, D}, 0.4, 0);
    t.add("linear.bias", {out}, 0.1, 0.05);
    dense = t;
    std::filesystem::create_directories(dir / "2_Dense");
    std::ofstream(dir / "2_Dense" / "config.json") << nlohmann::json{
        {"in_features", D},
        {"out_features", out},
        {"bias", true},
        {"activation_function",
         "torch.nn.modules.activation.Tanh"}}.dump();
    t.write(dir / "2_Dense" / "model.safetensors");
    std::ofstream(dir / "modules.json") << R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
  {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"}
])";
  }
  int64_t dense_out = 0; // 0: no Dense module
  HfTensors dense{sine, 0, 0};

  // The float64 forward of `ids` alone, mean-pooled, through the Dense module (tanh of the
  // weights times the vector plus the bias) if there is one, and normalized.
  std::vector<double> embedding(const std::vector<int32_t>& ids) const {
    const size_t S = ids.size(), d = static_cast<size_t>(D);
    Matrix h = forward(ids, Matrix(S, 1.0));
    std::vector<double> v(d, 0.0);
    for (size_t s = 0; s < S; ++s)
      for (size_t c = 0; c < d; ++c)
        v[c] += h[s * d + c] / double(S);
    if (dense_out > 0) {
      const Matrix w = dense.m("linear.weight"), b = dense.m("linear.bias");
      std::vector<double> y(static_cast<size_t>(dense_out));
      for (size_t o = 0; o < y.size(); ++o) {
        double sum = b[o];
        for (size_t c = 0; c < d; ++c)
          sum += w[o * d + c] * v[c];
        y[o] = std::tanh(sum);
      }
      v = std::move(y);
    }
    double norm = 0;
    for (double x : v)
      norm += x * x;
    for (double& x : v)
      x /= std::sqrt(norm);
    return v;
  }
};

} // namespace mt::graph_test
