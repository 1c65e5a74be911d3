// Model task lists (core/workload/model_tasks.h): the built-in models build valid workloads
// with the layer counts of the published architectures, duplicates merge, and a bad model
// file is refused with the task and field named.
#include "core/workload/model_tasks.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/workload/library.h"

namespace mt {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& name_or_path) {
  try {
    resolve_model(name_or_path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ModelTasks, BuiltinModelsBuildAndCountTheirLayers) {
  EXPECT_EQ(builtin_model_names(), (std::vector<std::string>{"bert-base", "resnet-50"}));
  for (const std::string& name : builtin_model_names()) {
    SCOPED_TRACE(name);
    ModelTasks m = builtin_model(name);
    EXPECT_FALSE(m.description.empty());
    for (const ModelTask& t : m.tasks) {
      EXPECT_EQ(t.workload, canonical_workload_spec(t.workload));
      EXPECT_NO_THROW(make_workload(t.workload)) << t.workload;
    }
  }
  // ResNet-50: 53 convolutions (stem, 16 bottlenecks x 3, 4 projection shortcuts).
  double convs = 0;
  for (const ModelTask& t : builtin_model("resnet-50").tasks)
    if (t.workload.rfind("conv2d(", 0) == 0) convs += t.weight;
  EXPECT_EQ(convs, 53);
  // BERT-base: 12 layers x (4 matmul-like ops + softmax + 2 dense of the FFN) + 24 norms.
  double ops = 0, norms = 0;
  for (const ModelTask& t : builtin_model("bert-base").tasks)
    (t.workload.rfind("layernorm(", 0) == 0 ? norms : ops) += t.weight;
  EXPECT_EQ(ops, 12 * 7);
  EXPECT_EQ(norms, 24);
}

TEST(ModelTasks, SameWorkloadListedTwiceIsOneTaskWithBothWeights) {
  // Stage 1's expand and shortcut convolutions are the same 1x1 64 -> 256 workload.
  ModelTasks r = builtin_model("resnet-50");
  std::string expand = canonical_workload_spec(
      "conv2d(N=1,C=64,H=56,W=56,F=256,KH=1,KW=1,stride=1,padding=0,bias=1,relu=0)");
  int found = 0;
  for (const ModelTask& t : r.tasks)
    if (t.workload == expand) {
      ++found;
      EXPECT_EQ(t.weight, 4);
    }
  EXPECT_EQ(found, 1);

  std::string path = write_temp("model_dup.json", R"JSON({"name": "two", "tasks": [
      {"workload": "matmul(M=64,N=64,K=64)", "weight": 2, "name": "a"},
      {"workload": "matmul( M=64, N=64, K=64 )", "name": "b"},
      {"workload": "softmax(M=8,N=16)", "weight": 0.5}]})JSON");
  ModelTasks m = resolve_model(path);
  EXPECT_EQ(m.name, "two");
  ASSERT_EQ(m.tasks.size(), 2u);
  EXPECT_EQ(m.tasks[0].weight, 3);
  EXPECT_EQ(m.tasks[0].name, "a+b");
  EXPECT_EQ(m.tasks[1].weight, 0.5);
}

TEST(ModelTasks, BadModelsAreRefusedWithWhereAndWhy) {
  EXPECT_NE(error_of("bert_base").find("did you mean 'bert-base'"), std::string::npos)
      << error_of("bert_base");
  EXPECT_NE(error_of("no-such-model").find("built-in models: bert-base, resnet-50"),
            std::string::npos);
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"{\"tasks\": [", "not valid JSON"},
      {"[1, 2]", "\"tasks\" array"},
      {"{\"tasks\": []}", "no tasks"},
      {"{\"tasks\": [{\"weight\": 2}]}", "task 0: needs a \"workload\""},
      {"{\"tasks\": [{\"workload\": \"matmul(M=4,N=4,K=4)\"}, {\"workload\": \"matmull(M=4)\", "
       "\"name\": \"x\"}]}",
       "task 1 ('x'): unknown workload 'matmull'"},
      {"{\"tasks\": [{\"workload\": \"matmul(M=4,N=4,K=4)\", \"weight\": 0}]}",
       "task 0: weight must be a positive number"},
      {"{\"tasks\": [{\"workload\": \"matmul(M=4,N=4,K=4)\", \"weight\": \"3\"}]}",
       "task 0: \"weight\" must be a number"},
  };
  int i = 0;
  for (const Case& c : cases) {
    std::string path = write_temp("bad_model_" + std::to_string(i++) + ".json", c.text);
    std::string err = error_of(path);
    EXPECT_NE(err.find(path), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.text << "\n-> " << err;
  }
}

} // namespace
} // namespace mt
