// search.Evolutionary (see evolutionary_search.hpp).
#include "evolutionary_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace mt::search {

namespace {

// How often one slot of the next generation is retried when mutation or replay fails.
constexpr int kMaxChildAttempts = 10;

[[noreturn]] void bad_config(const std::string& why) {
  throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "search.Evolutionary: " + why);
}

} // namespace

EvolutionarySearch::EvolutionarySearch(std::string_view config) {
  if (config.empty()) return;
  nlohmann::json j = nlohmann::json::parse(config, nullptr, false);
  if (!j.is_object()) bad_config("the configuration is not a JSON object: " + std::string(config));
  for (auto& [key, v] : j.items()) {
    auto need_number = [&] {
      if (!v.is_number()) bad_config("field '" + key + "' must be a number");
    };
    need_number();
    if (key == "population")
      cfg_.population = v.get<size_t>();
    else if (key == "init_measured_ratio")
      cfg_.init_measured_ratio = v.get<double>();
    else if (key == "init_min_unmeasured")
      cfg_.init_min_unmeasured = v.get<size_t>();
    else if (key == "genetic_iterations")
      cfg_.genetic_iterations = v.get<int>();
    else if (key == "mutation_prob")
      cfg_.mutation_prob = v.get<double>();
    else if (key == "eps_greedy")
      cfg_.eps_greedy = v.get<double>();
    else if (key == "max_sample_attempts")
      cfg_.max_sample_attempts = v.get<size_t>();
    else
      bad_config("unknown field '" + key +
                 "' (known: population, init_measured_ratio, init_min_unmeasured, "
                 "genetic_iterations, mutation_prob, eps_greedy, max_sample_attempts)");
  }
}

void EvolutionarySearch::start(sdk::SearchContext ctx) {
  ctx_ = ctx;
  rng_ = sdk::Random(ctx.seed());
  if (cfg_.population == 0) cfg_.population = 1;
  if (cfg_.max_sample_attempts == 0) cfg_.max_sample_attempts = 8 * cfg_.population;
  for (size_t m = 0; m < ctx_.num_mutators(); ++m)
    mutator_probs_.push_back(ctx_.mutator_probability(m));
  // The records already measured are never proposed again; their traces (best first) seed
  // the initial populations. Replayed with the task's seed, apart from rng_, so that the
  // records do not shift the stream of fresh samples.
  std::vector<sdk::Trace> traces;
  std::vector<double> secs;
  for (size_t i = 0; i < ctx_.num_measured(); ++i) {
    auto [t, s] = ctx_.measured(i);
    traces.push_back(std::move(t));
    secs.push_back(s);
  }
  std::vector<sdk::Candidate> replayed =
      ctx_.replay(traces, std::vector<uint64_t>(traces.size(), ctx_.seed()));
  for (size_t i = 0; i < replayed.size(); ++i) {
    if (!replayed[i]) continue; // counted by the host; cannot be proposed again anyway
    seen_.insert(replayed[i].hash());
    insert_measured({replayed[i].trace(), secs[i]});
  }
}

void EvolutionarySearch::insert_measured(Measured m) {
  auto pos = std::upper_bound(measured_.begin(), measured_.end(), m.seconds,
                              [](double s, const Measured& x) { return s < x.seconds; });
  measured_.insert(pos, std::move(m));
}

void EvolutionarySearch::fill_with_samples(std::vector<sdk::Candidate>& out, size_t target,
                                           std::unordered_set<uint64_t>& taken, size_t& budget) {
  while (out.size() < target && budget > 0) {
    size_t k = std::min(budget, target - out.size());
    budget -= k;
    for (sdk::Candidate& c : ctx_.sample(rng_.seeds(k))) {
      if (!c) continue;
      if (!taken.insert(c.hash()).second) {
        ctx_.count("duplicates");
        continue;
      }
      out.push_back(std::move(c));
    }
  }
}

std::vector<sdk::Candidate> EvolutionarySearch::init_population() {
  std::vector<sdk::Candidate> pop;
  std::unordered_set<uint64_t> in_pop;
  size_t from_measured =
      static_cast<size_t>(static_cast<double>(cfg_.population) * cfg_.init_measured_ratio);
  std::vector<sdk::Trace> best;
  for (const Measured& m : measured_) {
    if (best.size() >= from_measured || !std::isfinite(m.seconds)) break;
    best.push_back(m.trace);
  }
  for (sdk::Candidate& c : ctx_.replay(best, rng_.seeds(best.size())))
    if (c && in_pop.insert(c.hash()).second) pop.push_back(std::move(c));
  size_t target = std::max(cfg_.population, pop.size() + cfg_.init_min_unmeasured);
  size_t budget = cfg_.max_sample_attempts;
  fill_with_samples(pop, target, in_pop, budget);
  return pop;
}

std::vector<double> EvolutionarySearch::score(const std::vector<sdk::Candidate>& pop) {
  if (ctx_.has_cost_model())
    if (std::optional<std::vector<double>> s = ctx_.predict(pop)) return *s;
  std::vector<double> s;
  for (size_t i = 0; i < pop.size(); ++i)
    s.push_back(rng_.uniform_real());
  return s;
}

