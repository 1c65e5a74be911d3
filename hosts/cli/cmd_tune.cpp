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
#include "core/tuner/design_space_summary.h"
#include "core/tuner/space_config.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tune_log.h"
#include "core/tuner/tune_progress.h"
#include "core/tuner/tuner.h"
#include "core/workload/library.h"
#include "core/workload/model_tasks.h"
#include "hosts/cli/command.h"
#include "hosts/cli/stop_signal.h"
#include "hosts/cli/tune_flags.h"
#include "hosts/cli/tune_report.h"

namespace mt::cli {

namespace {

struct TuneCliOptions : TuneFlags {
  std::vector<std::string> workloads;
  std::string model; // --model: a built-in model name or a model JSON file
  bool show_space = false;
};

int run_tune(TuneCliOptions& opt) {
  configure_logging(opt.log_level);
  PluginHost host;
  host.discover(plugin_search_path(opt.plugin_paths));
  if (opt.show_space) {
    // Looking needs no device: a GPU target gives the limits of the architecture asked for.
    // (A tuning run gets its space edits from finish_tune_options.)
    TargetSetup target = setup_target(host, opt.tune.target, /*need_device=*/false);
    SearchSpace space = resolve_search_space(host, target, space_edits(opt));
    std::vector<DesignSpaceSummary> spaces;
    for (const auto& w : opt.workloads)
      spaces.push_back(summarize_design_spaces(host, target, space, w, opt.tune.seed));
    if (opt.json) {
      nlohmann::json j = nlohmann::json::parse(search_space_json(space));
      if (!target.unavailable.empty()) j["unavailable"] = target.unavailable;
      j["design_spaces"] = nlohmann::json::array();
      for (const auto& s : spaces)
        j["design_spaces"].push_back(nlohmann::json::parse(design_spaces_json(s)));
      std::cout << j.dump() << "\n";
      return 0;
    }
    std::cout << format_search_space(space);
    if (!target.unavailable.empty())
      std::cout << "\n(no device here: " << target.unavailable
                << "; the rules see the limits of the architecture asked for)\n";
    for (const auto& s : spaces)
      std::cout << format_design_spaces(s);
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
  finish_tune_options(opt, host);
  opt.tune.model_tasks = !opt.model.empty();

  const std::atomic<bool>* stop = install_stop_handlers();
  std::unique_ptr<ProgressPrinter> progress;
  if (!opt.quiet) progress = std::make_unique<ProgressPrinter>(Terminal::standard_error());
  TuneResult r = tune(host, tasks, opt.tune, progress.get(), stop);
  print_summary(r);
  if (!r.interrupted) print_comparison(r);
  if (opt.json) std::cout << to_json(r, opt.tune).dump() << "\n";
  std::cout << std::flush;
  return r.interrupted ? 130 : 0;
}

RegisterCommand reg("tune", [](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<TuneCliOptions>();
  opt->tune.db_path = "tune.db";
  CLI::App* cmd = app.add_subcommand(
      "tune", "Tune workloads for a target; every measured candidate goes to the database. "
              "Ctrl-C stops cleanly (exit status 130); the same command again resumes up to "
              "the same --trials total.");
  cmd->add_option("-w,--workload", opt->workloads,
                  "Workload spec, e.g. 'matmul(M=1024,N=1024,K=1024)' (repeatable)");
  cmd->add_option("--model", opt->model,
                  "Tune every task of a model under the one budget: a built-in model "
                  "(`metatune models`) or a JSON file of tasks (docs/tuning.md)");
  add_tune_flags(cmd, *opt);
  cmd->add_option("--config", opt->space_config,
                  "Tuning-config file: JSON with fields rules, mutators, postprocs holding the "
                  "same entries (applied before the flags)");
  cmd->add_flag("--show-space", opt->show_space,
                "Print the rules, mutators (with weights) and postprocessors the run would use "
                "and where each comes from, and with -w the design spaces they make of each "
                "workload; then exit without tuning (no device needed)");
  return [opt] { return run_tune(*opt); };
});

} // namespace

} // namespace mt::cli
