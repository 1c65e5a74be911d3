#include "core/workload/model_tasks.h"

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/workload/library.h"
#include "core/workload/registry.h"

namespace mt {

namespace {

std::string conv(int64_t c, int64_t hw, int64_t f, int64_t k, int64_t stride, bool relu) {
  std::ostringstream s;
  s << "conv2d(N=1,C=" << c << ",H=" << hw << ",W=" << hw << ",F=" << f << ",KH=" << k
    << ",KW=" << k << ",stride=" << stride << ",padding=" << k / 2 << ",bias=1,relu=" << relu
    << ")";
  return s.str();
}

// BERT-base encoder, batch 1, sequence 128: 12 layers of attention (fused QKV projection,
// scores, softmax over 12 heads x 128 rows, context, output projection) and feed-forward
// (768 -> 3072 with GELU -> 768), two layer norms per layer.
ModelTasks bert_base() {
  ModelTasks m{"bert-base",
               "BERT-base encoder (12 layers, hidden 768, 12 heads), batch 1, sequence 128",
               {}};
  m.tasks = {
      {"attention.qkv", "dense(M=128,N=2304,K=768,bias=1,act=none)", 12},
      {"attention.scores", "transpose_batch_matmul(B=1,S=128,H=12,D=64)", 12},
      {"attention.softmax", "softmax(M=1536,N=128)", 12},
      {"attention.context", "batch_matmul(B=12,M=128,N=64,K=128)", 12},
      {"attention.output", "dense(M=128,N=768,K=768,bias=1,act=none)", 12},
      {"layernorm", "layernorm(M=128,N=768)", 24},
      {"ffn1", "dense(M=128,N=3072,K=768,bias=1,act=gelu)", 12},
      {"ffn2", "dense(M=128,N=768,K=3072,bias=1,act=none)", 12},
  };
  return m;
}

// ResNet-50 v1.5, batch 1, 224x224, NCHW, batch norm folded into a bias: the stem, the
// bottleneck blocks' 1x1 reduce / 3x3 / 1x1 expand convolutions (the stride in the 3x3 of a
// stage's first block), the projection shortcuts, the pools and the classifier.
ModelTasks resnet50() {
  ModelTasks m{"resnet-50", "ResNet-50 v1.5, batch 1, 224x224, NCHW, batch norm folded", {}};
  m.tasks.push_back({"stem", conv(3, 224, 64, 7, 2, true), 1});
  m.tasks.push_back(
      {"stem.maxpool", "pool2d(N=1,C=64,H=112,W=112,K=3,stride=2,padding=1,kind=max)", 1});
  struct Stage {
    int64_t in, mid, out, hw_in, stride, blocks;
  };
  const Stage stages[] = {{64, 64, 256, 56, 1, 3},
                          {256, 128, 512, 56, 2, 4},
                          {512, 256, 1024, 28, 2, 6},
                          {1024, 512, 2048, 14, 2, 3}};
  int si = 1;
  for (const Stage& s : stages) {
    std::string p = "stage" + std::to_string(si++) + ".";
    int64_t hw = s.hw_in / s.stride;
    m.tasks.push_back({p + "first.reduce", conv(s.in, s.hw_in, s.mid, 1, 1, true), 1});
    m.tasks.push_back({p + "first.conv3x3", conv(s.mid, s.hw_in, s.mid, 3, s.stride, true), 1});
    m.tasks.push_back({p + "shortcut", conv(s.in, s.hw_in, s.out, 1, s.stride, false), 1});
    m.tasks.push_back(
        {p + "reduce", conv(s.out, hw, s.mid, 1, 1, true), static_cast<double>(s.blocks - 1)});
    m.tasks.push_back(
        {p + "conv3x3", conv(s.mid, hw, s.mid, 3, 1, true), static_cast<double>(s.blocks - 1)});
    m.tasks.push_back(
        {p + "expand", conv(s.mid, hw, s.out, 1, 1, false), static_cast<double>(s.blocks)});
  }
  m.tasks.push_back({"avgpool", "pool2d(N=1,C=2048,H=7,W=7,K=7,stride=1,padding=0,kind=avg)", 1});
  m.tasks.push_back({"fc", "dense(M=1,N=1000,K=2048,bias=1,act=none)", 1});
  return m;
}

const std::map<std::string, ModelTasks (*)()>& builtins() {
  static const std::map<std::string, ModelTasks (*)()> m = {{"bert-base", bert_base},
                                                            {"resnet-50", resnet50}};
  return m;
}

void canonicalize(ModelTasks& m, const std::string& where) {
  for (size_t i = 0; i < m.tasks.size(); ++i) {
    ModelTask& t = m.tasks[i];
    try {
      t.workload = canonical_workload_spec(t.workload);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + ": task " + std::to_string(i) +
                                  (t.name.empty() ? "" : " ('" + t.name + "')") + ": " + e.what());
    }
    if (!(t.weight > 0))
      throw std::invalid_argument(where + ": task " + std::to_string(i) +
                                  (t.name.empty() ? "" : " ('" + t.name + "')") +
                                  ": weight must be a positive number");
  }
  merge_duplicate_tasks(m);
}

} // namespace

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : builtins())
    out.push_back(name);
  return out;
}

