// Tuned against library kernels, timed inside the model (see model_choice.h).
#include "hosts/cli/model_choice.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "core/database/database.h"
#include "core/graph/generator.h"
#include "core/graph/graph_tasks.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/model_executor.h"
#include "core/measure/implementation_compare.h"
#include "hosts/cli/model_execution.h"

namespace mt::cli {

namespace {

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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

// The generation of one prompt and a few decode steps: per phase (0 the prefill, 1 the decode
// steps) its wall seconds and, profiled, each task's seconds per call. Unprofiled, the wall time
// holds what per-kernel times leave out: the hand-offs between oneDNN's OpenMP team and the llvm
// pool sharing the cores (docs/models.md, "Threads").
class GenerationTimes {
public:
  GenerationTimes(const LoadedModel& m, const KernelSelector& selector, GenerationShape shape,
                  int64_t seq, int64_t steps, bool profiled = true)
      : gen_(*m.host, m.config, selector, m.params, std::move(shape)), steps_(steps),
        profiled_(profiled) {
    gen_.prepare(seq, seq + steps + 1);
    gen_.set_profiling(profiled);
  }

  void run(const std::vector<int32_t>& prompt) {
    wall_[0].push_back(seconds_of([&] { gen_.prefill(prompt); }));
    for (int64_t s = 0; s <= steps_; ++s) {
      if (profiled_) record_tasks(s == 0 ? 0 : 1);
      if (s < steps_) wall_[1].push_back(seconds_of([&] { gen_.step(prompt.back()); }));
    }
  }
  void clear() {
    times_.clear();
    wall_[0].clear(), wall_[1].clear();
  }
  // Profiling off: the same generator's runs then time whole phases only.
  void set_profiled(bool on) {
    profiled_ = on;
    gen_.set_profiling(on);
  }
  const CompiledGraph& graph(int phase) const { return *graphs_[phase]; }
  double per_call(int phase, size_t task) const { return median_of(times_.at({phase, task})); }
  double wall(int phase) const { return median_of(wall_[phase]); }

private:
  // The last run graph's kernel times, per task.
  void record_tasks(int phase) {
    const CompiledGraph& c = gen_.last_run();
    if (graphs_[phase] != &c) task_of_[phase] = task_of_group(c.tasks, c.groups.size());
    graphs_[phase] = &c;
    std::vector<double> sum(c.tasks.size(), 0);
    for (size_t g = 0; g < task_of_[phase].size(); ++g)
      sum[task_of_[phase][g]] += c.exec->group_seconds()[g];
    for (size_t t = 0; t < sum.size(); ++t)
      times_[{phase, t}].push_back(
          sum[t] / static_cast<double>(std::max<size_t>(1, c.tasks[t].groups.size())));
  }

