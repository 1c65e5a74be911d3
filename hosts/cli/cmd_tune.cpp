// `metatune tune --workload SPEC [--workload SPEC]... | --model NAME|FILE --target llvm
// --trials N --db FILE`:
// tunes the workloads under one trial budget, committing every measured candidate to the
// database as it is measured. Progress on stderr; a summary on stdout, and with --json the
// last line of stdout is one JSON object. Exit status: 0 done (budget reached or search
// exhausted), 130 stopped by Ctrl-C / SIGINT or SIGTERM (everything measured is kept; the same
// command resumes), 1 error. With a library target (oneDNN) each task also gets the library's
// implementation measured and recorded, and at the end a side-by-side line per task says how
// the tuned kernel compares and which one is chosen. --rules / --mutators / --postprocs /
// --config edit the search space; --show-space prints it, with where each component came
// from, and exits. See docs/tuning.md.
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/plugin/plugin_host.h"
#include "core/tuner/space_config.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tune_log.h"
#include "core/tuner/tune_progress.h"
#include "core/tuner/tuner.h"
#include "core/workload/library.h"
#include "core/workload/model_tasks.h"
#include "hosts/cli/command.h"

namespace mt::cli {

namespace {

struct TuneCliOptions {
  std::vector<std::string> workloads;
  std::string model; // --model: a built-in model name or a model JSON file
  std::vector<std::string> plugin_paths;
  TuneOptions tune;
  bool json = false;
  bool quiet = false;
  std::string log_level;
  double min_repeat_ms = 100;
  std::vector<std::string> libraries; // --library; empty = TuneOptions' default
  bool no_library = false;
  bool no_compare = false;
  // The search space: --config FILE's edits, then each --rules / --mutators / --postprocs
  // value in order (core/tuner/space_config.h).
  std::string space_config;
  std::vector<std::string> rules, mutators, postprocs;
  bool show_space = false;
};

// --reference-cache: 'none' (or empty) = no cache.
std::string reference_cache_option(const std::string& value) {
  return value == "none" ? std::string() : value;
}

// The edits of the search space the options ask for, in the order they apply.
std::vector<SpaceEdit> space_edits(const TuneCliOptions& opt) {
  std::vector<SpaceEdit> edits;
  if (!opt.space_config.empty()) edits = read_space_config_file(opt.space_config);
  auto add = [&](ComponentKind kind, const std::vector<std::string>& values, const char* flag) {
    for (const std::string& v : values)
      edits.push_back(parse_space_edit(kind, v, {SpaceSource::Option, flag}));
  };
  add(ComponentKind::ScheduleRule, opt.rules, "--rules flag");
  add(ComponentKind::Mutator, opt.mutators, "--mutators flag");
  add(ComponentKind::Postproc, opt.postprocs, "--postprocs flag");
  return edits;
}

// "oneDNN" for the oneDNN target, else the component's name.
std::string library_display_name(const std::string& component) {
  return component.rfind("onednn", 0) == 0 ? "oneDNN" : component;
}

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) {
  // A second Ctrl-C means "now": leave without waiting for the trial in flight.
  if (g_stop.exchange(true)) _exit(130);
}

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
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
  j["tasks"] = nlohmann::json::array();
  for (const TaskResult& t : r.tasks) {
    nlohmann::json tj;
    tj["workload"] = t.spec;
    tj["workload_id"] = t.workload_id;
    tj["weight"] = t.weight;
    tj["flops"] = t.flops;
    tj["prior_records"] = t.prior_records;
    tj["trials"] = t.trials;
    tj["failed"] = t.failed;
    tj["best_seconds"] = number_or_null(t.best_seconds);
    tj["best_gflops"] = t.best_gflops();
    tj["best_record_id"] = t.best_record_id;
    tj["verified_records"] = t.verified;
    if (t.verified) tj["recorded_best_seconds"] = number_or_null(t.recorded_best_seconds);
    tj["exhausted"] = t.exhausted;
    if (!t.diagnosis.empty()) tj["diagnosis"] = t.diagnosis;
    tj["implementation"] = t.chosen.empty() ? nlohmann::json() : nlohmann::json(t.chosen);
    tj["library_measured"] = t.library_measured;
    if (!t.library_target.empty()) {
      tj["library_target"] = t.library_target;
      tj["library_record_id"] = t.library_record_id;
      tj["library_seconds"] = number_or_null(t.library_seconds);
      // On the figures the choice was made on: side by side when compared, else the records.
      tj["library_gflops"] = t.library_gflops();
      if (t.library_component.rfind("onednn", 0) == 0) tj["onednn_gflops"] = t.library_gflops();
      tj["tuned_gflops"] = t.tuned_gflops();
      tj["ratio_to_library"] = t.ratio_to_library();
      tj["figures"] = t.compared() ? "side_by_side" : "records";
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

void print_summary(const TuneResult& r) {
  std::cout << (r.interrupted ? "tuning interrupted" : "tuning done") << " on "
            << short_target_name(r.target) << ": " << r.trials << " trial(s) in " << std::fixed;
  std::cout.precision(1);
  std::cout << r.tuning_seconds << " s, " << r.records_total << " record(s) in the database\n";
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
  std::cout.unsetf(std::ios::fixed);
  std::cout.precision(6);
}

// One line per task with a library implementation: the tuned kernel against the library's,
// side by side when they were re-measured together, and which implementation is used.
void print_comparison(const TuneResult& r) {
  for (const TaskResult& t : r.tasks) {
    if (t.library_target.empty() || t.chosen.empty() || !std::isfinite(t.best_seconds)) continue;
    std::string lib = library_display_name(t.library_component);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s: metatune %.1f GFLOPS, %s %.1f GFLOPS -> %.2f of %s (%s chosen)%s",
                  t.spec.c_str(), t.tuned_gflops(), lib.c_str(), t.library_gflops(),
                  t.ratio_to_library(), lib.c_str(), t.chosen.c_str(),
                  t.compared() ? "" : " [database records; not re-measured side by side]");
    std::cout << buf << "\n";
  }
}

int run_tune(TuneCliOptions& opt) {
  configure_logging(opt.log_level);
  opt.tune.measure.min_repeat_seconds = opt.min_repeat_ms * 1e-3;
  std::vector<std::filesystem::path> search;
  for (const auto& p : opt.plugin_paths)
    search.emplace_back(p);
  for (const auto& p : PluginHost::default_search_path())
    search.push_back(p);
  PluginHost host;
  host.discover(search);
  opt.tune.space = space_edits(opt);
  if (opt.show_space) {
    SearchSpace space =
        resolve_search_space(host, setup_target(host, opt.tune.target), opt.tune.space);
    std::cout << (opt.json ? search_space_json(space) + "\n" : format_search_space(space));
    return 0;
  }

  // The model's tasks (weights = calls per inference), then any --workload; a workload given
  // twice is one task with the weights added.
  ModelTasks all;
  if (!opt.model.empty()) {
    all = resolve_model(opt.model);
    double calls = 0;
    for (const auto& t : all.tasks)
      calls += t.weight;
    std::cerr << "model " << all.name << ": " << all.tasks.size() << " tasks, " << calls
              << " operator calls per inference\n";
  }
  for (const auto& w : opt.workloads)
    all.tasks.push_back({"", canonical_workload_spec(w), 1});
  if (all.tasks.empty()) throw std::invalid_argument("tune: give --workload SPEC or --model NAME");
  merge_duplicate_tasks(all);
  std::vector<TuneTask> tasks;
  for (const auto& t : all.tasks)
    tasks.push_back({t.workload, {}, t.weight});
  if (opt.no_library) {
    opt.tune.library_targets.clear();
  } else if (!opt.libraries.empty()) {
    opt.tune.library_targets = opt.libraries;
    for (const auto& l : opt.libraries)
      if (!host.find(ComponentKind::Target, l))
        std::cerr << "warning: --library " << l
                  << ": no such target component is registered; not used\n";
  }
  opt.tune.compare = !opt.no_compare;
  opt.tune.reference_cache_dir = reference_cache_option(opt.tune.reference_cache_dir);

  install_stop_handlers();
  std::unique_ptr<ProgressPrinter> progress;
  if (!opt.quiet) progress = std::make_unique<ProgressPrinter>(Terminal::standard_error());
  TuneResult r = tune(host, tasks, opt.tune, progress.get(), &g_stop);
  print_summary(r);
  if (!r.interrupted) print_comparison(r);
  if (opt.json) std::cout << to_json(r, opt.tune).dump() << "\n";
  std::cout << std::flush;
  return r.interrupted ? 130 : 0;
}

RegisterCommand reg("tune", [](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<TuneCliOptions>();
  TuneOptions& t = opt->tune;
  t.db_path = "tune.db";
  CLI::App* cmd = app.add_subcommand(
      "tune", "Tune workloads for a target; every measured candidate goes to the database. "
              "Ctrl-C stops cleanly (exit status 130); the same command again resumes up to "
              "the same --trials total.");
  cmd->add_option("-w,--workload", opt->workloads,
                  "Workload spec, e.g. 'matmul(M=1024,N=1024,K=1024)' (repeatable)");
  cmd->add_option("--model", opt->model,
                  "Tune every task of a model under the one budget: a built-in model "
                  "(`metatune models`) or a JSON file of tasks (docs/tuning.md)");
  cmd->add_option("--target", t.target,
                  "Target: 'llvm', 'llvm -mcpu=... -mattr=...', or a "
                  "target component name")
      ->capture_default_str();
  cmd->add_option("--trials", t.trials,
                  "Records wanted in the database for these workloads and target, those "
                  "already there included")
      ->capture_default_str();
  cmd->add_option("--db", t.db_path, "Tuning database (SQLite file)")->capture_default_str();
  cmd->add_option("--seed", t.seed, "Random seed")->capture_default_str();
  cmd->add_option("--strategy", t.strategy,
                  "Search strategy component: search.Evolutionary, search.ReplayTrace or a "
                  "plugin's (`metatune plugins` lists them; 'evolutionary' and 'replay' are "
                  "short names); NAME{json} configures it")
      ->capture_default_str();
  cmd->add_option("--scheduler", t.scheduler, "Task scheduler: gradient or round-robin")
      ->capture_default_str();
  cmd->add_option("--cost-model", t.cost_model,
                  "Cost model component (cost.XGBoost, cost.Random) or 'none'")
      ->capture_default_str();
  cmd->add_option("--cost-model-file", t.cost_model_path,
                  "Load the cost model from this file if it exists; save it after each batch");
  cmd->add_option("--per-task-cap", t.per_task_cap, "Records per workload at most (0 = none)")
      ->capture_default_str();
  cmd->add_option("--batch-size", t.batch_size, "Candidates measured per scheduler turn")
      ->capture_default_str();
  cmd->add_option("--repeats", t.measure.repeats, "Timed repeats per candidate")
      ->capture_default_str();
  cmd->add_option("--min-repeat-ms", opt->min_repeat_ms,
                  "Each repeat calls the kernel for at least this long")
      ->capture_default_str();
  cmd->add_flag("--flush-cache", t.measure.flush_cache, "Evict the caches before each repeat");
  cmd->add_option("--build-timeout", t.measure.build_timeout_s, "Seconds per build")
      ->capture_default_str();
  cmd->add_option("--run-timeout", t.measure.run_timeout_s, "Seconds per measurement")
      ->capture_default_str();
  cmd->add_option("--parallel-builds", t.measure.parallel_builds,
                  "Candidates built at once (0 = one per core)")
      ->capture_default_str();
  cmd->add_option("--population", t.evolutionary.population, "Evolutionary search population")
      ->capture_default_str();
  cmd->add_option("--sampling-threads", t.sampling_threads,
                  "Threads the search samples candidates on (0 = one per core; the candidates "
                  "are the same for any number)")
      ->capture_default_str();
  cmd->add_option("--library", opt->libraries,
                  "Library target whose implementations compete with the tuned kernels "
                  "(repeatable; default onednn.cpu when registered)");
  cmd->add_flag("--no-library", opt->no_library, "No library implementations");
  cmd->add_flag("--no-compare", opt->no_compare,
                "Skip the side-by-side re-measurement of tuned and library kernels at the end");
  cmd->add_option("--compare-repeats", t.compare_repeats,
                  "Alternating timed repeats of each implementation in the comparison")
      ->capture_default_str();
  cmd->add_option("--verify-top", t.verify.top,
                  "At the end, measure this many of the fastest records again (fresh workers) "
                  "and report the one with the best median; 0 = trust the single measurements")
      ->capture_default_str();
  cmd->add_option("--verify-rounds", t.verify.rounds,
                  "Fresh-worker measurements of each record in that re-measurement")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--rules", opt->rules,
                  "Schedule rules: '+NAME{json}' adds to the target's, '-NAME' drops one, "
                  "'A,B{json}' replaces the list (comma-separated; repeatable; docs/tuning.md)");
  cmd->add_option("--mutators", opt->mutators,
                  "Mutators, likewise, with selection weights: '+NAME=0.1', '-NAME', "
                  "'A=0.9,B{json}=0.1'");
  cmd->add_option("--postprocs", opt->postprocs,
                  "Postprocessors, likewise: '+NAME{json}', '-NAME', or 'A,B{json}' instead of "
                  "the target's");
  cmd->add_option("--config", opt->space_config,
                  "Tuning-config file: JSON with fields rules, mutators, postprocs holding the "
                  "same entries (applied before the flags)");
  cmd->add_flag("--show-space", opt->show_space,
                "Print the rules, mutators (with weights) and postprocessors the run would use "
                "and where each comes from, then exit without tuning");
  cmd->add_option("--reference-cache", t.reference_cache_dir,
                  "Directory keeping the reference results between runs; 'none' = no cache "
                  "(default: $METATUNE_CACHE_DIR, else $XDG_CACHE_HOME/metatune, else "
                  "~/.cache/metatune; then /reference)")
      ->capture_default_str();
  cmd->add_option("--plugin-path", opt->plugin_paths,
                  "Also load plugins from this directory (first; repeatable)");
  cmd->add_flag("--json", opt->json, "End the output with one line of JSON");
  cmd->add_flag("-q,--quiet", opt->quiet, "No progress display");
  cmd->add_option("--log-level", opt->log_level,
                  "trace, debug, info, warn, error or off (default: $METATUNE_LOG, else info)");
  return [opt] { return run_tune(*opt); };
});

} // namespace

} // namespace mt::cli
