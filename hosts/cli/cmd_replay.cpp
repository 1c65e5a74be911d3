// `metatune replay --db FILE --record ID [--print-ir] [--json]`: rebuilds the kernel of a
// record (its trace replayed on the stored workload), builds it for the record's target,
// checks its output against the reference interpreter (its result cached on disk, see
// --reference-cache) and measures it again. Exit status 0 when the kernel is correct and was
// timed, 1 otherwise.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/ir/printer.h"
#include "core/measure/cold_inputs.h"
#include "core/measure/measure.h"
#include "core/measure/reference_cache.h"
#include "core/plugin/plugin_host.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tune_log.h"
#include "core/workload/flop_count.h"
#include "hosts/cli/command.h"

namespace mt::cli {

namespace {

struct ReplayOptions {
  std::string db;
  int64_t record = 0;
  std::string target;
  std::string out;
  bool print_ir = false;
  bool json = false;
  int repeats = 3;
  double min_repeat_ms = 100;
  bool flush_cache = false;
  std::string cold_inputs = "auto"; // auto = as the database's records were measured
  std::vector<std::string> weights; // params timed packed, by name or position
  std::vector<std::string> plugin_paths;
  std::string log_level;
  std::string reference_cache = default_reference_cache_dir(); // 'none' = no cache
};

// Per param of `workload`: named in `names` (a param's name or position), as
// MeasureOptions::weights takes them. Throws std::invalid_argument naming one that is not.
std::vector<bool> weight_flags(const Function& workload, const std::vector<std::string>& names) {
  std::vector<bool> out(workload.params.size(), false);
  for (const std::string& n : names) {
    size_t at = workload.params.size();
    if (!n.empty() && n.find_first_not_of("0123456789") == std::string::npos) {
      at = std::stoul(n);
    } else {
      for (size_t i = 0; i < workload.params.size(); ++i)
        if (workload.params[i]->name == n) at = i;
    }
    if (at >= workload.params.size()) {
      std::string known;
      for (size_t i = 0; i < workload.params.size(); ++i)
        known += (i ? ", " : "") + std::to_string(i) + " '" + workload.params[i]->name + "'";
      throw std::invalid_argument("--weights: '" + n + "' is not a param of " + workload.name +
                                  " (" + known + ")");
    }
    out[at] = true;
  }
  return out;
}

int run_replay(const ReplayOptions& opt) {
  configure_logging(opt.log_level);
  DatabaseOptions dbo;
  dbo.read_only = true;
  std::unique_ptr<Database> db = Database::open(opt.db, dbo);
  TuningRecord rec = db->record(opt.record);
  Function workload = db->workload_function(rec.workload_id);
  std::optional<WorkloadEntry> entry = db->workload(rec.workload_id);
  std::string name = entry && !entry->spec.empty() ? entry->spec : workload.name;
  Function scheduled = replay(rec, workload);
  if (opt.print_ir) std::cout << print(scheduled) << "\n";

  std::vector<std::filesystem::path> search;
  for (const auto& p : opt.plugin_paths)
    search.emplace_back(p);
  for (const auto& p : PluginHost::default_search_path())
    search.push_back(p);
  PluginHost host;
  host.discover(search);
  TargetSetup target = setup_target(host, opt.target.empty() ? rec.target : opt.target);
  if (!opt.out.empty())
    std::cerr << "warning: target '" << target.component
              << "' exports no ahead-of-time library through the plugin interface; --out "
              << opt.out << " not written, the kernel is only rebuilt and measured\n";

  MeasureOptions mo;
  mo.repeats = opt.repeats;
  mo.min_repeat_seconds = opt.min_repeat_ms * 1e-3;
  mo.flush_cache = opt.flush_cache;
  // Compared with the recorded time, the new one must be measured the same way.
  mo.cold_inputs = opt.cold_inputs == "on" ||
                   (opt.cold_inputs == "auto" &&
                    cold_inputs_under(cold_policy_of(db->record_setting(kMeasuredInputs), opt.db),
                                      workload, count_flops(workload)));
  if (rounds_products_to_bf16(target)) mo = with_bf16_products_tolerance(mo);
  // The weights packed as the record was timed (its args say which), unless --weights says.
  if (opt.weights.empty()) {
    for (const ArgInfo& a : rec.args)
      mo.weights.push_back(a.weight);
  } else if (opt.weights != std::vector<std::string>{"none"}) {
    mo.weights = weight_flags(workload, opt.weights);
  }
  Measurer measurer(*target.target, mo);
  Reference ref = load_or_compute_reference(
      workload, rec.seed, opt.reference_cache == "none" ? std::string() : opt.reference_cache);
  MeasureResult r = measurer.measure(ref, {scheduled}).at(0);

  double flops = count_flops(workload);
  double secs = 0;
  for (double s : r.run_secs)
    secs += s;
  if (!r.run_secs.empty()) secs /= static_cast<double>(r.run_secs.size());
  double recorded = rec.mean_secs();
  if (opt.json) {
    nlohmann::json j;
    j["record"] = rec.id;
    j["workload"] = name;
    j["target"] = target.target_string;
    j["target_component"] = target.component;
    j["ok"] = r.ok();
    j["status"] = to_string(r.status);
    if (!r.error.empty()) j["error"] = r.error;
    j["run_secs"] = r.run_secs;
    j["seconds"] = r.ok() ? nlohmann::json(secs) : nlohmann::json();
    j["gflops"] = r.ok() && secs > 0 ? flops / secs * 1e-9 : 0;
    j["recorded_seconds"] = std::isfinite(recorded) ? nlohmann::json(recorded) : nlohmann::json();
    j["packed_args"] = r.packed_args;
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "record " << rec.id << ": " << name << " on "
              << short_target_name(target.target_string) << "\n";
    if (r.ok()) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "  correct; %.4f ms = %.2f GFLOPS", secs * 1e3,
                    secs > 0 ? flops / secs * 1e-9 : 0.0);
      std::cout << buf;
      if (std::isfinite(recorded)) {
        std::snprintf(buf, sizeof buf, " (recorded %.4f ms)", recorded * 1e3);
        std::cout << buf;
      }
      if (r.packed_args) std::cout << "; " << r.packed_args << " weight(s) packed";
      std::cout << "\n";
    } else {
      std::cout << "  " << to_string(r.status) << (r.error.empty() ? "" : ": " + r.error) << "\n";
    }
  }
  return r.ok() ? 0 : 1;
}

