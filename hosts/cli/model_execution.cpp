// Compiling, timing and profiling a model for the CLI (see model_execution.h).
#include "hosts/cli/model_execution.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "core/database/database.h"
#include "core/graph/packed_params.h"
#include "core/tuner/terminal.h"

namespace mt::cli {

std::unique_ptr<Database> open_read_only(const std::string& path) {
  if (path.empty()) return nullptr;
  DatabaseOptions dbo;
  dbo.read_only = true;
  return Database::open(path, dbo);
}

KernelPolicy policy_of(const std::string& implementations, const Database* db) {
  if (!implementations.empty()) return parse_kernel_policy(implementations);
  return db ? KernelPolicy::Best : KernelPolicy::Library;
}

KernelSelectionOptions selection(KernelPolicy policy, const std::string& target,
                                 const std::vector<std::string>& libraries, const Database* db,
                                 const std::string& fpmath) {
  KernelSelectionOptions s;
  s.policy = policy;
  s.target = target;
  s.libraries = libraries;
  if (fpmath != "f32") {
    s.target += " -fpmath=" + fpmath;
    for (std::string& l : s.libraries)
      l += " -fpmath=" + fpmath;
  }
  s.db = db;
  return s;
}

void add_fpmath_option(CLI::App* cmd, std::string& fpmath, const std::string& help) {
  cmd->add_option("--fpmath", fpmath,
                  !help.empty()
                      ? help
                      : "f32, or bf16: the model's weights packed in bf16 -- the tuning target's "
                        "kernels widen them to f32 as they load them; the library's matmuls also "
                        "round their inputs to bf16 and accumulate in f32 (oneDNN on CPUs with "
                        "AVX512-BF16 or AMX; elsewhere f32, with a warning). Faster, less exact")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
}

std::string CompiledModel::summary() const {
  std::map<std::string, size_t> counts;
  for (const TaskKernel& k : kernels)
    ++counts[k.library ? k.component : k.component + (k.tuned ? " tuned" : " untuned")];
  std::string out;
  for (const auto& [what, n] : counts)
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  return out;
}

CompiledModel compile_model(const LoadedModel& m, const KernelSelector& selector, bool quiet) {
  auto start = std::chrono::steady_clock::now();
  CompiledModel c;
  // A count redrawn with \r: on a terminal only (a log file would get every count in one line).
  const bool show = !quiet && Terminal::standard_error().interactive();
  c.kernels = select_kernels(selector, m.tasks, [show](size_t done, size_t total) {
    if (!show) return;
    std::fprintf(stderr, "\rbuilt %zu/%zu kernels", done, total);
    if (done == total) std::fprintf(stderr, "\r%40s\r", "");
    std::fflush(stderr);
  });
  c.executor = std::make_unique<ModelExecutor>(m.graph, m.groups,
                                               group_kernels(m.tasks, c.kernels, m.groups.size()));
  c.executor->set_params(m.params);
  c.executor->pack_params();
  c.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

void print_packed_weights(const PackedParams& packed) {
  if (packed.copies() == 0) return;
  std::printf("weights packed for their kernels: %zu copies, %.1f MB\n", packed.copies(),
              static_cast<double>(packed.bytes()) / 1e6);
}

ModelTiming time_model(ModelExecutor& exec, const std::vector<NDArray>& inputs, int repeats) {
  exec.execute(inputs); // warm-up: first-touch of the arena, caches, lazy binding
  ModelTiming t;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    auto s = std::chrono::steady_clock::now();
    exec.execute(inputs);
    t.runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.runs.begin(), t.runs.end());
  return t;
}

void print_task_breakdown(const LoadedModel& m, CompiledModel& c, int repeats) {
  ModelExecutor& exec = *c.executor;
  exec.set_profiling(true);
  std::vector<std::vector<double>> per_group(m.groups.size());
  for (int r = 0; r < std::max(1, repeats); ++r) {
    exec.execute(m.inputs);
    for (size_t g = 0; g < m.groups.size(); ++g)
      per_group[g].push_back(exec.group_seconds()[g]);
  }
  exec.set_profiling(false);
  std::string what = "median of " + std::to_string(std::max(1, repeats)) + " profiled runs";
  print_task_breakdown(m.tasks, c.kernels, std::move(per_group), what.c_str(), &exec);
}

void print_task_breakdown(const std::vector<GraphTask>& tasks,
                          const std::vector<TaskKernel>& kernels,
                          std::vector<std::vector<double>> per_group, const char* what,
                          const ModelExecutor* exec) {
  std::vector<size_t> task_of = task_of_group(tasks, per_group.size());
  std::vector<double> task_seconds(tasks.size(), 0);
  std::vector<bool> packed(tasks.size(), false);
  for (size_t g = 0; exec && g < task_of.size(); ++g)
    if (exec->packed_args(g) > 0) packed[task_of[g]] = true;
  double total = 0;
  for (size_t g = 0; g < per_group.size(); ++g) {
    if (per_group[g].empty()) continue;
    std::sort(per_group[g].begin(), per_group[g].end());
    double s = per_group[g][per_group[g].size() / 2];
    task_seconds[task_of[g]] += s;
    total += s;
  }
  std::vector<size_t> order(tasks.size());
  for (size_t t = 0; t < order.size(); ++t)
    order[t] = t;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return task_seconds[a] > task_seconds[b]; });
  std::printf("per task (%s; kernel calls only, %.2f ms in all):\n", what, total * 1e3);
  for (size_t t : order) {
    const TaskKernel& k = kernels[t];
    std::printf("  %8.3f ms %5.1f%%  x%-3zu %-40s %s%s%s%s\n", task_seconds[t] * 1e3,
                total > 0 ? 100 * task_seconds[t] / total : 0.0, tasks[t].groups.size(),
                tasks[t].name.c_str(), k.label().c_str(), packed[t] ? ", weights packed" : "",
                k.note.empty() ? "" : "  -- ", k.note.c_str());
  }
}

} // namespace mt::cli