ModelTasks builtin_model(const std::string& name) {
  auto it = builtins().find(name);
  if (it == builtins().end()) {
    std::string list;
    for (const std::string& n : builtin_model_names())
      list += (list.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown model '" + name + "'" +
                                workload_detail::did_you_mean(name, builtin_model_names()) +
                                "; built-in models: " + list +
                                " (or give a JSON file of tasks, see docs/tuning.md)");
  }
  ModelTasks m = it->second();
  canonicalize(m, "built-in model '" + name + "'");
  return m;
}

ModelTasks load_model_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("model file '" + path + "': cannot be opened");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument("model file '" + path + "': not valid JSON (byte " +
                                std::to_string(e.byte) + ")");
  }
  if (!j.is_object() || !j.contains("tasks") || !j["tasks"].is_array())
    throw std::invalid_argument("model file '" + path +
                                "': expected an object with a \"tasks\" array");
  ModelTasks m;
  m.name = j.value("name", path);
  if (j.contains("description") && j["description"].is_string())
    m.description = j["description"].get<std::string>();
  const auto& tasks = j["tasks"];
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    std::string where = "model file '" + path + "': task " + std::to_string(i);
    if (!t.is_object() || !t.contains("workload") || !t["workload"].is_string())
      throw std::invalid_argument(where + ": needs a \"workload\" string");
    ModelTask task;
    task.workload = t["workload"].get<std::string>();
    if (t.contains("name")) {
      if (!t["name"].is_string())
        throw std::invalid_argument(where + ": \"name\" must be a string");
      task.name = t["name"].get<std::string>();
    }
    if (t.contains("weight")) {
      if (!t["weight"].is_number())
        throw std::invalid_argument(where + ": \"weight\" must be a number");
      task.weight = t["weight"].get<double>();
    }
    m.tasks.push_back(std::move(task));
  }
  if (m.tasks.empty()) throw std::invalid_argument("model file '" + path + "': no tasks");
  canonicalize(m, "model file '" + path + "'");
  return m;
}

ModelTasks resolve_model(const std::string& name_or_path) {
  if (builtins().count(name_or_path)) return builtin_model(name_or_path);
  std::ifstream probe(name_or_path);
  if (probe) return load_model_file(name_or_path);
  return builtin_model(name_or_path); // the error names the built-in models
}

void merge_duplicate_tasks(ModelTasks& model) {
  std::vector<ModelTask> out;
  std::map<std::string, size_t> index;
  for (ModelTask& t : model.tasks) {
    auto it = index.find(t.workload);
    if (it == index.end()) {
      index[t.workload] = out.size();
      out.push_back(std::move(t));
    } else {
      ModelTask& kept = out[it->second];
      kept.weight += t.weight;
      if (!t.name.empty()) kept.name += (kept.name.empty() ? "" : "+") + t.name;
    }
  }
  model.tasks = std::move(out);
}

} // namespace mt
