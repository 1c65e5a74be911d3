// Tuned against library kernels, timed inside the model (see model_choice.h).
#include "hosts/cli/model_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/database/database.h"
#include "core/graph/graph_tasks.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/model_executor.h"
#include "core/measure/implementation_compare.h"
#include "hosts/cli/model_execution.h"

namespace mt::cli {

namespace {

// Per task and profiled run, its kernels' seconds per call: `rounds` entries each.
class TaskTimes {
public:
  TaskTimes(const LoadedModel& m) : m_(m), task_of_(task_of_group(m.tasks, m.groups.size())) {
    per_task_.resize(m.tasks.size());
  }

  void run(ModelExecutor& exec) {
    exec.set_profiling(true);
    exec.execute(m_.inputs);
    exec.set_profiling(false);
    std::vector<double> sum(m_.tasks.size(), 0);
    for (size_t g = 0; g < task_of_.size(); ++g)
      sum[task_of_[g]] += exec.group_seconds()[g];
    for (size_t t = 0; t < sum.size(); ++t)
      per_task_[t].push_back(sum[t] /
                             static_cast<double>(std::max<size_t>(1, m_.tasks[t].groups.size())));
  }

  double per_call(size_t task) const { return median_of(per_task_[task]); }
  double calls(size_t task) const { return static_cast<double>(m_.tasks[task].groups.size()); }

private:
  const LoadedModel& m_;
  std::vector<size_t> task_of_;
  std::vector<std::vector<double>> per_task_;
};

} // namespace

ModelChoiceSummary choose_in_model(const LoadedModel& m, Database& db, const std::string& target,
                                   const std::vector<std::string>& libraries, int rounds,
                                   bool quiet) {
  ModelChoiceSummary out;
  KernelSelector lib_sel(*m.host, selection(KernelPolicy::Library, target, libraries, &db));
  if (!lib_sel.has_library()) return out;
  KernelSelector tuned_sel(*m.host, selection(KernelPolicy::Tuned, target, libraries, &db));
  CompiledModel lib = compile_model(m, lib_sel, quiet), tuned = compile_model(m, tuned_sel, quiet);
  // The tasks both implement: the ones compared.
  std::vector<bool> both(m.tasks.size());
  for (size_t t = 0; t < m.tasks.size(); ++t)
    both[t] = lib.kernels[t].library && tuned.kernels[t].tuned;
  if (std::find(both.begin(), both.end(), true) == both.end()) return out;
  lib.executor->execute(m.inputs); // warm-up
  tuned.executor->execute(m.inputs);
  TaskTimes lib_times(m), tuned_times(m);
  for (int r = 0; r < std::max(1, rounds); ++r) {
    // Library then tuned, then tuned then library: a drift of the machine favours neither.
    if (r % 2 == 0) {
      lib_times.run(*lib.executor);
      tuned_times.run(*tuned.executor);
    } else {
      tuned_times.run(*tuned.executor);
      lib_times.run(*lib.executor);
    }
  }
  for (size_t t = 0; t < m.tasks.size(); ++t) {
    double l = lib_times.per_call(t), u = tuned_times.per_call(t);
    out.library_seconds += l * lib_times.calls(t);
    out.tuned_seconds += u * tuned_times.calls(t);
    out.best_seconds += (both[t] ? std::min(l, u) : u) * tuned_times.calls(t);
    if (!both[t]) continue;
    if (tuned.kernels[t].workload_id == 0) continue;
    ModelChoice c;
    c.workload_id = tuned.kernels[t].workload_id;
    c.target = tuned.kernels[t].key;
    c.implementation = u <= l ? "tuned" : lib.kernels[t].key;
    c.tuned_seconds = u;
    c.library_seconds = l;
    db.set_model_choice(c);
    ++out.compared;
    out.tuned += u <= l;
    if (!quiet)
      std::fprintf(stderr, "  %-40s tuned %8.4f ms, %s %8.4f ms per call in the model: %s\n",
                   m.tasks[t].name.c_str(), u * 1e3, lib.kernels[t].component.c_str(), l * 1e3,
                   u <= l ? "tuned" : lib.kernels[t].component.c_str());
  }
  return out;
}

} // namespace mt::cli
