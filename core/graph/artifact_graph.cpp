// The pieces of an ahead-of-time artifact (see artifact_graph.h).
#include "core/graph/artifact_graph.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/graph/memory_plan.h"
#include "core/ir/structural.h"
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

json writes_json(const ModelGraph& g, const std::vector<size_t>& states) {
  json out = json::array();
  for (size_t s : states)
    out.push_back({{"rows", g.states[s].output}, {"cache", g.states[s].input}});
  return out;
}

} // namespace

std::string kernel_symbol(size_t t, const std::string& group_name) {
  std::string s = "mt_" + std::to_string(t) + "_";
  for (char c : group_name)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

json artifact_graph_json(const ModelGraph& g, const std::vector<FusedGroup>& groups,
                         const std::vector<std::string>& group_symbols,
                         const std::vector<std::vector<size_t>>* state_writes,
                         size_t* arena_bytes) {
  MemoryPlan plan = plan_memory(groups, g.outputs);
  plan.verify();
  BufferPlaces places(g, plan);
  json jgroups = json::array();
  for (size_t i = 0; i < groups.size(); ++i) {
    json args = json::array();
    for (const te::Tensor& t : groups[i].inputs)
      args.push_back(places.of(t));
    for (const te::Tensor& t : groups[i].outputs)
      args.push_back(places.of(t));
    json group = {{"name", groups[i].name}, {"kernel", group_symbols.at(i)}, {"args", args}};
    if (state_writes && !state_writes->at(i).empty())
      group["state_writes"] = writes_json(g, state_writes->at(i));
    jgroups.push_back(std::move(group));
  }
  json j;
  j["inputs"] = json::array();
  for (const te::Tensor& t : g.inputs)
    j["inputs"].push_back(tensor_json(t));
  j["outputs"] = json::array();
  for (const te::Tensor& t : g.outputs)
    j["outputs"].push_back(tensor_json(t));
  j["arena_bytes"] = plan.arena_bytes;
  j["arena_alignment"] = MemoryPlan::kAlignment;
  j["groups"] = jgroups;
  if (state_writes) {
    j["positions_input"] = g.positions_input;
    j["state_writes_after"] = writes_json(g, state_writes->at(groups.size()));
  }
  if (arena_bytes) *arena_bytes = plan.arena_bytes;
  return j;
}

std::vector<uint8_t> weight_args(const ModelGraph& g, const FusedGroup& group) {
  std::vector<uint8_t> flags;
  auto is_param = [&](const te::Tensor& t) {
    for (const ModelParam& p : g.params)
      if (p.placeholder.get() == t.get()) return true;
    return false;
  };
  for (const te::Tensor& t : group.inputs)
    flags.push_back(is_param(t));
  for (size_t i = 0; i < group.outputs.size(); ++i)
    flags.push_back(0);
  return flags;
}

void keep_common_weights(std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = a[i] && i < b.size() && b[i];
}

json export_artifact_kernels(const PluginTarget& target, const std::vector<TaskKernel>& kernels,
                             const std::vector<std::string>& names,
                             const std::vector<std::string>& symbols,
                             const std::vector<std::vector<uint8_t>>& weights,
                             const std::string& path) {
  std::vector<Function> funcs;
  for (size_t t = 0; t < kernels.size(); ++t) {
    if (kernels[t].component != target.info().name)
      throw std::invalid_argument("task '" + names.at(t) + "' runs " + kernels[t].label() +
                                  ", not a kernel of " + target.info().name +
                                  " (the target that exports the library)");
    funcs.push_back(kernels[t].function);
  }
  return json::parse(target.export_library(funcs, symbols, path, &weights));
}

size_t write_artifact_weights(const ModelGraph& g, const std::map<std::string, NDArray>& params,
                              const std::string& path) {
  std::vector<SafetensorsTensor> tensors;
  size_t bytes = 0;
  for (const ModelParam& p : g.params) {
    auto it = params.find(p.path);
    if (it == params.end()) throw std::invalid_argument("parameter '" + p.path + "' has no value");
    const NDArray& a = it->second;
    if (a.dtype() != DType::f32() || a.shape() != p.shape)
      throw std::invalid_argument("parameter '" + p.path + "': the artifact takes f32 " +
                                  "weights of the model's shape, this one is " + a.shape_string());
    tensors.push_back({p.path, SafetensorsDtype::F32, p.shape,
                       std::span(static_cast<const std::byte*>(a.data()), a.nbytes())});
    bytes += a.nbytes();
  }
  write_safetensors(path, tensors, {{"format", "metatune-model-weights"}});
  return bytes;
}

nlohmann::json artifact_header(const std::string& format, const std::string& model) {
  nlohmann::json m;
  m["format"] = format;
  m["version"] = 1;
  m["model"] = model;
  m["kernels"] = "kernels.so";
  m["weights"] = "weights.safetensors";
  return m;
}

void write_artifact_text(const std::string& path, const std::string& text) {
  const fs::path tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

std::vector<std::string> ArtifactKernels::add(const ModelGraph& graph,
                                              const std::vector<FusedGroup>& groups,
                                              const std::vector<GraphTask>& tasks,
                                              const std::vector<TaskKernel>& kernels) {
  std::vector<std::string> task_symbols;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const GraphTask& task = tasks[t];
    size_t k = 0;
    while (k < tasks_.size() &&
           !(tasks_[k].hash == task.hash && structural_equal(tasks_[k].workload, task.workload)))
      ++k;
    if (k == tasks_.size()) {
      tasks_.push_back(task);
      kernels_.push_back(kernels.at(t));
      names_.push_back(task.name);
      symbols_.push_back(kernel_symbol(k, groups.at(task.groups.at(0)).name));
      weights_.push_back(weight_args(graph, groups.at(task.groups.at(0))));
    }
    for (size_t group : task.groups)
      keep_common_weights(weights_[k], weight_args(graph, groups.at(group)));
    task_symbols.push_back(symbols_[k]);
  }
  std::vector<std::string> group_symbols;
  for (size_t t : task_of_group(tasks, groups.size()))
    group_symbols.push_back(task_symbols[t]);
  return group_symbols;
}

nlohmann::json ArtifactKernels::export_to(const PluginTarget& target,
                                          const std::string& path) const {
  return export_artifact_kernels(target, kernels_, names_, symbols_, weights_, path);
}

} // namespace mt
