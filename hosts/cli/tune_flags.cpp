// Command-line options of a tuning run (see tune_flags.h).
#include "hosts/cli/tune_flags.h"

#include <iostream>

#include "core/plugin/plugin_host.h"
#include "core/tuner/target_setup.h"

namespace mt::cli {

void add_tune_flags(CLI::App* cmd, TuneFlags& f) {
  TuneOptions& t = f.tune;
  cmd->add_option("--target", t.target,
                  "Target: 'llvm', 'llvm -mcpu=... -mattr=...', or a "
                  "target component name")
      ->capture_default_str();
  cmd->add_option("--trials", t.trials,
                  "Records wanted in the database for these workloads and target, those "
                  "already there included")
      ->capture_default_str();
  cmd->add_option("--time-budget", t.time_budget_seconds,
                  "Seconds: measure no further candidates once the run has taken this long "
                  "(references and library measurements included); the best is then verified "
                  "and compared as after --trials. At least one batch is measured")
      ->check(CLI::PositiveNumber);
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
  cmd->add_flag("--cost-model-per-task", t.cost_model_per_task,
                "A cost model per task, trained on its own records only (default: one for the "
                "run, trained on every task's)");
  cmd->add_option("--first-pass-share", t.first_pass_share,
                  "Gradient scheduler: the share of the trials the first pass (one batch per "
                  "task) may use when the budget is short; the rest goes where the weighted "
                  "latency drops most")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  cmd->add_option("--per-task-cap", t.per_task_cap, "Records per workload at most (0 = none)")
      ->capture_default_str();
  cmd->add_option("--batch-size", t.batch_size,
                  "Candidates measured per scheduler turn (0 = about a quarter of each "
                  "task's trials, 16 to 64)")
      ->capture_default_str();
  cmd->add_option("--repeats", t.measure.repeats, "Timed repeats per candidate")
      ->capture_default_str();
  cmd->add_option("--min-repeat-ms", f.min_repeat_ms,
                  "Each repeat calls the kernel for at least this long")
      ->capture_default_str();
  cmd->add_flag("--flush-cache", t.measure.flush_cache, "Evict the caches before each repeat");
  cmd->add_option("--cold-inputs", t.cold_inputs,
                  "Time each call on the next of many copies of the inputs, spread over twice "
                  "the last-level cache, so that they come from memory as a model's weights do "
                  "in a decode step: on, off, memory-bound (the tasks under 4 flops per input "
                  "byte), or auto = the database's policy, and for a new database memory-bound "
                  "for a model's tasks on a CPU target, else off. A database keeps one policy "
                  "(docs/tuning.md)")
      ->check(CLI::IsMember({"auto", "on", "off", "memory-bound"}))
      ->capture_default_str();
  // The f32 rounding of a sum grows with its length and the partial sums' size: a 4096-long
  // dot product of [-1, 1) inputs is off by a few 1e-5 in any order, so a matmul of K = 4096
  // needs a larger atol than the default.
  f.tolerances = {
      cmd->add_option("--rtol", t.measure.rtol,
                      "Relative tolerance of the output check against the reference (a target "
                      "whose products round to bf16, `-fpmath=bf16`, is checked at bf16's: "
                      "rtol 2^-6, atol 2^-7 of the output's largest value, unless given)")
          ->capture_default_str(),
      cmd->add_option("--atol", t.measure.atol,
                      "Absolute tolerance of the output check against the reference")
          ->capture_default_str()};
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
  cmd->add_option("--library", f.libraries,
                  "Library target whose implementations compete with the tuned kernels "
                  "(repeatable; default: the target's vendor library when registered, onednn.cpu "
                  "on a CPU, cublas on a cuda device)");
  cmd->add_flag("--no-library", f.no_library, "No library implementations");
  cmd->add_flag("--no-compare", f.no_compare,
                "Skip the side-by-side re-measurement of tuned and library kernels at the end");
  cmd->add_option("--compare-repeats", t.compare_repeats,
                  "Alternating timed repeats of each implementation in the comparison")
      ->capture_default_str();
  cmd->add_option("--verify-top", t.verify.top,
                  "At the end, measure at most this many of the fastest records again (fresh "
                  "workers) and report the one with the best mean; 0 = trust the single "
                  "measurements")
      ->capture_default_str();
  cmd->add_option("--verify-per", t.verify.records_per_verified,
                  "One record measured again per this many successful records of the task (at "
                  "least 1, at most --verify-top); 1 = always --verify-top")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--verify-rounds", t.verify.rounds,
                  "Fresh-worker measurements of each record in that re-measurement")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--reference-by-target-flops", t.reference_by_target_flops,
                  "Tasks of at least this many flops get their reference result from the "
                  "target's unscheduled build instead of the interpreter (0 = always)")
      ->capture_default_str();
  cmd->add_option("--reference-run-as-trial", t.reference_run_as_trial_seconds,
                  "Seconds: a reference computed by the target that ran at least this long is "
                  "also the unscheduled workload's trial, not run again (inf = always measure)")
      ->capture_default_str();
  cmd->add_option("--reference-cache", t.reference_cache_dir,
                  "Directory keeping the reference results between runs; 'none' = no cache "
                  "(default: $METATUNE_CACHE_DIR, else $XDG_CACHE_HOME/metatune, else "
                  "~/.cache/metatune; then /reference)")
      ->capture_default_str();
  cmd->add_option("--rules", f.rules,
                  "Schedule rules: '+NAME{json}' adds to the target's, '-NAME' drops one, "
                  "'A,B{json}' replaces the list (comma-separated; repeatable; docs/tuning.md)");
  cmd->add_option("--mutators", f.mutators,
                  "Mutators, likewise, with selection weights: '+NAME=0.1', '-NAME', "
                  "'A=0.9,B{json}=0.1'");
  cmd->add_option("--postprocs", f.postprocs,
                  "Postprocessors, likewise: '+NAME{json}', '-NAME', or 'A,B{json}' instead of "
                  "the target's");
  cmd->add_option("--plugin-path", f.plugin_paths,
                  "Also load plugins from this directory (first; repeatable)");
  cmd->add_flag("--json", f.json, "End the output with one line of JSON");
  cmd->add_flag("-q,--quiet", f.quiet, "No progress display");
  cmd->add_option("--log-level", f.log_level,
                  "trace, debug, info, warn, error or off (default: $METATUNE_LOG, else info)");
}

