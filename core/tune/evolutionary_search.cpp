// Evolutionary search (REFERENCE.md §3, MetaSchedule's default): a population seeded from the
// best measured records and fresh samples, evolved for a few generations by mutating parents
// drawn in proportion to their predicted score, and a batch made of the best-scored candidates
// never measured nor proposed plus an epsilon share of fresh random samples.
//
// Cost model use: predict() scores every generation; notify() passes the whole measured batch
// to update(), failed trials as +inf (MetaSchedule teaches its model that they are slow too);
// should the model refuse that, it gets the successful trials only. Any exception from a mutator or
// the cost model costs only the candidate (or, for the model, the scores of that generation, drawn
// at random instead) and is counted in stats().
#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/schedule/random.h"
#include "core/tune/candidate_sampler.h"
#include "core/tune/search_strategy.h"

namespace mt {

namespace {

// How often one slot of the next generation is retried when mutation or replay fails.
constexpr int kMaxChildAttempts = 10;

struct Measured {
  Trace trace; // before post-processing
  double seconds = 0;
};

class EvolutionarySearch : public SearchStrategy {
public:
  EvolutionarySearch(SearchContext& ctx, const EvolutionaryOptions& options)
      : ctx_(ctx), opt_(options), rng_(ctx.seed), sampler_(ctx, stats_) {
    if (opt_.population == 0) opt_.population = 1;
    if (opt_.max_sample_attempts == 0) opt_.max_sample_attempts = 8 * opt_.population;
    double total = 0;
    for (const auto& [m, p] : ctx_.mutators)
      total += std::max(p, 0.0);
    // All-zero probabilities: the mutators are taken as equally likely.
    for (const auto& [m, p] : ctx_.mutators)
      mutator_probs_.push_back(total > 0 ? std::max(p, 0.0) / total : 1.0);
  }

  std::vector<std::shared_ptr<Schedule>> next_batch(size_t n) override {
    if (!initialized_) load_measured();
    last_batch_.clear();
    if (n == 0 || !sampler_.has_design_spaces()) return {};
    std::vector<Candidate> population = init_population();
    if (population.empty()) return {};
    // Every scored candidate not yet proposed, by hash: the pool the batch is picked from.
    std::unordered_map<uint64_t, std::pair<Candidate, double>> pool;
    for (int iter = 0;; ++iter) {
      std::vector<double> scores = score(population);
      for (size_t i = 0; i < population.size(); ++i)
        if (!seen_.count(population[i].hash)) {
          auto [it, fresh] = pool.try_emplace(population[i].hash, population[i], scores[i]);
          if (!fresh) it->second.second = std::max(it->second.second, scores[i]);
        }
      if (iter >= opt_.genetic_iterations) break;
      population = evolve(population, scores);
      if (population.empty()) break;
    }
    std::vector<std::pair<Candidate, double>> ranked;
    ranked.reserve(pool.size());
    for (auto& [h, cs] : pool)
      ranked.push_back(std::move(cs));
    // Ties broken by hash so that the order does not depend on the hash map's.
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first.hash < b.first.hash;
    });
    size_t n_random = static_cast<size_t>(std::floor(static_cast<double>(n) * opt_.eps_greedy));
    size_t n_best = n - n_random;
    std::vector<std::shared_ptr<Schedule>> batch;
    size_t next_ranked = 0;
    auto take = [&](Candidate c) {
      seen_.insert(c.hash);
      batch.push_back(c.sch);
      last_batch_.push_back(std::move(c));
    };
    for (; next_ranked < ranked.size() && batch.size() < n_best; ++next_ranked)
      take(std::move(ranked[next_ranked].first));
    // The random share, and whatever the model's share could not fill.
    size_t budget = opt_.max_sample_attempts;
    while (batch.size() < n && budget > 0) {
      --budget;
      std::optional<Candidate> c = sampler_.sample_fresh(rng_);
      if (!c) continue;
      if (seen_.count(c->hash)) {
        ++stats_.duplicates;
        continue;
      }
      take(std::move(*c));
    }
    // Sampling ran dry (a small space): fall back to the rest of the scored pool.
    for (; next_ranked < ranked.size() && batch.size() < n; ++next_ranked)
      if (!seen_.count(ranked[next_ranked].first.hash)) take(std::move(ranked[next_ranked].first));
    stats_.proposed += batch.size();
    return batch;
  }

