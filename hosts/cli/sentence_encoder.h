// A sentence encoder as `model embed` and `model compile --embedding` load it: the folder's
// sentence-transformers pipeline (core/graph/sentence_embedding.h), the encoder it names
// loaded, its hidden width checked against the pooling's, and the longest text it takes.
#pragma once

#include <cstdint>
#include <string>

#include "core/graph/sentence_embedding.h"
#include "hosts/cli/model_source.h"

namespace mt::cli {

struct SentenceEncoder {
  SentenceEmbedding pipeline;
  LoadedModel model;
  std::string dir;        // the encoder's folder (config.json, weights, tokenizer)
  int64_t hidden = 0;     // the last hidden state's width
  int64_t max_length = 0; // the folder's max_seq_length, at most the model's positions
};

// `source` gives the plugin paths and batch; its hf is replaced by the encoder's folder under
// `folder`. std::invalid_argument naming the folder for a model that is not an encoder.
SentenceEncoder load_sentence_encoder(const std::string& folder, ModelSourceOptions source);

} // namespace mt::cli