std::vector<SpaceEdit> space_edits(const TuneFlags& f) {
  std::vector<SpaceEdit> edits;
  if (!f.space_config.empty()) edits = read_space_config_file(f.space_config);
  auto add = [&](ComponentKind kind, const std::vector<std::string>& values, const char* flag) {
    for (const std::string& v : values)
      edits.push_back(parse_space_edit(kind, v, {SpaceSource::Option, flag}));
  };
  add(ComponentKind::ScheduleRule, f.rules, "--rules flag");
  add(ComponentKind::Mutator, f.mutators, "--mutators flag");
  add(ComponentKind::Postproc, f.postprocs, "--postprocs flag");
  return edits;
}

void finish_tune_options(TuneFlags& f, const PluginHost& host) {
  f.tune.space = space_edits(f);
  f.tune.measure.min_repeat_seconds = f.min_repeat_ms * 1e-3;
  for (const CLI::Option* o : f.tolerances)
    f.tune.measure.tolerance_given = f.tune.measure.tolerance_given || o->count() > 0;
  if (f.no_library) {
    f.tune.library_targets.clear();
  } else if (!f.libraries.empty()) {
    f.tune.library_targets = f.libraries;
    for (const auto& l : f.libraries)
      if (!host.find(ComponentKind::Target, split_target(l).word))
        std::cerr << "warning: --library " << l
                  << ": no such target component is registered; not used\n";
  }
  f.tune.compare = !f.no_compare;
  // --reference-cache: 'none' (or empty) = no cache.
  if (f.tune.reference_cache_dir == "none") f.tune.reference_cache_dir.clear();
}

std::vector<std::filesystem::path> plugin_search_path(const std::vector<std::string>& first) {
  std::vector<std::filesystem::path> search(first.begin(), first.end());
  for (const auto& p : PluginHost::default_search_path())
    search.push_back(p);
  return search;
}

} // namespace mt::cli