  void notify(const std::vector<std::shared_ptr<Schedule>>& batch,
              const std::vector<double>& run_seconds) override {
    if (batch.size() != run_seconds.size())
      throw std::invalid_argument("EvolutionarySearch::notify: " + std::to_string(batch.size()) +
                                  " candidates but " + std::to_string(run_seconds.size()) +
                                  " run times");
    std::unordered_map<const Schedule*, const Candidate*> ours;
    for (const Candidate& c : last_batch_)
      ours[c.sch.get()] = &c;
    std::vector<std::shared_ptr<Schedule>> ok;
    std::vector<double> ok_seconds;
    for (size_t i = 0; i < batch.size(); ++i) {
      auto it = ours.find(batch[i].get());
      // A schedule from elsewhere: its trace may hold postprocessor instructions.
      Trace trace =
          it != ours.end() ? it->second->trace : sampler_.strip_postproc(batch[i]->trace());
      insert_measured({std::move(trace), run_seconds[i]});
      if (std::isfinite(run_seconds[i]) && run_seconds[i] > 0) {
        ok.push_back(batch[i]);
        ok_seconds.push_back(run_seconds[i]);
      }
    }
    if (!ctx_.cost_model || batch.empty()) return;
    try {
      ctx_.cost_model->update(batch, run_seconds);
      return;
    } catch (const std::exception& e) {
      stats_.count_refusal("cost model", std::string("update: ") + e.what());
    }
    if (ok.empty() || ok.size() == batch.size()) return;
    try {
      ctx_.cost_model->update(ok, ok_seconds);
    } catch (const std::exception& e) {
      stats_.count_refusal("cost model", std::string("update: ") + e.what());
    }
  }

  const SearchStats& stats() const override { return stats_; }

private:
  // Hashes the records already measured (never proposed again) and keeps their traces, best
  // first, for the initial populations.
  void load_measured() {
    initialized_ = true;
    for (size_t i = 0; i < ctx_.measured_traces.size(); ++i) {
      double s = i < ctx_.measured_seconds.size() ? ctx_.measured_seconds[i]
                                                  : std::numeric_limits<double>::infinity();
      Trace trace = sampler_.strip_postproc(ctx_.measured_traces[i]);
      // Seeded apart from rng_: the records do not shift the stream of fresh samples.
      std::optional<Candidate> c = sampler_.replay(trace, ctx_.seed);
      if (!c) continue; // counted in stats; cannot be proposed again anyway
      seen_.insert(c->hash);
      insert_measured({std::move(c->trace), s});
    }
  }

  void insert_measured(Measured m) {
    auto pos = std::upper_bound(measured_.begin(), measured_.end(), m.seconds,
                                [](double s, const Measured& x) { return s < x.seconds; });
    measured_.insert(pos, std::move(m));
  }

  std::vector<Candidate> init_population() {
    std::vector<Candidate> pop;
    std::unordered_set<uint64_t> in_pop;
    size_t from_measured =
        static_cast<size_t>(static_cast<double>(opt_.population) * opt_.init_measured_ratio);
    for (const Measured& m : measured_) {
      if (pop.size() >= from_measured || !std::isfinite(m.seconds)) break;
      std::optional<Candidate> c = sampler_.replay(m.trace, rng_.next());
      if (c && in_pop.insert(c->hash).second) pop.push_back(std::move(*c));
    }
    size_t target = std::max(opt_.population, pop.size() + opt_.init_min_unmeasured);
    for (size_t budget = opt_.max_sample_attempts; pop.size() < target && budget > 0; --budget) {
      std::optional<Candidate> c = sampler_.sample_fresh(rng_);
      if (!c) continue;
      if (!in_pop.insert(c->hash).second) {
        ++stats_.duplicates;
        continue;
      }
      pop.push_back(std::move(*c));
    }
    return pop;
  }

