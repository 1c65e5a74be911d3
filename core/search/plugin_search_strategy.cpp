// Search strategies as plugin components (see search_strategy.h): the tuner's SearchStrategy
// over a plugin's strategy, for both generations of the ABI. A 1.3 strategy searches through
// the task's search context (TaskSearchBackend); a version-1 strategy is handed the design
// spaces and returns schedules, which are post-processed and deduplicated here.
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/ir/structural.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/random.h"
#include "core/search/search_strategy.h"
#include "core/search/task_search_backend.h"

namespace mt {

namespace {

// A strategy that fails costs its task the batch, never the run: the failure is counted and
// the task reports it as the reason it proposes nothing.
template <typename F> auto guarded(SearchStats& stats, const PluginComponent& c, F&& f) {
  try {
    return f();
  } catch (const PluginError& e) {
    // The source names the component already; the path would crowd out the reason.
    std::string what = e.what();
    std::string prefix = e.plugin_path() + ": " + e.component() + ": ";
    stats.count_refusal("strategy " + c.info().name,
                        what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what);
  } catch (const std::exception& e) {
    stats.count_refusal("strategy " + c.info().name, e.what());
  }
  return decltype(f())();
}

class ContextStrategy : public SearchStrategy {
public:
  ContextStrategy(SearchContext& ctx, std::unique_ptr<PluginSearchStrategy> plugin)
      : backend_(ctx, stats_), handle_(backend_), plugin_(std::move(plugin)) {}

  std::vector<std::shared_ptr<Schedule>> next_batch(size_t n) override {
    last_.clear();
    if (n == 0 || !backend_.has_design_spaces()) return {};
    if (!started_) {
      started_ = true;
      failed_ = !guarded(stats_, *plugin_, [&] {
        plugin_->start(&handle_);
        return true;
      });
    }
    if (failed_) return {};
    std::vector<CandidatePtr> got =
        guarded(stats_, *plugin_, [&] { return plugin_->next_batch(n); });
    backend_.release_threads(); // idle until this task's next batch
    std::vector<std::shared_ptr<Schedule>> batch;
    for (CandidatePtr& c : got) {
      if (!c || !seen_.insert(c->hash).second) {
        // The host keeps its promise of never measuring a candidate twice.
        if (c) stats_.count_refusal("strategy " + plugin_->info().name, "proposed a duplicate");
        continue;
      }
      batch.push_back(c->sch);
      last_.emplace(c->sch.get(), std::move(c));
    }
    stats_.proposed += batch.size();
    return batch;
  }

  void notify(const std::vector<std::shared_ptr<Schedule>>& batch,
              const std::vector<double>& run_seconds) override {
    if (batch.size() != run_seconds.size())
      throw std::invalid_argument("search strategy notify: " + std::to_string(batch.size()) +
                                  " candidates but " + std::to_string(run_seconds.size()) +
                                  " run times");
    std::vector<CandidatePtr> measured;
    for (const auto& sch : batch) {
      auto it = last_.find(sch.get());
      measured.push_back(it != last_.end() ? it->second : backend_.adopt(sch));
      seen_.insert(measured.back()->hash);
    }
    if (!started_ || failed_ || measured.empty()) return;
    guarded(stats_, *plugin_, [&] {
      plugin_->notify_measured(measured, run_seconds);
      return true;
    });
  }

  const SearchStats& stats() const override { return stats_; }

private:
  // Declared in this order so that the plugin's instance is released before its context.
  SearchStats stats_;
  TaskSearchBackend backend_;
  mt_search_context_s handle_;
  std::unique_ptr<PluginSearchStrategy> plugin_;
  bool started_ = false, failed_ = false;
  std::unordered_set<uint64_t> seen_;
  std::unordered_map<const Schedule*, CandidatePtr> last_;
};

// ABI version 1: generate(design spaces, rng) -> schedules.
class GenerateStrategy : public SearchStrategy {
public:
  GenerateStrategy(SearchContext& ctx, std::unique_ptr<PluginSearchStrategy> plugin)
      : ctx_(ctx), rng_(ctx.seed), sampler_(ctx, stats_), plugin_(std::move(plugin)) {
    for (const Trace& t : ctx_.measured_traces)
      if (auto c = sampler_.replay(sampler_.strip_postproc(t), ctx_.seed)) seen_.insert(c->hash);
  }