RegisterCommand reg("replay", [](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<ReplayOptions>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Rebuild the kernel of a database record, check it against the reference and "
                "measure it again");
  cmd->add_option("--db", opt->db, "Tuning database")->required();
  cmd->add_option("--record", opt->record, "Record id (see `metatune best`)")->required();
  cmd->add_flag("--print-ir", opt->print_ir, "Print the scheduled tensor program");
  cmd->add_option("--target", opt->target, "Build for this target instead of the record's");
  cmd->add_option("--out", opt->out,
                  "Write the kernel as a shared library (when the target can; else a warning)");
  cmd->add_option("--repeats", opt->repeats, "Timed repeats")->capture_default_str();
  cmd->add_option("--min-repeat-ms", opt->min_repeat_ms, "Minimum time per repeat")
      ->capture_default_str();
  cmd->add_flag("--flush-cache", opt->flush_cache, "Evict the caches before each repeat");
  cmd->add_option("--cold-inputs", opt->cold_inputs,
                  "Each call on the next of many copies of the inputs (on, off; auto = as the "
                  "database's records were timed)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("--weights", opt->weights,
                  "Params that are a model's weights (names or positions, repeatable; 'none': "
                  "no param): given packed where the kernel takes them so, once, as `model "
                  "tune` times a model's tasks (default: as the record was timed)")
      ->delimiter(',');
  cmd->add_option("--reference-cache", opt->reference_cache,
                  "Directory keeping the reference results between runs; 'none' = no cache")
      ->capture_default_str();
  cmd->add_option("--plugin-path", opt->plugin_paths, "Also load plugins from this directory");
  cmd->add_flag("--json", opt->json, "Print one JSON object");
  cmd->add_option("--log-level", opt->log_level, "trace, debug, info, warn, error or off");
  return [opt] { return run_replay(*opt); };
});

} // namespace

} // namespace mt::cli
