// The tuning tasks of a whole model: each distinct operator of the model as a workload spec,
// with a weight saying how often it runs per inference. The task scheduler spends the trial
// budget where the weighted latency drops most, and because the database is keyed by the
// workload's structure, a workload tuned inside one model is reused by every other model
// that contains it. Built-in models (`metatune models`) and JSON files:
//
//   {"name": "my-model",
//    "tasks": [{"workload": "dense(M=128,N=3072,K=768)", "weight": 12, "name": "ffn1"}, ...]}
//
// See docs/tuning.md ("Tuning a model").
#pragma once

#include <string>
#include <vector>

namespace mt {

struct ModelTask {
  std::string name;     // role in the model ("ffn1", "stage2.conv3x3"); informational
  std::string workload; // canonical workload spec
  double weight = 1;    // calls per inference
};

struct ModelTasks {
  std::string name;
  std::string description;
  std::vector<ModelTask> tasks; // distinct workloads, in model order
};

// Names of the built-in models ("bert-base", "resnet-50").
std::vector<std::string> builtin_model_names();
// A built-in model; unknown names throw std::invalid_argument with a "did you mean" and the
// list of built-in models.
ModelTasks builtin_model(const std::string& name);
// A model file as above. Throws std::invalid_argument naming the file and the task (index and
// field) that is wrong: malformed JSON, a missing workload, an invalid spec, a weight <= 0.
ModelTasks load_model_file(const std::string& path);
// `name_or_path`: a built-in model name, else a JSON file.
ModelTasks resolve_model(const std::string& name_or_path);

// Tasks with the same canonical workload become one, their weights added (a model file may
// list an operator once per layer).
void merge_duplicate_tasks(ModelTasks& model);

} // namespace mt
