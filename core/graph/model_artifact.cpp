// Writing a model's ahead-of-time artifact (see model_artifact.h).
#include "core/graph/model_artifact.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/graph/memory_plan.h"
#include "core/model/safetensors_writer.h"
#include "core/plugin/plugin_components.h"

namespace mt {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json tensor_json(const te::Tensor& t) {
  return {{"name", t.name()}, {"dtype", to_string(t.dtype())}, {"shape", t.shape()}};
}

// Where each tensor a group reads or writes lives in the runtime: an input, a parameter, the
// arena of the memory plan, or an output.
class BufferPlaces {
public:
  BufferPlaces(const ModelGraph& g, const MemoryPlan& plan) {
    for (size_t i = 0; i < g.inputs.size(); ++i)
      places_[g.inputs[i].get()] = {{"input", i}};
    for (const ModelParam& p : g.params)
      places_[p.placeholder.get()] = {{"param", p.path}};
    for (const PlannedBuffer& b : plan.buffers)
      places_[b.tensor] = {{"arena", b.offset}};
    for (size_t i = 0; i < g.outputs.size(); ++i)
      places_[g.outputs[i].get()] = {{"output", i}};
  }
  json of(const te::Tensor& t) const {
    auto it = places_.find(t.get());
    if (it == places_.end())
      throw std::logic_error("model artifact: tensor '" + t.name() +
                             "' has no buffer (a bug in metatune)");
    json j = it->second;
    size_t bytes = static_cast<size_t>(t.dtype().bytes());
    for (int64_t d : t.shape())
      bytes *= static_cast<size_t>(d);
    j["bytes"] = bytes;
    return j;
  }

private:
  std::map<const te::TensorNode*, json> places_;
};

void write_text(const fs::path& path, const std::string& text) {
  fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

size_t write_weights(const ModelArtifactSource& src, const fs::path& path) {
  std::vector<SafetensorsTensor> tensors;
  size_t bytes = 0;
  for (const ModelParam& p : src.graph->params) {
    auto it = src.params->find(p.path);
    if (it == src.params->end())
      throw std::invalid_argument("parameter '" + p.path + "' has no value");
    const NDArray& a = it->second;
    if (a.dtype() != DType::f32() || a.shape() != p.shape)
      throw std::invalid_argument("parameter '" + p.path + "': the artifact takes f32 " +
                                  "weights of the model's shape, this one is " + a.shape_string());
    tensors.push_back({p.path, SafetensorsDtype::F32, p.shape,
                       std::span(static_cast<const std::byte*>(a.data()), a.nbytes())});
    bytes += a.nbytes();
  }
  write_safetensors(path.string(), tensors, {{"format", "metatune-model-weights"}});
  return bytes;
}

} // namespace

std::string kernel_symbol(size_t t, const std::string& group_name) {
  std::string s = "mt_" + std::to_string(t) + "_";
  for (char c : group_name)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

ModelArtifactSummary write_model_artifact(const ModelArtifactSource& src, const std::string& dir) {
  const std::vector<GraphTask>& tasks = *src.tasks;
  const std::vector<FusedGroup>& groups = *src.groups;
  if (src.kernels->size() != tasks.size())
    throw std::invalid_argument("model artifact: " + std::to_string(tasks.size()) + " tasks, " +
                                std::to_string(src.kernels->size()) + " kernels");
  fs::create_directories(dir);
  const fs::path root(dir);

  std::vector<Function> funcs;
  std::vector<std::string> symbols;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const TaskKernel& k = (*src.kernels)[t];
    if (k.component != src.target->info().name)
      throw std::invalid_argument("task '" + tasks[t].name + "' runs " + k.label() +
                                  ", not a kernel of " + src.target->info().name +
                                  " (the target that exports the library)");
    funcs.push_back(k.function);
    symbols.push_back(kernel_symbol(t, groups.at(tasks[t].groups.at(0)).name));
  }
  json library = json::parse(src.target->export_library(funcs, symbols, (root / "kernels.so")));

  MemoryPlan plan = plan_memory(groups, src.graph->outputs);
  plan.verify();
  BufferPlaces places(*src.graph, plan);
  std::vector<size_t> task_of = task_of_group(tasks, groups.size());
  json jgroups = json::array();
  for (size_t g = 0; g < groups.size(); ++g) {
    json args = json::array();
    for (const te::Tensor& t : groups[g].inputs)
      args.push_back(places.of(t));
    for (const te::Tensor& t : groups[g].outputs)
      args.push_back(places.of(t));
    jgroups.push_back({{"name", groups[g].name}, {"kernel", symbols[task_of[g]]}, {"args", args}});
  }
  json model;
  model["format"] = "metatune-model";
  model["version"] = 1;
  model["model"] = src.model;
  model["kernels"] = "kernels.so";
  model["weights"] = "weights.safetensors";
  model["inputs"] = json::array();
  for (const te::Tensor& t : src.graph->inputs)
    model["inputs"].push_back(tensor_json(t));
  model["outputs"] = json::array();
  for (const te::Tensor& t : src.graph->outputs)
    model["outputs"].push_back(tensor_json(t));
  model["arena_bytes"] = plan.arena_bytes;
  model["arena_alignment"] = MemoryPlan::kAlignment;
  model["groups"] = jgroups;
  model["library"] = library;

  ModelArtifactSummary s;
  s.weight_bytes = write_weights(src, root / "weights.safetensors");
  write_text(root / "model.json", model.dump(1) + "\n");
  s.kernels = tasks.size();
  s.groups = groups.size();
  s.arena_bytes = plan.arena_bytes;
  return s;
}

} // namespace mt
