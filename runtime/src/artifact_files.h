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
#include "program.h"
#include "weights_file.h"

namespace mt::rt {

struct ArtifactFiles {
  std::unique_ptr<KernelLibrary> library;
  std::unique_ptr<WeightsFile> weights;
  ProgramContext context; // points into `library`, `weights` and the JSON given to open()

  // `m`: model.json or generation.json (its "library", "kernels", "weights"), kept alive by
  // the caller while the context is used; `path` names it in messages.
  static std::unique_ptr<ArtifactFiles> open(const nlohmann::json& m, const std::string& dir,
                                             const std::string& path);
};

// The threads the options ask for: one per hardware thread by default.
int thread_count(const LoadOptions& options);

} // namespace mt::rt
