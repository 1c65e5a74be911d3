// Search strategies: where the candidates measured for one task come from. A strategy samples
// and mutates the traces of the task's design spaces, validates them with the postprocessors,
// drops duplicates (structural fingerprint of the scheduled function, across everything
// proposed or measured before, database records included) and hands out batches; the tuner
// measures a batch and reports the results back.
//
// Every strategy is a plugin component (ABI kind search_strategy), the built-in ones too:
// "search.Evolutionary" (REFERENCE.md §3, the default) and "search.ReplayTrace" (random
// samples of the design spaces: the baseline) live in plugins/search_strategies and reach the
// task's design spaces, postprocessors, mutators and cost model through the search context of
// ABI 1.3 (core/search/task_search_backend.h). This header is the tuner's view of one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/plugin/plugin_components.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/search/sampler_components.h"

namespace mt {

// Everything the search of one task uses; owned by the tuner, outlives the strategy.
struct SearchContext {
  Function workload;
  std::vector<std::shared_ptr<Schedule>> design_spaces;
  std::vector<std::unique_ptr<PluginPostproc>> postprocs;
  // Mutators with their selection probabilities (normalised by the strategy).
  std::vector<std::pair<std::unique_ptr<PluginMutator>, double>> mutators;
  // Null: candidates in random order. Shared: a tuning run gives every task one model
  // (TaskSetup::run_model), so that what one task measured steers the others.
  std::shared_ptr<PluginCostModel> cost_model;
  uint64_t seed = 1;
  // Traces (with decisions) of records already measured for this task, best first: the
  // evolutionary search starts from their top part and never proposes them again. A candidate's
  // full trace (Schedule::trace(), postprocessor instructions included) is fine: the part the
  // postprocessors appended after a design space's instructions is dropped before replay.
  std::vector<Trace> measured_traces;
  std::vector<double> measured_seconds; // same order; +inf for a failed record
  // Candidates are generated on this many threads (0: one per core; parallel_sampler.h), each
  // further thread with its own postprocessors and mutators from `sampler_components` (same
  // order and configuration as above). Without a factory, on the calling thread only. The
  // candidates do not depend on the number of threads.
  size_t sampling_threads = 0;
  SamplerComponentFactory sampler_components;
};

struct EvolutionaryOptions {
  size_t population = 512;
  double init_measured_ratio = 0.2; // population seeded from the best 20% of measured records
  size_t init_min_unmeasured = 50;  // and at least this many fresh samples
  int genetic_iterations = 4;
  double mutation_prob = 0.85;
  double eps_greedy = 0.05;       // fraction of each batch picked at random instead of by the model
  size_t max_sample_attempts = 0; // 0 = 8 * population; bounds sampling when most are rejected
};

// Counts behind a search, for progress lines and for the diagnosis when nothing is accepted.
struct SearchStats {
  size_t sampled = 0;       // traces replayed
  size_t replay_failed = 0; // a schedule primitive refused during replay
  size_t rejected = 0;      // a postprocessor refused
  size_t duplicates = 0;
  size_t mutated = 0;
  size_t proposed = 0; // handed out in batches
  // Why candidates were refused: message (first 120 characters) -> count.
  std::map<std::string, size_t> reasons;
  // Who refused: "postproc std.X", "primitive split", "mutator std.Y", "cost model" -> count.
  std::map<std::string, size_t> refused_by;
  // Human-readable summary of the most frequent refusals ("" when none).
  std::string diagnosis() const;
  // Records one refusal (both maps).
  void count_refusal(const std::string& source, const std::string& message);
};

class SearchStrategy {
public:
  virtual ~SearchStrategy() = default;
  // At most `n` new candidates (postprocessed, unmeasured, no duplicates). Fewer, or none,
  // when the space is exhausted or every sample is refused: stats() then says why.
  virtual std::vector<std::shared_ptr<Schedule>> next_batch(size_t n) = 0;
  // Measured run times of the last batch, in its order (+inf for a failed trial). The trials
  // become measured records (the best seed later populations; none is proposed again) and
  // the cost model, if any, is updated with them (failed ones included, as +inf).
  virtual void notify(const std::vector<std::shared_ptr<Schedule>>& batch,
                      const std::vector<double>& run_seconds) = 0;
  virtual const SearchStats& stats() const = 0;
};

class PluginHost;

// The built-in strategies' component names, and the short names the CLI has always accepted.
inline constexpr const char* kEvolutionarySearch = "search.Evolutionary";
inline constexpr const char* kReplayTraceSearch = "search.ReplayTrace";
// "evolutionary" -> search.Evolutionary, "replay" -> search.ReplayTrace, else `name` itself.
std::string resolve_strategy_name(const std::string& name);

// The strategy component `name` (a component name or a short name above) created with
// `config` (JSON text, "" = its defaults) and started on `ctx`, which must outlive it. Throws
// std::invalid_argument naming the registered strategies when none is called `name`.
std::unique_ptr<SearchStrategy> make_search_strategy(PluginHost& host, const std::string& name,
                                                     const std::string& config,
                                                     SearchContext& ctx);
// search.Evolutionary's configuration for `options` (JSON text).
std::string evolutionary_config(const EvolutionaryOptions& options);
std::unique_ptr<SearchStrategy> make_evolutionary_search(PluginHost& host, SearchContext& ctx,
                                                         const EvolutionaryOptions& options = {});
std::unique_ptr<SearchStrategy> make_replay_trace_search(PluginHost& host, SearchContext& ctx);

} // namespace mt
