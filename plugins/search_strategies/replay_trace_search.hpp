// search.ReplayTrace, the baseline: every batch is fresh samples of random design spaces (all
// decisions re-sampled, post-processed), never one measured or proposed before. No cost
// model, no mutation. Configuration: {"attempts_per_candidate": 16}.
#pragma once

#include <string_view>
#include <unordered_set>

#include "metatune/sdk.hpp"
#include "metatune/sdk/search.hpp"

namespace mt::search {

class ReplayTraceSearch : public sdk::SearchContextStrategy {
public:
  ReplayTraceSearch() = default;
  explicit ReplayTraceSearch(std::string_view config);
  void start(sdk::SearchContext ctx) override;
  std::vector<sdk::Candidate> next_batch(size_t n) override;

private:
  size_t attempts_per_candidate_ = 16;
  sdk::SearchContext ctx_;
  sdk::Random rng_;
  std::unordered_set<uint64_t> seen_;
};

} // namespace mt::search
