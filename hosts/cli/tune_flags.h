// The options of a tuning run on the command line, shared by `metatune tune` and
// `metatune model tune`: target, budget, search, measurement, library candidates, the end-of-
// run re-measurements, output. Each command adds what only it has (workloads, a model).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/tuner/space_config.h"
#include "core/tuner/tuner.h"

namespace mt {
class PluginHost;
}

namespace mt::cli {

struct TuneFlags {
  TuneOptions tune;
  std::vector<std::string> plugin_paths;
  bool json = false;
  bool quiet = false;
  std::string log_level;
  double min_repeat_ms = 100;
  std::vector<std::string> libraries; // --library; empty = TuneOptions' default
  bool no_library = false;
  bool no_compare = false;
  // The search space: a tuning-config file's edits, then each --rules / --mutators /
  // --postprocs value in order (core/tuner/space_config.h). Each command names the file's
  // option itself (`tune --config`, `model tune --tuning-config`).
  std::string space_config;
  std::vector<std::string> rules, mutators, postprocs;
  std::vector<CLI::Option*> tolerances; // --rtol, --atol: given, they are kept as they are
};

void add_tune_flags(CLI::App* cmd, TuneFlags& f);
// The edits of the search space the flags ask for, in the order they apply.
std::vector<SpaceEdit> space_edits(const TuneFlags& f);
// After parsing, with the plugins loaded: the options the flags imply (repeat time, library
// targets -- warning about unregistered ones --, comparison, reference cache, search space).
void finish_tune_options(TuneFlags& f, const PluginHost& host);
// The plugin search path: --plugin-path directories first, then the default ones.
std::vector<std::filesystem::path> plugin_search_path(const std::vector<std::string>& first);

} // namespace mt::cli
