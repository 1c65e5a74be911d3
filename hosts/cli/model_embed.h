// `metatune model embed --hf DIR (--text T ... | --input FILE)`: sentence embeddings from an
// encoder checkpoint, as sentence-transformers' encode() gives them -- each text tokenized
// (truncated at the folder's max_seq_length), run through the encoder in batches padded into
// sequence buckets, pooled over its real tokens and normalized as the folder's modules.json
// says (core/graph/sentence_embedding.h). Prints each text's embedding (its first values and
// length), the cosine similarities of a few texts, and the throughput; --save-output writes
// the embeddings [texts, dim] as .npy. Kernels as `model run` chooses them (--db,
// --implementations); `model tune --hf DIR --buckets ... --batch B` tunes the buckets it runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace mt::cli {

struct ModelEmbedOptions {
  std::string hf, tokenizer, input, save_output, report_json, log_level;
  std::vector<std::string> texts, plugin_paths;
  std::string db, target = "llvm", implementations, fpmath = "f32";
  std::vector<std::string> libraries{"onednn.cpu"};
  // Empty: the powers of two from 16 that the texts need, the last one the longest allowed.
  std::vector<int64_t> buckets;
  int64_t batch = 1;
  int repeats = 1; // timed passes over all the texts after the first: the median is reported
  bool quiet = false;
};

void add_model_embed_options(CLI::App* cmd, ModelEmbedOptions& o);

int embed_texts(const ModelEmbedOptions& o);

} // namespace mt::cli