std::vector<sdk::Candidate> EvolutionarySearch::evolve(const std::vector<sdk::Candidate>& pop,
                                                       const std::vector<double>& scores) {
  // Roulette weights: scores shifted to be positive (a model may predict negatives).
  double lo = *std::min_element(scores.begin(), scores.end());
  std::vector<double> weights;
  for (double x : scores)
    weights.push_back(lo < 0 ? x - lo : x);
  if (std::accumulate(weights.begin(), weights.end(), 0.0) <= 0)
    std::fill(weights.begin(), weights.end(), 1.0);
  const bool can_mutate = !mutator_probs_.empty();

  std::vector<sdk::Candidate> next;
  std::unordered_set<uint64_t> in_next;
  size_t pending = cfg_.population;
  for (int attempt = 0; attempt < kMaxChildAttempts && pending > 0; ++attempt) {
    // One round: a parent per pending slot, mutated (one host batch) or copied.
    std::vector<sdk::Candidate> children(pending), parents;
    std::vector<size_t> mutate_slot, mutators;
    std::vector<uint64_t> seeds;
    for (size_t slot = 0; slot < pending; ++slot) {
      const sdk::Candidate& parent = pop[rng_.categorical(weights)];
      if (can_mutate && rng_.uniform_real() < cfg_.mutation_prob) {
        mutate_slot.push_back(slot);
        parents.push_back(parent);
        mutators.push_back(rng_.categorical(mutator_probs_));
        seeds.push_back(rng_.next());
      } else {
        children[slot] = parent;
      }
    }
    std::vector<sdk::Candidate> mutants = ctx_.mutate(parents, mutators, seeds);
    for (size_t i = 0; i < mutants.size(); ++i)
      children[mutate_slot[i]] = std::move(mutants[i]);
    size_t filled = 0;
    for (sdk::Candidate& c : children) {
      if (!c) continue;
      if (!in_next.insert(c.hash()).second) {
        ctx_.count("duplicates");
        continue;
      }
      next.push_back(std::move(c));
      ++filled;
    }
    pending -= filled;
  }
  return next;
}

std::vector<sdk::Candidate> EvolutionarySearch::next_batch(size_t n) {
  if (n == 0 || ctx_.num_design_spaces() == 0) return {};
  std::vector<sdk::Candidate> population = init_population();
  if (population.empty()) return {};
  // Every scored candidate not yet proposed, by hash: the pool the batch is picked from.
  std::unordered_map<uint64_t, Scored> pool;
  for (int iter = 0;; ++iter) {
    std::vector<double> scores = score(population);
    for (size_t i = 0; i < population.size(); ++i) {
      uint64_t h = population[i].hash();
      if (seen_.count(h)) continue;
      auto [it, fresh] = pool.try_emplace(h, Scored{population[i], scores[i]});
      if (!fresh) it->second.score = std::max(it->second.score, scores[i]);
    }
    if (iter >= cfg_.genetic_iterations) break;
    population = evolve(population, scores);
    if (population.empty()) break;
  }
  std::vector<std::pair<uint64_t, Scored>> ranked(pool.begin(), pool.end());
  // Ties broken by hash so that the order does not depend on the hash map's.
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second.score != b.second.score ? a.second.score > b.second.score : a.first < b.first;
  });
  size_t n_random = random_share(n);
  size_t n_best = n - n_random;
  std::vector<sdk::Candidate> batch;
  size_t next_ranked = 0;
  for (; next_ranked < ranked.size() && batch.size() < n_best; ++next_ranked) {
    seen_.insert(ranked[next_ranked].first);
    batch.push_back(ranked[next_ranked].second.candidate);
  }
  // The random share, and whatever the model's share could not fill.
  size_t budget = cfg_.max_sample_attempts;
  fill_with_samples(batch, n, seen_, budget);
  // Sampling ran dry (a small space): fall back to the rest of the scored pool.
  for (; next_ranked < ranked.size() && batch.size() < n; ++next_ranked)
    if (seen_.insert(ranked[next_ranked].first).second)
      batch.push_back(ranked[next_ranked].second.candidate);
  return batch;
}

// The fresh samples of a batch. The host draws them evenly over the kinds of design space,
// where the evolved pool favours the spaces whose decisions mutate most (MultiLevelTiling's
// tile sizes): a space with a few categorical draws (std.VectorRFactor's) is soon a few dozen
// candidates among thousands, and 64 trials of dense(M=128) measured none of it. So at least
// one a batch (eps_greedy rounded up, not down: batches of 16 had none), and half of the first
// batch of a task, before any measurement could teach the model what either kind is worth.
size_t EvolutionarySearch::random_share(size_t n) const {
  if (cfg_.eps_greedy <= 0) return 0;
  if (measured_.empty()) return (n + 1) / 2;
  return std::min(n, static_cast<size_t>(std::ceil(static_cast<double>(n) * cfg_.eps_greedy)));
}

void EvolutionarySearch::notify_measured(const std::vector<sdk::Candidate>& measured,
                                         const std::vector<double>& run_seconds) {
  std::vector<sdk::Candidate> ok;
  std::vector<double> ok_seconds;
  for (size_t i = 0; i < measured.size() && i < run_seconds.size(); ++i) {
    seen_.insert(measured[i].hash());
    insert_measured({measured[i].trace(), run_seconds[i]});
    if (std::isfinite(run_seconds[i]) && run_seconds[i] > 0) {
      ok.push_back(measured[i]);
      ok_seconds.push_back(run_seconds[i]);
    }
  }
  if (!ctx_.has_cost_model() || measured.empty()) return;
  if (ctx_.update_cost_model(measured, run_seconds)) return;
  if (!ok.empty() && ok.size() != measured.size()) ctx_.update_cost_model(ok, ok_seconds);
}

} // namespace mt::search