  std::vector<std::shared_ptr<Schedule>> next_batch(size_t n) override {
    if (n == 0 || ctx_.design_spaces.empty()) return {};
    std::vector<std::shared_ptr<Schedule>> got =
        guarded(stats_, *plugin_, [&] { return plugin_->generate(ctx_.design_spaces, rng_, n); });
    std::vector<std::shared_ptr<Schedule>> batch;
    for (auto& sch : got) {
      if (batch.size() == n || !sch) break;
      ++stats_.sampled;
      if (!sampler_.postprocess(sch)) continue;
      if (!seen_.insert(structural_fingerprint(sch->func())).second) {
        ++stats_.duplicates;
        continue;
      }
      batch.push_back(sch);
    }
    stats_.proposed += batch.size();
    return batch;
  }

  void notify(const std::vector<std::shared_ptr<Schedule>>& batch,
              const std::vector<double>& run_seconds) override {
    guarded(stats_, *plugin_, [&] {
      plugin_->notify(batch, run_seconds);
      return true;
    });
  }

  const SearchStats& stats() const override { return stats_; }

private:
  SearchContext& ctx_;
  RandomEngine rng_;
  SearchStats stats_;
  CandidateSampler sampler_;
  std::unique_ptr<PluginSearchStrategy> plugin_;
  std::unordered_set<uint64_t> seen_;
};

} // namespace

std::string resolve_strategy_name(const std::string& name) {
  if (name == "evolutionary") return kEvolutionarySearch;
  if (name == "replay" || name == "replay-trace") return kReplayTraceSearch;
  return name;
}

std::unique_ptr<SearchStrategy> make_search_strategy(PluginHost& host, const std::string& name,
                                                     const std::string& config,
                                                     SearchContext& ctx) {
  std::string component = resolve_strategy_name(name);
  if (!host.find(ComponentKind::SearchStrategy, component)) {
    std::string names;
    for (const ComponentInfo& c : host.components(ComponentKind::SearchStrategy))
      names += (names.empty() ? "" : ", ") + c.name;
    throw std::invalid_argument(
        "search strategy '" + name + "' is not registered by any loaded plugin (strategies: " +
        (names.empty() ? "none -- is the search_strategies plugin on the plugin path?" : names) +
        ")");
  }
  std::unique_ptr<PluginSearchStrategy> plugin = host.create_search_strategy(component, config);
  if (plugin->uses_search_context())
    return std::make_unique<ContextStrategy>(ctx, std::move(plugin));
  return std::make_unique<GenerateStrategy>(ctx, std::move(plugin));
}

std::string evolutionary_config(const EvolutionaryOptions& o) {
  nlohmann::json j = {{"population", o.population},
                      {"init_measured_ratio", o.init_measured_ratio},
                      {"init_min_unmeasured", o.init_min_unmeasured},
                      {"genetic_iterations", o.genetic_iterations},
                      {"mutation_prob", o.mutation_prob},
                      {"eps_greedy", o.eps_greedy},
                      {"max_sample_attempts", o.max_sample_attempts}};
  return j.dump();
}

std::unique_ptr<SearchStrategy> make_evolutionary_search(PluginHost& host, SearchContext& ctx,
                                                         const EvolutionaryOptions& options) {
  return make_search_strategy(host, kEvolutionarySearch, evolutionary_config(options), ctx);
}

std::unique_ptr<SearchStrategy> make_replay_trace_search(PluginHost& host, SearchContext& ctx) {
  return make_search_strategy(host, kReplayTraceSearch, "", ctx);
}

} // namespace mt
