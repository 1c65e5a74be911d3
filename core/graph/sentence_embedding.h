// What a sentence-transformers folder does after its encoder: its modules.json names a
// Transformer, a Pooling module (1_Pooling/config.json: which pooling of the last hidden state
// over the real tokens -- mean, CLS, max, mean / sqrt(length), position-weighted mean, last
// token, several of them concatenated), optionally Dense modules (a linear layer and an
// activation on the pooled vector: 2_Dense/config.json and model.safetensors) and a Normalize
// module (unit length); sentence_bert_config.json gives the length the text is truncated at
// and whether it is lower-cased first. Read once from the folder, then applied to every batch
// the encoder returns, as the Python package's encode() does (docs/models.md, "Sentence
// embeddings").
//
// A folder without modules.json is a plain encoder: mean pooling, not normalized, the
// model's own length (what sentence-transformers builds for a plain Hugging Face folder).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/runtime/ndarray.h"

namespace mt {

// As the runtime's (runtime/include/metatune/runtime/sentence_pooling.h), whose pooling
// pool() calls: one implementation for `model embed` and compiled embedders.
enum class SentencePooling { Cls, Max, Mean, MeanSqrtLength, WeightedMean, LastToken };

const char* to_string(SentencePooling p); // "mean", "mean_sqrt_len", ...

// A Dense module: y = activation(weight x + bias), torch's Linear layout.
struct SentenceDense {
  int64_t in = 0, out = 0;
  std::string activation;    // the runtime's name: identity, tanh, relu, sigmoid, gelu
  std::vector<float> weight; // [out, in]
  std::vector<float> bias;   // [out], or empty: none
  std::string path;          // its folder (for messages)
};

struct SentenceEmbedding {
  // In sentence-transformers' order of concatenation (cls, max, mean, mean_sqrt_len,
  // weightedmean, lasttoken); never empty.
  std::vector<SentencePooling> poolings{SentencePooling::Mean};
  std::vector<SentenceDense> dense; // after the pooling, in order
  bool normalize = false;
  int64_t max_seq_length = 0; // 0: not set by the folder (the model's own limit applies)
  bool lower_case = false;    // sentence_bert_config.json's do_lower_case
  bool from_modules = false;  // read from modules.json (else the plain-encoder default)
  // The Transformer module's folder under the one read ("": the folder itself; older
  // releases saved it in 0_Transformer/): where config.json and the weights are.
  std::string encoder_path;
  // The folder of the encoder's config.json and weights under `dir` (the one read).
  std::string encoder_dir(const std::string& dir) const;

  // std::invalid_argument naming the file and the field: malformed JSON, a module the
  // pipeline cannot run after the encoder (a second Transformer, ...), a pooling mode it does
  // not know, none enabled, a Dense module's activation it does not know or weights it cannot
  // read (pytorch_model.bin), Dense sizes that do not chain, a pooling dimension that is not
  // `hidden` (checked by check_dimension).
  static SentenceEmbedding read(const std::string& dir);

  // `hidden` f32 [B, S, H], `mask` f32 [B, S] (1 = token, 0 = padding at the end of a row;
  // at least one token a row) -> f32 [B, dimension(H)].
  NDArray pool(const NDArray& hidden, const NDArray& mask) const;
  int64_t pooled_dimension(int64_t hidden) const {
    return hidden * static_cast<int64_t>(poolings.size());
  }
  int64_t dimension(int64_t hidden) const {
    return dense.empty() ? pooled_dimension(hidden) : dense.back().out;
  }
  // "mean pooling, normalized, at most 256 tokens (modules.json)"
  std::string describe() const;

  // The pooling config's word_embedding_dimension, where it gave one (0: not given).
  int64_t word_embedding_dimension = 0;
  std::string pooling_config; // the file it came from (for errors)
  // std::invalid_argument naming the pooling config when its dimension is not the model's, or
  // the first Dense module when it does not take the pooled vector's size.
  void check_dimension(int64_t hidden) const;
};

} // namespace mt
