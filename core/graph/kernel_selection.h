// Which implementation runs each task of a model, and its kernel built: the tuning target's
// build of the unscheduled function (untuned), of the best record's schedule in a tuning
// database (tuned), or a library target's implementation (oneDNN), which builds only the
// workloads it recognises. With the `best` policy each task runs whichever of the tuned
// record and the library record is faster in the database -- the same records, the same
// means, `metatune tune` and `metatune best` decide on -- so a model runs what tuning found;
// where `model tune` timed both inside the model (Database::model_choice), that decides --
// a choice made with the same -fpmath option as the target string's (choice_key()).
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/graph_tasks.h"
#include "core/measure/library_candidate.h"
#include "core/tuner/target_setup.h"

namespace mt {

class Database;
struct ModelChoice;
class PluginHost;
class PluginModule;

enum class KernelPolicy {
  Untuned, // the tuning target, unscheduled
  Tuned,   // the best tuned record; untuned where there is none
  Library, // the library where it implements the task; else as Tuned
  Best,    // the faster of the tuned and the library record; where neither exists, as Library
};
// "untuned", "tuned", "library", "best"; anything else throws std::invalid_argument.
KernelPolicy parse_kernel_policy(const std::string& name);
const char* to_string(KernelPolicy p);

struct TaskKernel {
  std::shared_ptr<const PluginModule> module; // params: the task's inputs, then its outputs
  // What `component` built it from: the task's workload, or the tuned record replayed on the
  // stored workload (what an ahead-of-time export compiles again).
  Function function;
  std::string component; // the target component that built it
  std::string key;       // its records' target key in a database (tuned and library kernels)
  bool library = false;
  bool tuned = false;
  int64_t record_id = 0;   // the record it was chosen from (0: none)
  int64_t workload_id = 0; // that record's workload in the database (0: none)
  // The record's mean time in the database (+inf without a record).
  double recorded_seconds = std::numeric_limits<double>::infinity();
  std::string note;          // why it is not what the policy asked for, when it is not
  std::string label() const; // "llvm.cpu tuned (record 12)", "onednn.cpu (record 7)", ...
};

struct KernelSelectionOptions {
  KernelPolicy policy = KernelPolicy::Untuned;
  std::string target = "llvm";                      // the tuning target (target_setup.h)
  std::vector<std::string> libraries{"onednn.cpu"}; // registered ones are used
  const Database* db = nullptr;                     // required for tuned and best
};

class KernelSelector {
public:
  KernelSelector(const PluginHost& host, KernelSelectionOptions options);
  ~KernelSelector();
  // Chooses and builds the kernel of `task`. Throws std::runtime_error naming the task when
  // the chosen implementation does not build.
  TaskKernel select(const GraphTask& task) const;
  const TargetSetup& target() const { return target_; }
  bool has_library() const { return !libraries_.empty(); }
  // The key of this selection's model choices (Database::model_choice): the tuning target's
  // records key, plus its -fpmath option where that is not f32 -- a choice made with the
  // weights in bf16 says nothing about f32 kernels, and the other way round.
  const std::string& choice_key() const { return choice_key_; }

private:
  TaskKernel untuned(const GraphTask& task, std::string note) const;
  std::optional<TaskKernel> tuned(const GraphTask& task) const;
  std::optional<TaskKernel> library_from_record(const GraphTask& task) const;
  // The database's in-model choice for a task's workload there (Database::model_choice), if
  // it names the tuned kernel or a library in use.
  std::optional<ModelChoice> model_choice(int64_t workload_id) const;
  std::optional<TaskKernel> library_build(const GraphTask& task, std::string* why) const;

  KernelSelectionOptions options_;
  TargetSetup target_;
  bool parallel_fallbacks_; // untuned(): spatial_loops_parallel, not the program as written
  std::vector<LibraryTarget> libraries_;
  std::string choice_key_;
};

// The key the in-model choices made with `fpmath` ("f32", "bf16") are filed under, for a
// tuning target whose records are filed under `records_key`: the key without any -fpmath option
// of its own (a target tuned with bf16 products carries one) for f32, else with
// " -fpmath=<fpmath>" after it.
std::string model_choice_key(const std::string& records_key, const std::string& fpmath);

// Every task's kernel, in task order; `progress(done, total)` is called after each.
std::vector<TaskKernel> select_kernels(const KernelSelector& selector,
                                       const std::vector<GraphTask>& tasks,
                                       const std::function<void(size_t, size_t)>& progress = {});

// The kernel of each of `num_groups` groups -- its task's -- as ModelExecutor takes them.
std::vector<std::shared_ptr<const PluginModule>>
group_kernels(const std::vector<GraphTask>& tasks, const std::vector<TaskKernel>& kernels,
              size_t num_groups);

} // namespace mt