  // Predicted scores (higher = faster); random without a model or when it fails.
  std::vector<double> score(const std::vector<Candidate>& pop) {
    std::vector<double> s;
    if (ctx_.cost_model) {
      std::vector<std::shared_ptr<Schedule>> schs;
      schs.reserve(pop.size());
      for (const Candidate& c : pop)
        schs.push_back(c.sch);
      try {
        s = ctx_.cost_model->predict(schs);
        if (s.size() != pop.size())
          throw std::runtime_error("returned " + std::to_string(s.size()) + " scores for " +
                                   std::to_string(pop.size()) + " candidates");
        for (double& x : s)
          if (!std::isfinite(x)) x = 0;
        return s;
      } catch (const std::exception& e) {
        stats_.count_refusal("cost model", std::string("predict: ") + e.what());
        s.clear();
      }
    }
    for (size_t i = 0; i < pop.size(); ++i)
      s.push_back(rng_.uniform_real());
    return s;
  }

  std::vector<Candidate> evolve(const std::vector<Candidate>& pop,
                                const std::vector<double>& scores) {
    // Roulette weights: scores shifted to be positive (a model may predict negatives).
    double lo = *std::min_element(scores.begin(), scores.end());
    std::vector<double> weights;
    for (double x : scores)
      weights.push_back(lo < 0 ? x - lo : x);
    if (std::accumulate(weights.begin(), weights.end(), 0.0) <= 0)
      std::fill(weights.begin(), weights.end(), 1.0);
    std::vector<Candidate> next;
    std::unordered_set<uint64_t> in_next;
    for (size_t slot = 0; slot < opt_.population; ++slot) {
      for (int attempt = 0; attempt < kMaxChildAttempts; ++attempt) {
        const Candidate& parent = pop[static_cast<size_t>(rng_.categorical(weights))];
        std::optional<Candidate> child;
        if (!ctx_.mutators.empty() && rng_.uniform_real() < opt_.mutation_prob) {
          child = mutate(parent);
          if (!child) continue;
        } else {
          child = parent;
        }
        if (!in_next.insert(child->hash).second) {
          ++stats_.duplicates;
          continue;
        }
        next.push_back(std::move(*child));
        break;
      }
    }
    return next;
  }

  std::optional<Candidate> mutate(const Candidate& parent) {
    size_t k = static_cast<size_t>(rng_.categorical(mutator_probs_));
    const PluginMutator& m = *ctx_.mutators[k].first;
    std::optional<Trace> t;
    try {
      t = m.apply(parent.trace, rng_);
    } catch (const std::exception& e) {
      stats_.count_refusal("mutator " + m.info().name, e.what());
      return std::nullopt;
    }
    if (!t) return std::nullopt; // nothing to mutate
    std::optional<Candidate> c = sampler_.replay(*t, rng_.next());
    if (c) ++stats_.mutated;
    return c;
  }

  SearchContext& ctx_;
  EvolutionaryOptions opt_;
  RandomEngine rng_;
  SearchStats stats_;
  CandidateSampler sampler_;
  std::vector<double> mutator_probs_;
  bool initialized_ = false;
  std::unordered_set<uint64_t> seen_; // measured or proposed
  std::vector<Measured> measured_;    // best first
  std::vector<Candidate> last_batch_;
};

} // namespace

std::unique_ptr<SearchStrategy> make_evolutionary_search(SearchContext& ctx,
                                                         const EvolutionaryOptions& options) {
  return std::make_unique<EvolutionarySearch>(ctx, options);
}

} // namespace mt
