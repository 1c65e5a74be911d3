// `metatune best --db FILE [--workload SPEC] [--target T] [-k N] [--json]`: the fastest
// records of each workload in a tuning database, per target, with their speed in GFLOPS. A
// library target's record (oneDNN's implementation, `--library`) is shown next to the tuned
// records of the same workload, with the implementation that is chosen (the faster one).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/graph/kernel_selection.h"
#include "core/measure/cold_inputs.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tune_log.h"
#include "core/workload/flop_count.h"
#include "core/workload/library.h"
#include "hosts/cli/command.h"

namespace mt::cli {

namespace {

struct BestOptions {
  std::string db;
  std::string workload;
  std::string target;
  size_t k = 1;
  bool json = false;
  std::string log_level;
  std::vector<std::string> libraries{"onednn.cpu"};
};

// Whether the record was timed with some of its params packed (a model's weights, `model
// tune`): faster than a record of the same kernel timed with them as given.
bool weights_packed(const TuningRecord& r) {
  for (const ArgInfo& a : r.args)
    if (a.weight) return true;
  return false;
}

bool is_library(const std::string& target, const std::vector<std::string>& libraries) {
  for (const auto& l : libraries)
    if (target_matches(target, l)) return true;
  return false;
}

std::string first_word(const std::string& s) {
  return s.substr(0, s.find(' '));
}

int run_best(const BestOptions& opt) {
  configure_logging(opt.log_level);
  DatabaseOptions dbo;
  dbo.read_only = true;
  std::unique_ptr<Database> db = Database::open(opt.db, dbo);
  std::vector<WorkloadEntry> entries;
  if (!opt.workload.empty()) {
    std::string spec = canonical_workload_spec(opt.workload);
    std::optional<WorkloadEntry> e = db->find_workload(make_workload(spec));
    if (!e) throw std::runtime_error("workload '" + spec + "' is not in " + opt.db);
    entries.push_back(*e);
  } else {
    entries = db->workloads();
  }

  const ColdPolicy policy = cold_policy_of(db->record_setting(kMeasuredInputs), opt.db);
  nlohmann::json out = nlohmann::json::array();
  size_t shown = 0;
  for (const WorkloadEntry& w : entries) {
    std::vector<TuningRecord> all = db->records(w.id);
    // Targets of this workload, with their record and failure counts.
    std::map<std::string, std::pair<size_t, size_t>> targets;
    // The fastest successful library record of the workload (whatever --target says: it is
    // what the tuned kernels are compared with).
    const TuningRecord* library = nullptr;
    bool any_tuned = false;
    for (const TuningRecord& r : all) {
      bool lib = is_library(r.target, opt.libraries);
      if (lib && !r.failed() && (!library || r.mean_secs() < library->mean_secs())) library = &r;
      if (target_matches(r.target, opt.target)) {
        auto& c = targets[r.target];
        ++c.first;
        c.second += r.failed();
        any_tuned |= !lib;
      }
    }
    if (targets.empty()) continue;
    Function workload = db->workload_function(w.id);
    double flops = count_flops(workload);
    // Times on cold inputs are slower than hot ones for the same kernel: said with them.
    bool cold = cold_inputs_under(policy, workload, flops);
    std::string name = w.spec.empty() ? "workload " + std::to_string(w.id) : w.spec;
    auto gflops_of = [&](double secs) { return secs > 0 ? flops / secs * 1e-9 : 0; };
    for (const auto& [target, counts] : targets) {
      bool lib_target = is_library(target, opt.libraries);
      // In text, a library's record is shown inside the tuned targets' blocks.
      bool text = !opt.json && !(lib_target && any_tuned);
      std::vector<TuningRecord> top = db->top_k(w.id, target, std::max<size_t>(1, opt.k));
      nlohmann::json j;
      j["workload"] = name;
      j["workload_id"] = w.id;
      j["target"] = target;
      j["records"] = counts.first;
      j["failed"] = counts.second;
      j["flops"] = flops;
      j["best"] = nlohmann::json::array();
      j["library_target"] = lib_target;
      j["cold_inputs"] = cold;
      if (text) {
        std::cout << name << "  on  " << short_target_name(target) << "\n  " << counts.first
                  << " record(s), " << counts.second << " failed"
                  << (cold ? ", timed on cold inputs" : "") << "\n";
        if (top.empty()) std::cout << "  no successful record\n";
      }
      for (const TuningRecord& r : top) {
        double secs = r.mean_secs();
        double gflops = gflops_of(secs);
        j["best"].push_back({{"record", r.id},
                             {"seconds", secs},
                             {"gflops", gflops},
                             {"run_secs", r.run_secs},
                             {"seed", r.seed},
                             {"created_at_ms", r.created_at_ms},
                             {"weights_packed", weights_packed(r)}});
        if (text) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "  record %-8lld %10.4f ms  %9.2f GFLOPS%s\n",
                        static_cast<long long>(r.id), secs * 1e3, gflops,
                        weights_packed(r) ? "  (weights packed)" : "");
          std::cout << buf;
        }
      }
      if (!lib_target && library) {
        double tuned = top.empty() ? std::numeric_limits<double>::infinity() : top[0].mean_secs();
        double lib_secs = library->mean_secs();
        bool lib_chosen = lib_secs < tuned;
        j["library"] = {{"target", library->target},
                        {"record", library->id},
                        {"seconds", lib_secs},
                        {"gflops", gflops_of(lib_secs)},
                        {"weights_packed", weights_packed(*library)}};
        j["chosen"] = lib_chosen ? "library" : "tuned";
        j["implementation"] = lib_chosen ? library->target : target;
        j["ratio_to_library"] = top.empty() ? 0.0 : lib_secs / tuned;
        if (text) {
          char buf[400];
          std::snprintf(
              buf, sizeof buf, "  record %-8lld %10.4f ms  %9.2f GFLOPS  (library: %s%s)\n",
              static_cast<long long>(library->id), lib_secs * 1e3, gflops_of(lib_secs),
              library->target.c_str(), weights_packed(*library) ? "; weights packed" : "");
          std::cout << buf;
          if (top.empty())
            std::snprintf(buf, sizeof buf, "  chosen: %s (library; no tuned kernel)\n",
                          library->target.c_str());
          else
            std::snprintf(buf, sizeof buf, "  chosen: %s (%s; tuned = %.2f of %s)\n",
                          lib_chosen ? library->target.c_str() : first_word(target).c_str(),
                          lib_chosen ? "library" : "tuned", lib_secs / tuned,
                          library->target.c_str());
          std::cout << buf;
        }
      }
      // `model tune`'s comparisons inside the model, which a model's `best` kernels follow:
      // with the weights in f32, and with `--fpmath bf16` (kept apart, KernelSelector).
      for (const std::string fpmath : {"f32", "bf16"}) {
        const bool bf16 = fpmath == "bf16";
        std::optional<ModelChoice> c =
            lib_target ? std::nullopt : db->model_choice(w.id, model_choice_key(target, fpmath));
        if (!c) continue;
        j[bf16 ? "model_choice_bf16" : "model_choice"] = {{"implementation", c->implementation},
                                                          {"tuned_seconds", c->tuned_seconds},
                                                          {"library_seconds", c->library_seconds}};
        if (text) {
          char buf[320];
          std::snprintf(
              buf, sizeof buf,
              "  in the model%s: tuned %.4f ms, library %.4f ms per call -> %s (what a "
              "model's best%s runs)\n",
              bf16 ? " with bf16 weights" : "", c->tuned_seconds * 1e3, c->library_seconds * 1e3,
              c->implementation == "tuned" ? first_word(target).c_str() : c->implementation.c_str(),
              bf16 ? " --fpmath bf16" : "");
          std::cout << buf;
        }
      }
      out.push_back(std::move(j));
      ++shown;
    }
  }
  for (const std::string& p : db->take_problems())
    std::cerr << "warning: " << p << "\n";
  if (opt.json)
    std::cout << out.dump() << "\n";
  else if (shown == 0)
    std::cout << "no records" << (opt.target.empty() ? "" : " for target '" + opt.target + "'")
              << " in " << opt.db << "\n";
  return 0;
}

RegisterCommand reg("best", [](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<BestOptions>();
  CLI::App* cmd = app.add_subcommand(
      "best", "Show the fastest records of a tuning database (per workload and target)");
  cmd->add_option("--db", opt->db, "Tuning database")->required();
  cmd->add_option("-w,--workload", opt->workload, "Only this workload spec");
  cmd->add_option("--target", opt->target,
                  "Only records of this target ('llvm' matches every 'llvm ...' target)");
  cmd->add_option("-k,--top", opt->k, "How many records per workload and target")
      ->capture_default_str();
  cmd->add_option("--library", opt->libraries,
                  "Targets whose records are library implementations, shown next to the tuned "
                  "records (repeatable)")
      ->capture_default_str();
  cmd->add_flag("--json", opt->json, "Print one JSON array");
  cmd->add_option("--log-level", opt->log_level, "trace, debug, info, warn, error or off");
  return [opt] { return run_best(*opt); };
});

} // namespace

} // namespace mt::cli