  Generator gen_;
  int64_t steps_;
  bool profiled_;
  const CompiledGraph* graphs_[2] = {nullptr, nullptr};
  std::vector<size_t> task_of_[2]; // per phase: the task of each group of its graph
  std::map<std::pair<int, size_t>, std::vector<double>> times_;
  std::vector<double> wall_[2];
};

// `rounds` rounds of every run in `runs`, each round starting one further along (two runs:
// library first, then tuned first), so that a drift of the machine favours none.
void rotate_rounds(int rounds, const std::vector<std::function<void()>>& runs) {
  for (int r = 0; r < std::max(1, rounds); ++r)
    for (size_t k = 0; k < runs.size(); ++k)
      runs[(k + static_cast<size_t>(r)) % runs.size()]();
}

// Adds one task's two timings to *out and, where both kernels exist (a library kernel and a
// tuned record), stores the faster as the database's model choice.
void record_choice(const GraphTask& task, const TaskKernel& lib, const TaskKernel& tuned, double l,
                   double u, double calls, const std::string& key, Database& db, bool quiet,
                   ModelChoiceSummary* out) {
  const bool both = lib.library && tuned.tuned;
  out->library_seconds += l * calls;
  out->tuned_seconds += u * calls;
  out->best_seconds += (both ? std::min(l, u) : u) * calls;
  if (!both || tuned.workload_id == 0) return;
  ModelChoice c;
  c.workload_id = tuned.workload_id;
  c.target = key;
  c.implementation = u <= l ? "tuned" : lib.key;
  c.tuned_seconds = u;
  c.library_seconds = l;
  db.set_model_choice(c);
  ++out->compared;
  out->tuned += u <= l;
  if (!quiet)
    std::fprintf(stderr, "  %-40s tuned %8.4f ms, %s %8.4f ms per call in the model: %s\n",
                 task.name.c_str(), u * 1e3, lib.component.c_str(), l * 1e3,
                 u <= l ? "tuned" : lib.component.c_str());
}

// Every stored choice of the first `n` tasks that both implement set to one side: the tuned
// kernel (`tuned_side`) or the library's. Returns how many are now tuned.
size_t choose_one_side(Database& db, const std::vector<TaskKernel>& lib,
                       const std::vector<TaskKernel>& tuned, size_t n,
                       const std::string& choice_key, bool tuned_side) {
  size_t count = 0;
  for (size_t t = 0; t < n; ++t) {
    const TaskKernel& lk = lib[t];
    const TaskKernel& tk = tuned[t];
    if (!lk.library || !tk.tuned || tk.workload_id == 0) continue;
    std::optional<ModelChoice> c = db.model_choice(tk.workload_id, choice_key);
    if (!c) continue;
    c->implementation = tuned_side ? "tuned" : lk.key;
    db.set_model_choice(*c);
    count += tuned_side;
  }
  return count;
}

// Each task's faster kernel need not make the faster step: a step that mixes oneDNN's and the
// llvm target's kernels hands the cores from one thread team to the other at every switch, a
// cost that no kernel's own time holds (Llama's bf16 decode step: 111 tokens/s with each task's
// faster kernel against 118 with all tuned). So the step is timed whole, unprofiled, with the
// choices just made and with every compared task on one side; where one side alone is the
// faster, that phase's choices go to it.
// `lib` and `tuned` are the generators the per-task choices were timed on: run again
// unprofiled, beside one with the choices just made (`best`, built here).
void check_mixed_phases(const LoadedModel& m, Database& db, const KernelSelector& best_sel,
                        const std::string& choice_key, int rounds, const GenerationShape& shape,
                        int64_t seq, int64_t steps, const std::vector<int32_t>& prompt,
                        GenerationTimes& lib, GenerationTimes& tuned, bool quiet) {
  GenerationTimes best(m, best_sel, shape, seq, steps, false);
  lib.set_profiled(false);
  tuned.set_profiled(false);
  for (GenerationTimes* w : {&lib, &tuned, &best}) { // warm-up, and the profiled rounds' walls
    w->run(prompt);
    w->clear();
  }
  rotate_rounds(rounds,
                {[&] { lib.run(prompt); }, [&] { tuned.run(prompt); }, [&] { best.run(prompt); }});
  const char* names[2] = {"prefill", "decode step"};
  for (int phase = 0; phase < 2; ++phase) {
    const double l = lib.wall(phase), u = tuned.wall(phase), b = best.wall(phase);
    const bool uniform = std::min(l, u) < b;
    if (!quiet)
      std::fprintf(stderr,
                   "  %s at capacity %lld, whole: each task's faster %.3f ms, all library %.3f "
                   "ms, all tuned %.3f ms%s\n",
                   names[phase], static_cast<long long>(shape.capacities.at(0)), b * 1e3, l * 1e3,
                   u * 1e3, uniform ? (u <= l ? ": all tuned kept" : ": all library kept") : "");
    if (!uniform) continue;
    const CompiledGraph& lg = lib.graph(phase);
    const CompiledGraph& tg = tuned.graph(phase);
    choose_one_side(db, lg.kernels, tg.kernels, std::min(lg.tasks.size(), tg.tasks.size()),
                    choice_key, u <= l);
  }
}

// The same check for a whole model (choose_in_model): the model with the per-task choices just
// stored, with every compared task's library kernel and with every one tuned, timed unprofiled
// in rotating rounds; where one side alone is the faster, every compared task's choice goes to
// it (all-MiniLM-L6-v2's five buckets: the faster kernel of each task summed to 8% under the
// library's, and in four of the buckets the mixed model ran slower than one side alone).
void check_mixed_model(const LoadedModel& m, Database& db, const std::string& target,
                       const std::vector<std::string>& libraries, const std::string& fpmath,
                       const std::string& choice_key, int rounds, CompiledModel& lib,
                       CompiledModel& tuned, bool quiet, ModelChoiceSummary* out) {
  if (out->compared == 0) return;
  KernelSelector best_sel(*m.host, selection(KernelPolicy::Best, target, libraries, &db, fpmath));
  CompiledModel best = compile_model(m, best_sel, quiet);
  std::vector<CompiledModel*> models = {&lib, &tuned, &best};
  std::vector<std::vector<double>> walls(models.size());
  for (CompiledModel* c : models)
    c->executor->execute(m.inputs); // warm-up
  std::vector<std::function<void()>> runs;
  for (size_t i = 0; i < models.size(); ++i)
    runs.push_back([&, i] {
      walls[i].push_back(seconds_of([&] { models[i]->executor->execute(m.inputs); }));
    });
  rotate_rounds(rounds, runs);
  const double l = median_of(walls[0]), u = median_of(walls[1]), b = median_of(walls[2]);
  const bool uniform = std::min(l, u) < b;
  if (!quiet)
    std::fprintf(stderr,
                 "  whole model: each task's faster %.3f ms, all library %.3f ms, all tuned %.3f "
                 "ms%s\n",
                 b * 1e3, l * 1e3, u * 1e3,
                 uniform ? (u <= l ? ": all tuned kept" : ": all library kept") : "");
  if (!uniform) return;
  out->tuned = choose_one_side(db, lib.kernels, tuned.kernels, m.tasks.size(), choice_key, u <= l);
  out->best_seconds = u <= l ? out->tuned_seconds : out->library_seconds;
}

} // namespace

ModelChoiceSummary choose_in_model(const LoadedModel& m, Database& db, const std::string& target,
                                   const std::vector<std::string>& libraries,
                                   const std::string& fpmath, int rounds, bool quiet) {
  ModelChoiceSummary out;
  KernelSelector lib_sel(*m.host, selection(KernelPolicy::Library, target, libraries, &db, fpmath));
  if (!lib_sel.has_library()) return out;
  KernelSelector tuned_sel(*m.host, selection(KernelPolicy::Tuned, target, libraries, &db, fpmath));
  CompiledModel lib = compile_model(m, lib_sel, quiet), tuned = compile_model(m, tuned_sel, quiet);
  // The tasks both implement: the ones compared.
  std::vector<bool> both(m.tasks.size());
  for (size_t t = 0; t < m.tasks.size(); ++t)
    both[t] = lib.kernels[t].library && tuned.kernels[t].tuned;
  if (std::find(both.begin(), both.end(), true) == both.end()) return out;
  lib.executor->execute(m.inputs); // warm-up
  tuned.executor->execute(m.inputs);
  TaskTimes lib_times(m), tuned_times(m);
  rotate_rounds(rounds,
                {[&] { lib_times.run(*lib.executor); }, [&] { tuned_times.run(*tuned.executor); }});
  for (size_t t = 0; t < m.tasks.size(); ++t)
    record_choice(m.tasks[t], lib.kernels[t], tuned.kernels[t], lib_times.per_call(t),
                  tuned_times.per_call(t), tuned_times.calls(t), tuned_sel.choice_key(), db, quiet,
                  &out);
  check_mixed_model(m, db, target, libraries, fpmath, tuned_sel.choice_key(), rounds, lib, tuned,
                    quiet, &out);
  return out;
}

ModelChoiceSummary choose_in_generation(const LoadedModel& m, Database& db,
                                        const std::string& target,
                                        const std::vector<std::string>& libraries,
                                        const std::string& fpmath, int rounds,
                                        const std::vector<int64_t>& capacities, bool quiet) {
  ModelChoiceSummary out;
  KernelSelector lib_sel(*m.host, selection(KernelPolicy::Library, target, libraries, &db, fpmath));
  if (!lib_sel.has_library()) return out;
  KernelSelector tuned_sel(*m.host, selection(KernelPolicy::Tuned, target, libraries, &db, fpmath));
  // The prompt: the model's own ids (its first sequence), those the prompt graph is timed on.
  const int64_t seq = m.seq;
  const auto* ids = m.inputs.at(0).data_as<int32_t>();
  const std::vector<int32_t> prompt(ids, ids + seq);
  for (int64_t cap : capacities) {
    if (cap <= seq + 1) continue;
    GenerationShape shape{{seq}, {cap}};
    const int64_t steps = std::min<int64_t>(8, cap - seq - 1);
    GenerationTimes lib(m, lib_sel, shape, seq, steps), tuned(m, tuned_sel, shape, seq, steps);
    lib.run(prompt); // warm-up: first touch of every buffer
    tuned.run(prompt);
    lib.clear();
    tuned.clear();
    rotate_rounds(rounds, {[&] { lib.run(prompt); }, [&] { tuned.run(prompt); }});
    for (int phase = 0; phase < 2; ++phase) {
      const CompiledGraph& lg = lib.graph(phase);
      const CompiledGraph& tg = tuned.graph(phase);
      for (size_t t = 0; t < lg.tasks.size() && t < tg.tasks.size(); ++t)
        record_choice(tg.tasks[t], lg.kernels[t], tg.kernels[t], lib.per_call(phase, t),
                      tuned.per_call(phase, t), static_cast<double>(tg.tasks[t].groups.size()),
                      tuned_sel.choice_key(), db, quiet, &out);
    }
    // Built after the choices above, so that it follows them.
    KernelSelector best_sel(*m.host, selection(KernelPolicy::Best, target, libraries, &db, fpmath));
    check_mixed_phases(m, db, best_sel, tuned_sel.choice_key(), rounds, shape, seq, steps, prompt,
                       lib, tuned, quiet);
  }
  return out;
}

} // namespace mt::cli
