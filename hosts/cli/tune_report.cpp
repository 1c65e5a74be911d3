// End-of-run reports of the tuning commands (see tune_report.h).
#include "hosts/cli/tune_report.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "core/tuner/target_setup.h"

namespace mt::cli {

std::string library_display_name(const std::string& component) {
  return component.rfind("onednn", 0) == 0 ? "oneDNN" : component;
}

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

nlohmann::json to_json(const TuneResult& r, const TuneOptions& o) {
  nlohmann::json j;
  std::string workloads;
  for (const TaskResult& t : r.tasks)
    workloads += (workloads.empty() ? "" : "; ") + t.spec;
  j["workload"] = workloads;
  j["target"] = r.target;
  j["target_component"] = r.target_component;
  j["db"] = o.db_path;
  j["trials"] = r.trials;
  j["budget"] = o.trials;
  j["records_total"] = r.records_total;
  j["best_seconds"] = number_or_null(r.best_seconds());
  j["best_gflops"] = r.best_gflops();
  j["chosen_seconds"] = number_or_null(r.chosen_seconds());
  j["chosen_gflops"] = r.chosen_gflops();
  j["tuning_seconds"] = r.tuning_seconds;
  j["interrupted"] = r.interrupted;
  j["time_budget_reached"] = r.time_budget_reached;
  j["tasks"] = nlohmann::json::array();
  for (const TaskResult& t : r.tasks) {
    nlohmann::json tj;
    tj["workload"] = t.spec;
    tj["workload_id"] = t.workload_id;
    tj["weight"] = t.weight;
    tj["flops"] = t.flops;
    tj["cold_inputs"] = t.cold_inputs;
    tj["prior_records"] = t.prior_records;
    tj["trials"] = t.trials;
    tj["failed"] = t.failed;
    tj["best_seconds"] = number_or_null(t.best_seconds);
    tj["best_gflops"] = t.best_gflops();
    tj["best_record_id"] = t.best_record_id;
    tj["verified_records"] = t.verified;
    if (t.verified) tj["recorded_best_seconds"] = number_or_null(t.recorded_best_seconds);
    tj["time_seconds"] = {{"setup", t.time.setup},         {"search", t.time.search},
                          {"measuring", t.time.measuring}, {"builds_summed", t.time.builds},
                          {"runs_summed", t.time.runs},    {"updates", t.time.updates},
                          {"checks", t.time.checks}};
    tj["exhausted"] = t.exhausted;
    if (!t.diagnosis.empty()) tj["diagnosis"] = t.diagnosis;
    tj["implementation"] = t.chosen.empty() ? nlohmann::json() : nlohmann::json(t.chosen);
    tj["library_measured"] = t.library_measured;
    if (!t.library_target.empty()) {
      tj["library_target"] = t.library_target;
      tj["library_record_id"] = t.library_record_id;
      tj["library_seconds"] = number_or_null(t.library_seconds);
      // On the figures the choice was made on: the records' means (side-by-side times
      // included when compared), as `metatune best` shows them.
      tj["library_gflops"] = t.library_gflops();
      if (t.library_component.rfind("onednn", 0) == 0) tj["onednn_gflops"] = t.library_gflops();
      tj["tuned_gflops"] = t.tuned_gflops();
      tj["ratio_to_library"] = t.ratio_to_library();
    }
    if (t.compared()) {
      double tg = t.flops / t.compare_tuned_seconds * 1e-9;
      double lg = t.flops / t.compare_library_seconds * 1e-9;
      tj["compare"] = {{"metatune_seconds", t.compare_tuned_seconds},
                       {"library_seconds", t.compare_library_seconds},
                       {"metatune_gflops", tg},
                       {"library_gflops", lg},
                       {"ratio", tg / lg},
                       {"repeats", o.compare_repeats},
                       {"chosen", t.chosen}};
    } else if (!t.compare_error.empty()) {
      tj["compare_error"] = t.compare_error;
    }
    j["tasks"].push_back(std::move(tj));
  }
  return j;
}

namespace {

void print_time_split(const std::string& lead, const TaskResult::Time& t) {
  std::cout.precision(1);
  std::cout << lead << "setup " << t.setup << " s, search " << t.search << " s, measuring "
            << t.measuring << " s (builds " << t.builds << " s summed over parallel workers, runs "
            << t.runs << " s one at a time), model updates " << t.updates << " s, final checks "
            << t.checks << " s\n";
}

} // namespace

void print_summary(const TuneResult& r) {
  std::cout << (r.interrupted ? "tuning interrupted" : "tuning done") << " on "
            << short_target_name(r.target) << ": " << r.trials << " trial(s) in " << std::fixed;
  std::cout.precision(1);
  std::cout << r.tuning_seconds << " s, " << r.records_total << " record(s) in the database"
            << (r.time_budget_reached ? " (time budget reached)" : "") << "\n";
  for (const TaskResult& t : r.tasks) {
    std::cout << "  " << t.spec << ": " << t.trials << " trial(s) (" << t.failed << " failed), ";
    if (std::isfinite(t.best_seconds)) {
      std::cout.precision(4);
      std::cout << "best " << t.best_seconds * 1e3 << " ms";
      std::cout.precision(2);
      std::cout << " = " << t.best_gflops() << " GFLOPS (record " << t.best_record_id << ")";
      if (t.verified)
        std::cout << "\n    (the " << t.verified << " fastest records measured again in fresh "
                  << "workers; before that the fastest measured "
                  << t.flops / t.recorded_best_seconds * 1e-9 << " GFLOPS)";
    } else {
      std::cout << "no successful candidate";
    }
    if (t.exhausted && !t.diagnosis.empty()) std::cout << "\n    search exhausted: " << t.diagnosis;
    std::cout << "\n";
    if (t.trials) print_time_split("    time: ", t.time);
    if (!t.library_target.empty()) {
      std::cout.precision(4);
      std::cout << "    " << t.library_component << ": " << t.library_seconds * 1e3 << " ms";
      std::cout.precision(2);
      std::cout << " = " << t.flops / t.library_seconds * 1e-9 << " GFLOPS (record "
                << t.library_record_id << (t.library_measured ? ", measured now" : "") << ")\n";
    }
  }
  if (r.tasks.size() > 1 && std::isfinite(r.best_seconds())) {
    std::cout.precision(4);
    std::cout << "  weighted total: " << r.best_seconds() * 1e3 << " ms";
    std::cout.precision(2);
    std::cout << " = " << r.best_gflops() << " GFLOPS\n";
  }
  // With many tasks (a model's), where the run's time went is the sum of theirs.
  if (r.tasks.size() > 1) {
    TaskResult::Time all;
    for (const TaskResult& t : r.tasks)
      all += t.time;
    print_time_split("  time, all " + std::to_string(r.tasks.size()) + " tasks: ", all);
  }
  std::cout.unsetf(std::ios::fixed);
  std::cout.precision(6);
}

void print_comparison(const TuneResult& r) {
  for (const TaskResult& t : r.tasks) {
    if (t.library_target.empty() || t.chosen.empty() || !std::isfinite(t.best_seconds)) continue;
    std::string lib = library_display_name(t.library_component);
    char side[96] = "";
    if (t.compared())
      std::snprintf(side, sizeof side, "; side by side now: %.2f",
                    t.compare_library_seconds / t.compare_tuned_seconds);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s: metatune %.1f GFLOPS, %s %.1f GFLOPS -> %.2f of %s (%s chosen; records' "
                  "means%s)",
                  t.spec.c_str(), t.tuned_gflops(), lib.c_str(), t.library_gflops(),
                  t.ratio_to_library(), lib.c_str(), t.chosen.c_str(), side);
    std::cout << buf << "\n";
  }
}

} // namespace mt::cli
