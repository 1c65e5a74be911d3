// The ahead-of-time artifact of a model: a folder that an application runs through the small
// runtime in runtime/ (no LLVM, no plugins, no metatune core):
//   kernels.so           every distinct kernel of the model, one exported symbol per task,
//                        written by the tuning target's export_library (ABI 1.6)
//   model.json           the run as the runtime needs it: inputs and outputs (name, dtype,
//                        shape), the arena size of the static memory plan, and per group in
//                        run order its kernel symbol and argument buffers (an input, a
//                        parameter by name, an arena offset, an output); the kernel library's
//                        descriptor (calling convention, runtime services, params per kernel)
//   weights.safetensors  the parameters as the model takes them, named by parameter path
// The groups run exactly what ModelExecutor runs: the same kernels in the same order on the
// same memory plan.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/graph/artifact_graph.h" // kernel_symbol
#include "core/graph/fusion.h"
#include "core/graph/graph_tasks.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/model_graph.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PluginTarget;

struct ModelArtifactSource {
  std::string model; // the config's kind
  const ModelGraph* graph = nullptr;
  const std::vector<FusedGroup>* groups = nullptr;
  const std::vector<GraphTask>* tasks = nullptr;
  const std::vector<TaskKernel>* kernels = nullptr; // per task, all built by `target`
  const std::map<std::string, NDArray>* params = nullptr;
  const PluginTarget* target = nullptr; // exports the kernels
};

struct ModelArtifactSummary {
  size_t kernels = 0, groups = 0;
  size_t arena_bytes = 0, weight_bytes = 0;
};

// Writes the folder (created if missing; the three files replaced). Throws
// std::invalid_argument for a kernel of another target, a parameter without a value or not
// f32, and passes on the target's PluginError (MT_ERROR_UNSUPPORTED: it cannot export).
ModelArtifactSummary write_model_artifact(const ModelArtifactSource& src, const std::string& dir);

} // namespace mt
