// The ahead-of-time artifact of a decoder for text generation: a folder that an application
// runs through the small runtime (runtime/include/metatune/runtime/compiled_generator.h; no
// LLVM, no plugins, no metatune core):
//   kernels.so           every distinct kernel of every graph below, one symbol per task
//                        (the tasks the graphs share -- the linears and norms of one token in
//                        every decode step -- exported once)
//   generation.json      the vocabulary, the longest sequence, the states kept across steps
//                        (path, dtype, row width), and the graphs: a prefill per prompt bucket
//                        (its last-position input, its states' rows) and a decode step per
//                        cache capacity (its positions input, its states' rows and caches, and
//                        the rows written into the caches before the kernel that reads them),
//                        and an extend build per capacity (a chunk of tokens against the cache:
//                        a long prompt in chunks, a conversation's next turn after the prefix
//                        it shares), each as model.json's run of groups (artifact_graph.h)
//   weights.safetensors  the parameters, named by path, shared by every graph
// The graphs run what the Generator (generator.h) runs: the same kernels in the same order on
// the same memory plans.
#pragma once

#include <map>
#include <string>

#include "core/graph/generator.h"
#include "core/graph/model_artifact.h"

namespace mt {

class PluginTarget;

struct GenerationArtifactSource {
  std::string model; // the config's kind
  // Its graphs compiled (Generator::compile_all), every kernel built by `target`.
  const Generator* generator = nullptr;
  const std::map<std::string, NDArray>* params = nullptr;
  const PluginTarget* target = nullptr; // exports the kernels
};

// Writes the folder (created if missing; the three files replaced). Throws as
// write_model_artifact.
ModelArtifactSummary write_generation_artifact(const GenerationArtifactSource& src,
                                               const std::string& dir);

} // namespace mt
