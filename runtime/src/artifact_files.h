// What every artifact folder shares, whichever graphs it holds: kernels.so (checked to use the
// calling convention and runtime services this runtime provides) and weights.safetensors,
// opened from the names the folder's JSON gives, and the library descriptor's kernels by
// symbol -- the context its graphs (program.h) are loaded against.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kernel_library.h"
#include "metatune/runtime/compiled_model.h"
#include "packed_weights.h"
#include "program.h"
#include "thread_pool.h"
#include "weights_file.h"

namespace mt::rt {

// Throws, naming `path`, unless `m` says it is an artifact of `format` ("metatune-model",
// "metatune-generation", "metatune-embedding") in the one version this runtime reads.
void check_artifact_header(const nlohmann::json& m, const std::string& path,
                           const std::string& format);

struct ArtifactFiles {
  std::unique_ptr<KernelLibrary> library;
  std::unique_ptr<WeightsFile> weights;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<PackedWeights> packed;
  // Points into the members above and the JSON given to open().
  ProgramContext context;

  // `m`: model.json or generation.json (its "library", "kernels", "weights"), kept alive by
  // the caller while the context is used; `path` names it in messages. The kernels' threads
  // as `options` asks.
  static std::unique_ptr<ArtifactFiles> open(const nlohmann::json& m, const std::string& dir,
                                             const std::string& path, const LoadOptions& options);
};

} // namespace mt::rt
