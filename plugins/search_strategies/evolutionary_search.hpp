// search.Evolutionary (REFERENCE.md §3, MetaSchedule's default): a population seeded from the
// best measured records and fresh samples, evolved for a few generations by mutating parents
// drawn in proportion to their predicted score, and a batch made of the best-scored
// candidates never measured nor proposed plus an epsilon share of fresh random samples.
//
// Configuration (JSON, every field optional): population (512), init_measured_ratio (0.2),
// init_min_unmeasured (50), genetic_iterations (4), mutation_prob (0.85), eps_greedy (0.05),
// max_sample_attempts (0 = 8 * population).
//
// Each generation's children are asked of the host in one batch (sampling and mutation then
// run on all cores); a slot whose child was refused or duplicated is retried in the next
// round, up to 10 times. The cost model is trained on every measured batch, failed trials as
// +inf (MetaSchedule teaches its model that they are slow too); should the model refuse
// that, it gets the successful trials only. Without a model (or when it fails) candidates are
// scored at random.
#pragma once

#include <string_view>
#include <unordered_set>
#include <vector>

#include "metatune/sdk.hpp"
#include "metatune/sdk/search.hpp"

namespace mt::search {

struct EvolutionaryConfig {
  size_t population = 512;
  double init_measured_ratio = 0.2;
  size_t init_min_unmeasured = 50;
  int genetic_iterations = 4;
  double mutation_prob = 0.85;
  double eps_greedy = 0.05;
  size_t max_sample_attempts = 0;
};

class EvolutionarySearch : public sdk::SearchContextStrategy {
public:
  EvolutionarySearch() = default;
  explicit EvolutionarySearch(std::string_view config);
  void start(sdk::SearchContext ctx) override;
  std::vector<sdk::Candidate> next_batch(size_t n) override;
  void notify_measured(const std::vector<sdk::Candidate>& measured,
                       const std::vector<double>& run_seconds) override;

private:
  struct Measured {
    sdk::Trace trace; // before post-processing
    double seconds = 0;
  };
  struct Scored {
    sdk::Candidate candidate;
    double score = 0;
  };

  void insert_measured(Measured m);
  std::vector<sdk::Candidate> init_population();
  // Fresh samples not in `taken` until `target` are held or `budget` attempts are spent.
  void fill_with_samples(std::vector<sdk::Candidate>& out, size_t target,
                         std::unordered_set<uint64_t>& taken, size_t& budget);
  std::vector<double> score(const std::vector<sdk::Candidate>& pop);
  // How many of a batch of n are fresh samples rather than the model's picks.
  size_t random_share(size_t n) const;
  std::vector<sdk::Candidate> evolve(const std::vector<sdk::Candidate>& pop,
                                     const std::vector<double>& scores);

  EvolutionaryConfig cfg_;
  sdk::SearchContext ctx_;
  sdk::Random rng_;
  std::vector<double> mutator_probs_;
  std::unordered_set<uint64_t> seen_; // measured or proposed
  std::vector<Measured> measured_;    // best first
};

} // namespace mt::search
