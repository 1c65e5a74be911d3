// A model graph tuned for a test: its distinct workloads tuned with a small budget (and the
// oneDNN implementation measured where it has one) into a fresh database, then compiled with
// the faster implementation per task -- the path `metatune model tune` + `model run --db`
// takes, so that a test can check the tuned model's output against its reference.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "../tune/tune_test_util.h"
#include "core/database/database.h"
#include "core/graph/graph_tasks.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/model_executor.h"

namespace mt::graph_test {

struct TunedModel {
  std::filesystem::path db_path;
  std::vector<FusedGroup> groups;
  std::vector<GraphTask> tasks;
  TuneResult tuning;
  std::vector<TaskKernel> kernels;
  std::unique_ptr<ModelExecutor> exec;

  // `trials_per_task` candidates of every task are measured.
  TunedModel(const ModelGraph& graph, const std::string& name, size_t trials_per_task = 3) {
    db_path = std::filesystem::temp_directory_path() /
              ("mt_tuned_" + name + "_" + std::to_string(getpid()) + ".db");
    std::filesystem::remove(db_path);
    groups = fuse(graph.outputs);
    tasks = graph_tasks(groups, name);
    TuneOptions o = tune_test::quick_options(db_path.string(), trials_per_task * tasks.size());
    o.per_task_cap = trials_per_task;
    o.library_targets = {"onednn.cpu"};
    o.reference_cache_dir.clear();
    tuning = tune(tune_test::host(), tune_tasks(tasks), o);
    DatabaseOptions ro;
    ro.read_only = true;
    std::unique_ptr<Database> db = Database::open(db_path.string(), ro);
    KernelSelectionOptions so;
    so.policy = KernelPolicy::Best;
    so.db = db.get();
    KernelSelector selector(tune_test::host(), so);
    kernels = select_kernels(selector, tasks);
    exec = std::make_unique<ModelExecutor>(graph, groups,
                                           group_kernels(tasks, kernels, groups.size()));
  }
  ~TunedModel() { std::filesystem::remove(db_path); }

  // Every task runs a tuned or a library kernel, none the unscheduled function.
  void expect_all_tuned() const {
    size_t tuned = 0;
    for (size_t t = 0; t < kernels.size(); ++t) {
      EXPECT_TRUE(kernels[t].tuned || kernels[t].library)
          << tasks[t].name << ": " << kernels[t].label() << " " << kernels[t].note;
      tuned += kernels[t].tuned;
    }
    EXPECT_GT(tuned, 0u) << "no task runs a tuned schedule";
  }
};

} // namespace mt::graph_test
