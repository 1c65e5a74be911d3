// A loaded model (model_source.h) compiled for one implementation policy
// (core/graph/kernel_selection.h): one kernel per distinct workload, built once and shared by
// the groups that run it, an executor over them holding the weights, and the timing and
// per-task report the `model run` and `model bench` commands print.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/graph/kernel_selection.h"
#include "core/graph/model_executor.h"
#include "hosts/cli/model_source.h"

namespace mt {
class PackedParams;
}

namespace mt::cli {

// The tuning database of --db opened read-only; nullptr when `path` is empty.
std::unique_ptr<Database> open_read_only(const std::string& path);
// The policy of a model command without --implementations: `best` with a database; without
// one `library` -- oneDNN's kernels where it implements a task, the rest untuned -- so that a
// model run before any tuning is not the unscheduled programs (a Llama prompt of 128 tokens:
// 1487 ms untuned, 91 ms so).
KernelPolicy policy_of(const std::string& implementations, const Database* db);
// The selection options of a model command: its policy, target, libraries and database.
// `fpmath` ("f32", or "bf16" from --fpmath) goes to the target and every library as their
// -fpmath option: oneDNN's matmuls against packed weights then compute in bf16
// (plugins/onednn_cpu), the llvm target's kernels read their weights packed in bf16.
KernelSelectionOptions selection(KernelPolicy policy, const std::string& target,
                                 const std::vector<std::string>& libraries, const Database* db,
                                 const std::string& fpmath = "f32");
// --fpmath: "f32" (default) or "bf16"; `help` says what it changes for the command (the
// default: how model run, bench and generate run the kernels).
void add_fpmath_option(CLI::App* cmd, std::string& fpmath, const std::string& help = "");

struct CompiledModel {
  KernelPolicy policy = KernelPolicy::Untuned;
  std::vector<TaskKernel> kernels; // per task of the model
  std::unique_ptr<ModelExecutor> executor;
  double build_seconds = 0;
  std::string summary() const; // "31 llvm.cpu tuned, 4 onednn.cpu, 2 llvm.cpu untuned"
};

// Builds every task's kernel (progress on stderr unless `quiet`) and sets the weights.
CompiledModel compile_model(const LoadedModel& m, const KernelSelector& selector, bool quiet);

struct ModelTiming {
  std::vector<double> runs; // seconds, sorted
  double median() const { return runs.empty() ? 0 : runs[runs.size() / 2]; }
};
// "weights packed for their kernels: N copies, X MB" (--fpmath bf16 halves the MB), unless
// none are packed.
void print_packed_weights(const PackedParams& packed);

// One warm-up run, then `repeats` timed runs of the whole model.
ModelTiming time_model(ModelExecutor& exec, const std::vector<NDArray>& inputs, int repeats);

// Per task: its kernels' share of one profiled run (median of `repeats`), implementation and
// count, the slowest first.
void print_task_breakdown(const LoadedModel& m, CompiledModel& c, int repeats);
// The same from group times already measured: per_group[g] the runs of group g; `exec` (if
// given) says which kernels take their weights packed.
void print_task_breakdown(const std::vector<GraphTask>& tasks,
                          const std::vector<TaskKernel>& kernels,
                          std::vector<std::vector<double>> per_group, const char* what,
                          const ModelExecutor* exec = nullptr);

} // namespace mt::cli
