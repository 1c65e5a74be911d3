// cost.Random: scores drawn uniformly from [0, 1), independent of the candidates -- the
// baseline a learnt model must beat, and what the search uses when no model is wanted.
// Configuration: {"seed": N} (default 1); the same seed gives the same sequence of scores.
#pragma once

#include <random>
#include <string_view>
#include <vector>

#include "metatune/sdk/components.hpp"

namespace mt::cost_models {

class RandomModel : public sdk::CostModel {
public:
  explicit RandomModel(std::string_view config);
  std::vector<double> predict(const std::vector<sdk::Schedule>& candidates) override;
  void update(const std::vector<sdk::Schedule>& candidates,
              const std::vector<double>& run_seconds) override;

private:
  std::mt19937_64 rng_;
};

} // namespace mt::cost_models
