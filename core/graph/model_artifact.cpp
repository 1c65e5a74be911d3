// Writing a model's ahead-of-time artifact (see model_artifact.h).
#include "core/graph/model_artifact.h"

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/graph/artifact_graph.h"
#include "core/plugin/plugin_components.h"

namespace mt {

ModelArtifactSummary write_model_artifact(const ModelArtifactSource& src, const std::string& dir) {
  const std::vector<GraphTask>& tasks = *src.tasks;
  const std::vector<FusedGroup>& groups = *src.groups;
  if (src.kernels->size() != tasks.size())
    throw std::invalid_argument("model artifact: " + std::to_string(tasks.size()) + " tasks, " +
                                std::to_string(src.kernels->size()) + " kernels");
  std::filesystem::create_directories(dir);
  const std::filesystem::path root(dir);

  std::vector<std::string> names, symbols;
  std::vector<std::vector<uint8_t>> weights;
  for (size_t t = 0; t < tasks.size(); ++t) {
    names.push_back(tasks[t].name);
    symbols.push_back(kernel_symbol(t, groups.at(tasks[t].groups.at(0)).name));
    weights.push_back(weight_args(*src.graph, groups.at(tasks[t].groups.at(0))));
    for (size_t g : tasks[t].groups)
      keep_common_weights(weights.back(), weight_args(*src.graph, groups.at(g)));
  }
  nlohmann::json library = export_artifact_kernels(*src.target, *src.kernels, names, symbols,
                                                   weights, (root / "kernels.so").string());
  std::vector<std::string> group_symbols;
  for (size_t t : task_of_group(tasks, groups.size()))
    group_symbols.push_back(symbols[t]);
  ModelArtifactSummary s;
  nlohmann::json graph =
      artifact_graph_json(*src.graph, groups, group_symbols, nullptr, &s.arena_bytes);
  nlohmann::json model = artifact_header("metatune-model", src.model);
  model.update(graph);
  model["library"] = library;

  s.weight_bytes =
      write_artifact_weights(*src.graph, *src.params, (root / "weights.safetensors").string());
  write_artifact_text((root / "model.json").string(), model.dump(1) + "\n");
  s.kernels = tasks.size();
  s.groups = groups.size();
  return s;
}

} // namespace mt
