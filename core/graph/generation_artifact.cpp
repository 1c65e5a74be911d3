// Writing a decoder's generation artifact (see generation_artifact.h).
#include "core/graph/generation_artifact.h"

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/graph/artifact_graph.h"
#include "core/plugin/plugin_components.h"

namespace mt {

namespace {

using nlohmann::json;

// The index in `g.states` of the state at `path`.
const ModelState& state_at(const CompiledGraph& g, const std::string& path,
                           const std::string& name) {
  for (const ModelState& s : g.graph.states)
    if (s.path == path) return s;
  throw std::invalid_argument("generation artifact: graph '" + name + "' keeps no state '" + path +
                              "'");
}

} // namespace

ModelArtifactSummary write_generation_artifact(const GenerationArtifactSource& src,
                                               const std::string& dir) {
  const Generator& gen = *src.generator;
  const std::vector<const CompiledGraph*> prefills = gen.prefill_graphs(),
                                          decodes = gen.decode_graphs();
  if (prefills.empty() || decodes.empty())
    throw std::invalid_argument("generation artifact: compile the generator's graphs first");
  std::filesystem::create_directories(dir);
  const std::filesystem::path root(dir);

  json states = json::array();
  for (const ModelState& s : prefills.front()->graph.states)
    states.push_back(
        {{"path", s.path}, {"dtype", to_string(s.rows.dtype())}, {"width", s.rows.shape()[2]}});
  ModelArtifactSummary summary;
  ArtifactKernels kernels;
  // A decode step or extend build reads the caches (`decode`); a prefill or extend build keeps
  // one position's logits at a run-time row.
  auto graph_json = [&](const CompiledGraph& g, const std::string& name, bool decode) {
    json j =
        artifact_graph_json(g.graph, g.groups, kernels.add(g.graph, g.groups, g.tasks, g.kernels),
                            decode ? &g.exec->state_writes() : nullptr);
    j["name"] = name;
    json rows = json::array(), caches = json::array(), written = json::array();
    for (const json& st : states) {
      const ModelState& s = state_at(g, st["path"].get<std::string>(), name);
      rows.push_back(s.output);
      caches.push_back(s.input);
      written.push_back(s.written_in_place && s.cache);
    }
    j["state_rows"] = rows;
    if (decode) {
      j["capacity"] = g.graph.mode.capacity;
      j["state_caches"] = caches;
      j["state_written"] = written;
    }
    j["last_position_input"] =
        g.graph.last_position_input == SIZE_MAX ? json(nullptr) : json(g.graph.last_position_input);
    summary.groups += g.groups.size();
    summary.arena_bytes = std::max(summary.arena_bytes, j["arena_bytes"].get<size_t>());
    return j;
  };
  json jprefills = json::array(), jdecodes = json::array(), jextends = json::array();
  for (const CompiledGraph* g : prefills)
    jprefills.push_back(
        graph_json(*g, "prefill@" + std::to_string(g->graph.inputs[0].shape()[1]), false));
  for (const CompiledGraph* g : decodes)
    jdecodes.push_back(graph_json(*g, "decode@" + std::to_string(g->graph.mode.capacity), true));
  for (const CompiledGraph* g : gen.extend_graphs())
    jextends.push_back(graph_json(*g,
                                  "extend@" + std::to_string(g->graph.inputs[0].shape()[1]) + ":" +
                                      std::to_string(g->graph.mode.capacity),
                                  true));

  json m = artifact_header("metatune-generation", src.model);
  m["vocab"] = gen.vocab();
  m["max_length"] = gen.max_length();
  m["states"] = states;
  m["prefills"] = jprefills;
  m["decodes"] = jdecodes;
  m["extends"] = jextends;
  m["library"] = kernels.export_to(*src.target, (root / "kernels.so").string());
  summary.weight_bytes = write_artifact_weights(prefills.front()->graph, *src.params,
                                                (root / "weights.safetensors").string());
  write_artifact_text((root / "generation.json").string(), m.dump(1) + "\n");
  summary.kernels = kernels.size();
  return summary;
}

} // namespace mt
