// Library implementations as tuning candidates: a library target (e.g. "onednn.cpu") builds a
// workload it implements -- recognised by the target, by structure -- and refuses the others
// with an "unsupported" build error. Per task the tuner measures the library's implementation
// once, through the same measurer as every candidate (forked worker, output checked against
// the reference), and files it under the library target's own key with the trace of an
// unscheduled schedule, so that `replay` rebuilds it from the workload with that target.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/database/database.h"
#include "core/measure/measure.h"

namespace mt {

class PluginHost;
class PluginTarget;

struct LibraryTarget {
  std::string component; // registered name ("onednn.cpu")
  std::string key;       // database key: describe_device()'s "target", else the component name
  std::unique_ptr<PluginTarget> target;
  PluginInfo plugin; // the plugin that registered it (name, version), for the records
};

// The library targets among `names` that are registered (the others are skipped with a
// debug log line: a library is optional), except `tuning_component` (tuning a library target
// makes no sense of it as its own competitor). A name may carry options as a target string
// does ("onednn.cpu -fpmath=bf16": the words after the component's name go to its
// configuration, split_target); the first of a component's names counts.
std::vector<LibraryTarget> open_library_targets(const PluginHost& host,
                                                const std::vector<std::string>& names,
                                                const std::string& tuning_component);

// True if the build failed because the target does not implement the workload (plugin status
// MT_ERROR_UNSUPPORTED) -- "not offered", not a failed trial.
bool is_unsupported(const MeasureResult& r);

// The record of a library measurement: the unscheduled workload's (empty) trace, the library
// plugin, the run times or the error. `args`: the workload's, as the task marks its weights
// (empty: arg_info_of(workload)).
TuningRecord library_record(const LibraryTarget& lib, int64_t workload_id, const Function& workload,
                            const MeasureResult& r, uint64_t seed,
                            const std::vector<ArgInfo>& args = {});

// Fastest successful record among `records`; nullptr when none succeeded.
const TuningRecord* fastest(const std::vector<TuningRecord>& records);

} // namespace mt
