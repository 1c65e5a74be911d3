// The ahead-of-time artifact of a sentence encoder: a folder that an application runs through
// the small runtime (runtime/include/metatune/runtime/compiled_embedder.h; no LLVM, no plugins,
// no metatune core) to turn token ids into sentence embeddings, as `metatune model embed` does:
//   kernels.so           every distinct kernel of every graph below, exported once
//   embedding.json       the vocabulary, the longest text, the hidden width, the pooling
//                        (sentence_embedding.h: modes, normalize, ASCII lower-casing of the
//                        text before tokenizing), the batch size, and the graphs: per sequence
//                        bucket, the encoder at the batch size and (when it is above 1) at
//                        batch 1 for what is left of a bucket -- ids and padding mask in, the
//                        last hidden state out -- each as model.json's run of groups
//   weights.safetensors  the parameters, named by path, shared by every graph
//   tokenizer.json / vocab.txt  the checkpoint's tokenizer files, copied (the runtime takes
//                        ids; an application tokenizes with them)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/graph/model_artifact.h"
#include "core/graph/sentence_embedding.h"
#include "core/graph/sequence_buckets.h"

namespace mt {

class PluginTarget;

struct EmbeddingArtifactSource {
  std::string model; // the config's kind
  const SentenceEmbedding* pipeline = nullptr;
  // The buckets at the batch size, and at batch 1 (null when the batch size is 1); every
  // kernel built by `target`.
  const BucketedModel* batched = nullptr;
  const BucketedModel* single = nullptr;
  int64_t batch = 1, vocab = 0, hidden = 0, max_length = 0;
  const std::map<std::string, NDArray>* params = nullptr;
  const PluginTarget* target = nullptr; // exports the kernels
  std::string tokenizer_dir;            // tokenizer.json and vocab.txt copied from here
};

// Writes the folder (created if missing; its files replaced). Throws as write_model_artifact.
ModelArtifactSummary write_embedding_artifact(const EmbeddingArtifactSource& src,
                                              const std::string& dir);

} // namespace mt
