// Library targets and their records (see library_candidate.h).
#include "core/measure/library_candidate.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/plugin/plugin_host.h"
#include "core/schedule/schedule.h"
#include "core/tuner/target_setup.h"
#include "metatune/plugin_api.h"

namespace mt {

std::vector<LibraryTarget> open_library_targets(const PluginHost& host,
                                                const std::vector<std::string>& names,
                                                const std::string& tuning_component) {
  std::vector<LibraryTarget> out;
  for (const std::string& spec : names) {
    const TargetWords words = split_target(spec);
    const std::string& name = words.word;
    if (name.empty() || name == tuning_component) continue;
    bool seen = false;
    for (const LibraryTarget& l : out)
      seen |= l.component == name;
    if (seen) continue;
    const ComponentInfo* info = host.find(ComponentKind::Target, name);
    if (!info) {
      spdlog::debug("library target '{}' is not registered by any loaded plugin; no library "
                    "candidates from it",
                    name);
      continue;
    }
    LibraryTarget lib;
    lib.component = name;
    lib.target = host.create_target(name, words.config);
    lib.key = name;
    try {
      nlohmann::json dev = nlohmann::json::parse(lib.target->describe_device());
      if (dev.contains("target") && dev["target"].is_string() &&
          !dev["target"].get<std::string>().empty())
        lib.key = dev["target"].get<std::string>();
    } catch (const std::exception& e) {
      spdlog::debug("library target '{}': describe_device() is not JSON ({}); filed as '{}'", name,
                    e.what(), name);
    }
    for (const PluginRecord& r : host.plugins())
      if (r.loaded() && r.name == info->plugin_name) lib.plugin = {r.name, r.version};
    out.push_back(std::move(lib));
  }
  return out;
}

bool is_unsupported(const MeasureResult& r) {
  return r.status == MeasureStatus::Unsupported;
}

TuningRecord library_record(const LibraryTarget& lib, int64_t workload_id, const Function& workload,
                            const MeasureResult& r, uint64_t seed,
                            const std::vector<ArgInfo>& args) {
  TuningRecord rec;
  rec.workload_id = workload_id;
  rec.target = lib.key;
  rec.trace_json = Schedule(workload).trace().to_json();
  if (r.ok())
    rec.run_secs = r.run_secs;
  else
    rec.error = std::string(to_string(r.status)) + (r.error.empty() ? "" : ": " + r.error);
  rec.args = args.empty() ? arg_info_of(workload) : args;
  rec.seed = seed;
  if (!lib.plugin.name.empty()) rec.plugins = {lib.plugin};
  return rec;
}

const TuningRecord* fastest(const std::vector<TuningRecord>& records) {
  const TuningRecord* best = nullptr;
  for (const TuningRecord& r : records)
    if (!r.failed() && (!best || r.mean_secs() < best->mean_secs())) best = &r;
  return best;
}

} // namespace mt
