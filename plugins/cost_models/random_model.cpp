#include "random_model.hpp"

#include <cstdint>
#include <limits>

#include "config.hpp"

namespace mt::cost_models {

RandomModel::RandomModel(std::string_view config) {
  Config c("cost.Random", config, {"seed"});
  rng_.seed(static_cast<uint64_t>(c.get_int("seed", 1, 0, std::numeric_limits<int64_t>::max())));
}

std::vector<double> RandomModel::predict(const std::vector<sdk::Schedule>& candidates) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> scores;
  scores.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i)
    scores.push_back(uniform(rng_));
  return scores;
}

void RandomModel::update(const std::vector<sdk::Schedule>&, const std::vector<double>&) {}

} // namespace mt::cost_models
