// Choosing and building each task's implementation (see kernel_selection.h).
#include "core/graph/kernel_selection.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <metatune/plugin_api/types.h>
#include <spdlog/spdlog.h>

#include "core/database/database.h"
#include "core/plugin/plugin_error.h"
#include "core/plugin/plugin_host.h"
#include "core/tuner/reference_schedule.h"
#include "core/tuner/target_setup.h"

namespace mt {

KernelPolicy parse_kernel_policy(const std::string& name) {
  if (name == "untuned") return KernelPolicy::Untuned;
  if (name == "tuned") return KernelPolicy::Tuned;
  if (name == "library") return KernelPolicy::Library;
  if (name == "best") return KernelPolicy::Best;
  throw std::invalid_argument("unknown implementation policy '" + name +
                              "' (untuned, tuned, library, best)");
}

const char* to_string(KernelPolicy p) {
  switch (p) {
  case KernelPolicy::Untuned:
    return "untuned";
  case KernelPolicy::Tuned:
    return "tuned";
  case KernelPolicy::Library:
    return "library";
  case KernelPolicy::Best:
    return "best";
  }
  return "?";
}

std::string TaskKernel::label() const {
  std::string s = component;
  if (!library) s += tuned ? " tuned" : " untuned";
  if (record_id) s += " (record " + std::to_string(record_id) + ")";
  return s;
}

KernelSelector::KernelSelector(const PluginHost& host, KernelSelectionOptions options)
    : options_(std::move(options)), target_(setup_target(host, options_.target)),
      // A fallback on a CPU (the untuned policy asks for the program as written) gets its
      // leading spatial loops in parallel -- the same results, on every core.
      parallel_fallbacks_(options_.policy != KernelPolicy::Untuned &&
                          !is_gpu_kind(device_kind(target_.device_json))) {
  if (options_.policy != KernelPolicy::Untuned)
    libraries_ = open_library_targets(host, options_.libraries, target_.component);
  std::string fpmath = "f32";
  std::istringstream words(options_.target);
  for (std::string w; words >> w;)
    if (w.rfind("-fpmath=", 0) == 0) fpmath = w.substr(8);
  choice_key_ = model_choice_key(target_.target_string, fpmath);
  if ((options_.policy == KernelPolicy::Tuned || options_.policy == KernelPolicy::Best) &&
      !options_.db)
    throw std::invalid_argument(std::string("the '") + to_string(options_.policy) +
                                "' implementations need a tuning database (--db)");
}

KernelSelector::~KernelSelector() = default;

TaskKernel KernelSelector::untuned(const GraphTask& task, std::string note) const {
  TaskKernel k;
  try {
    k.module = target_.target->build(
        parallel_fallbacks_ ? spatial_loops_parallel(task.workload)->func() : task.workload);
  } catch (const std::exception& e) {
    throw std::runtime_error("building '" + task.name + "' with " + target_.component + ": " +
                             e.what());
  }
  k.function = task.workload;
  k.component = target_.component;
  k.note = std::move(note);
  return k;
}

std::optional<TaskKernel> KernelSelector::tuned(const GraphTask& task) const {
  if (!options_.db) return std::nullopt;
  // A target with -fpmath=bf16 files its records apart (its products may round); the f32
  // records of the same target serve it too (their kernels run the same there), and the
  // faster of the two bests is built.
  std::string key = target_.target_string;
  std::optional<TuningRecord> rec = options_.db->best(task.workload, key);
  const std::string bf16 = " -fpmath=bf16";
  if (key.size() > bf16.size() && key.ends_with(bf16)) {
    const std::string f32_key = key.substr(0, key.size() - bf16.size());
    std::optional<TuningRecord> f32 = options_.db->best(task.workload, f32_key);
    if (f32 && (!rec || f32->mean_secs() < rec->mean_secs())) {
      rec = std::move(f32);
      key = f32_key;
    }
  }
  if (!rec) return std::nullopt;
  // The trace names the blocks of the stored workload, which may come from another layer or
  // model: replay it there (same structure, same parameter order) and build that.
  Function stored = options_.db->workload_function(rec->workload_id);
  TaskKernel k;
  try {
    k.function = replay(*rec, stored);
    k.module = target_.target->build(k.function);
  } catch (const std::exception& e) {
    throw std::runtime_error("building '" + task.name + "' from " + options_.db->path() +
                             " record " + std::to_string(rec->id) + ": " + e.what());
  }
  k.component = target_.component;
  k.key = key;
  k.tuned = true;
  k.record_id = rec->id;
  k.workload_id = rec->workload_id;
  k.recorded_seconds = rec->mean_secs();
  return k;
}

std::optional<ModelChoice> KernelSelector::model_choice(int64_t workload_id) const {
  std::optional<ModelChoice> c = options_.db->model_choice(workload_id, choice_key_);
  if (!c || c->implementation == "tuned") return c;
  for (const LibraryTarget& lib : libraries_)
    if (lib.key == c->implementation) return c;
  return std::nullopt; // a library not in use here
}

std::optional<TaskKernel> KernelSelector::library_from_record(const GraphTask& task) const {
  if (!options_.db) return std::nullopt;
  std::optional<TaskKernel> best;
  for (const LibraryTarget& lib : libraries_) {
    std::optional<TuningRecord> rec = options_.db->best(task.workload, lib.key);
    if (!rec || (best && best->recorded_seconds <= rec->mean_secs())) continue;
    TaskKernel k;
    try {
      k.module = lib.target->build(task.workload);
      k.function = task.workload;
    } catch (const std::exception& e) {
      throw std::runtime_error("building '" + task.name + "' with " + lib.component + " (record " +
                               std::to_string(rec->id) + "): " + e.what());
    }
    k.component = lib.component;
    k.key = lib.key;
    k.library = true;
    k.record_id = rec->id;
    k.workload_id = rec->workload_id;
    k.recorded_seconds = rec->mean_secs();
    best = std::move(k);
  }
  return best;
}

std::optional<TaskKernel> KernelSelector::library_build(const GraphTask& task,
                                                        std::string* why) const {
  for (const LibraryTarget& lib : libraries_) {
    TaskKernel k;
    try {
      k.module = lib.target->build(task.workload);
      k.function = task.workload;
    } catch (const PluginError& e) {
      if (e.status() != MT_ERROR_UNSUPPORTED) throw;
      spdlog::debug("{}: {} does not implement it: {}", task.name, lib.component, e.what());
      *why += (why->empty() ? "" : "; ") + lib.component + " does not implement it";
      continue;
    }
    k.component = lib.component;
    k.key = lib.key;
    k.library = true;
    return k;
  }
  if (libraries_.empty()) *why = "no library target is loaded";
  return std::nullopt;
}

std::string model_choice_key(const std::string& records_key, const std::string& fpmath) {
  // A records key may carry its own -fpmath option (a target tuned with bf16 products).
  std::string base = records_key;
  const size_t at = base.rfind(" -fpmath=");
  if (at != std::string::npos && base.find(' ', at + 1) == std::string::npos) base.resize(at);
  return fpmath == "f32" ? base : base + " -fpmath=" + fpmath;
}

TaskKernel KernelSelector::select(const GraphTask& task) const {
  switch (options_.policy) {
  case KernelPolicy::Untuned:
    return untuned(task, "");
  case KernelPolicy::Tuned:
    if (auto k = tuned(task)) return std::move(*k);
    return untuned(task, "no tuned record");
  case KernelPolicy::Library: {
    std::string why;
    if (auto k = library_build(task, &why)) return std::move(*k);
    if (auto k = tuned(task)) {
      k->note = why;
      return std::move(*k);
    }
    return untuned(task, why + (options_.db ? "; no tuned record" : ""));
  }
  case KernelPolicy::Best: {
    std::optional<TaskKernel> t = tuned(task), l = library_from_record(task);
    // Timed inside the model (`model tune` at its end): that choice over the records' means.
    if (std::optional<ModelChoice> c = t && l ? model_choice(t->workload_id) : std::nullopt) {
      bool take_tuned = c->implementation == "tuned";
      TaskKernel& k = take_tuned ? *t : *l;
      char why[160];
      std::snprintf(why, sizeof why, "faster in the model: %.4g against %.4g ms",
                    1e3 * (take_tuned ? c->tuned_seconds : c->library_seconds),
                    1e3 * (take_tuned ? c->library_seconds : c->tuned_seconds));
      k.note = why;
      return std::move(k);
    }
    if (t && (!l || t->recorded_seconds <= l->recorded_seconds)) return std::move(*t);
    if (l) return std::move(*l);
    // A task of no record (a prompt bucket or cache capacity that was not tuned): the
    // library's kernel where one implements it. The unscheduled function is the last resort:
    // a 10-token prompt's prefill took 200 ms with it, 28 ms with oneDNN's.
    std::string why;
    if (std::optional<TaskKernel> k = library_build(task, &why)) {
      k->note = "no record in the database";
      return std::move(*k);
    }
    return untuned(task, "no record in the database; " + why);
  }
  }
  throw std::logic_error("kernel selection: unknown policy");
}

std::vector<TaskKernel> select_kernels(const KernelSelector& selector,
                                       const std::vector<GraphTask>& tasks,
                                       const std::function<void(size_t, size_t)>& progress) {
  std::vector<TaskKernel> out;
  for (const GraphTask& t : tasks) {
    out.push_back(selector.select(t));
    if (progress) progress(out.size(), tasks.size());
  }
  return out;
}

std::vector<std::shared_ptr<const PluginModule>>
group_kernels(const std::vector<GraphTask>& tasks, const std::vector<TaskKernel>& kernels,
              size_t num_groups) {
  if (kernels.size() != tasks.size())
    throw std::invalid_argument("group_kernels: " + std::to_string(tasks.size()) + " tasks, " +
                                std::to_string(kernels.size()) + " kernels");
  std::vector<std::shared_ptr<const PluginModule>> out;
  for (size_t t : task_of_group(tasks, num_groups))
    out.push_back(kernels[t].module);
  return out;
}

} // namespace mt
