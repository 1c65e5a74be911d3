// Sentence embeddings from an ahead-of-time artifact: the folder `metatune model compile
// --embedding --hf DIR --out OUT` writes (kernels.so, embedding.json, weights.safetensors and
// the checkpoint's tokenizer files) holds a sentence encoder at each sequence bucket, at the
// batch size and at batch 1, sharing one kernel library and the weights; this runs them and
// pools the last hidden state as the checkpoint's sentence-transformers modules say (mean,
// CLS, max, ...; then its Dense modules; normalized or not), with neither LLVM nor
// metatune's core or plugins in the process:
//
//   mt::rt::CompiledEmbedder e = mt::rt::CompiledEmbedder::load("minilm-embed");
//   mt::rt::Tensor v = e.embed({{101, 1037, 2158, 102}, {101, 7592, 102}});  // f32[2, 384]
//
// The ids are the tokenizer's, special tokens included ([CLS] ... [SEP]), each text at most
// max_length() of them (the application truncates: the artifact's tokenizer() file says with
// what; lower_case() says whether the text is lower-cased first). Texts run longest first in
// batches of batch() padded into the smallest bucket that holds the batch's longest, what is
// left of a bucket one by one, as `metatune model embed` runs them. Errors throw
// mt::rt::Error naming the file, the graph and the thing (as CompiledModel's); a text that
// fits no bucket names the longest.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "metatune/runtime/compiled_model.h"

namespace mt::rt {

class CompiledEmbedder {
public:
  static CompiledEmbedder load(const std::string& dir, const LoadOptions& options = {});
  CompiledEmbedder(CompiledEmbedder&&) noexcept;
  CompiledEmbedder& operator=(CompiledEmbedder&&) noexcept;
  ~CompiledEmbedder();

  // One row per text, dimension() floats each, in the order given.
  Tensor embed(const std::vector<std::vector<int32_t>>& texts);

  int64_t dimension() const;  // floats per embedding (the hidden width times the pooling modes,
                              // or the last Dense module's out)
  int64_t max_length() const; // tokens a text may have, special tokens included
  int64_t vocab() const;
  int64_t batch() const;
  const std::vector<int64_t>& buckets() const;
  const std::vector<std::string>& pooling() const; // "mean", "cls", ...
  bool normalize() const;
  bool lower_case() const;
  // The tokenizer file in the folder ("DIR/tokenizer.json" or "DIR/vocab.txt"); "" if none.
  const std::string& tokenizer() const;
  const std::string& model() const;
  size_t num_kernels() const;

  struct State; // opaque: the implementation's

private:
  explicit CompiledEmbedder(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

} // namespace mt::rt
