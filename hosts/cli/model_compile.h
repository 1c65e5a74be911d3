// `metatune model compile ... --out DIR`: a model's ahead-of-time artifact
// (core/graph/model_artifact.h) -- its kernels chosen as `model run` chooses them, exported
// by the tuning target as one shared library, with the graph and the weights -- for an
// application to run through runtime/ without LLVM or plugins. With --generation, a decoder's
// generation artifact instead (core/graph/generation_artifact.h): a prefill per prompt bucket
// and a decode step per cache capacity, for runtime's CompiledGenerator. With --embedding, a
// sentence encoder's (core/graph/embedding_artifact.h), for runtime's CompiledEmbedder.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "hosts/cli/model_source.h"

namespace mt::cli {

struct ModelCompileOptions {
  ModelSourceOptions source;
  std::string db, target = "llvm", implementations, out, log_level;
  std::string fpmath = "f32"; // --fpmath: bf16 kernels (the weights packed in bf16), as model run
  std::vector<std::string> libraries{"onednn.cpu"};
  bool quiet = false;
  bool generation = false;
  bool embedding = false; // --embedding: a sentence encoder's artifact (embedding_artifact.h)
  std::vector<int64_t> prompt_buckets{32, 64, 128, 256, 512},
      capacities{64, 128, 256, 512, 1024, 2048};
  int64_t extend_chunk = -1; // -1: the smallest prompt bucket; 0: no extend builds
};

void add_model_compile_options(CLI::App* cmd, ModelCompileOptions& o);

int compile_model_artifact(const ModelCompileOptions& o);

} // namespace mt::cli
