// Replay-trace search, the baseline: every batch is fresh samples of random design spaces
// (all decisions re-sampled, post-processed), never one measured or proposed before. No cost
// model, no mutation.
#include <limits>
#include <unordered_set>

#include "core/schedule/random.h"
#include "core/tune/candidate_sampler.h"
#include "core/tune/search_strategy.h"

namespace mt {

namespace {

// Samples tried per candidate asked for before a batch is given up as exhausted.
constexpr size_t kAttemptsPerCandidate = 16;

class ReplayTraceSearch : public SearchStrategy {
public:
  explicit ReplayTraceSearch(SearchContext& ctx)
      : ctx_(ctx), rng_(ctx.seed), sampler_(ctx, stats_) {}

  std::vector<std::shared_ptr<Schedule>> next_batch(size_t n) override {
    if (!initialized_) {
      initialized_ = true;
      for (const Trace& t : ctx_.measured_traces)
        if (auto c = sampler_.replay(sampler_.strip_postproc(t), ctx_.seed)) seen_.insert(c->hash);
    }
    std::vector<std::shared_ptr<Schedule>> batch;
    if (n == 0 || !sampler_.has_design_spaces()) return batch;
    for (size_t budget = kAttemptsPerCandidate * n + 64; batch.size() < n && budget > 0; --budget) {
      std::optional<Candidate> c = sampler_.sample_fresh(rng_);
      if (!c) continue;
      if (!seen_.insert(c->hash).second) {
        ++stats_.duplicates;
        continue;
      }
      batch.push_back(c->sch);
    }
    stats_.proposed += batch.size();
    return batch;
  }

  void notify(const std::vector<std::shared_ptr<Schedule>>&, const std::vector<double>&) override {}

  const SearchStats& stats() const override { return stats_; }

private:
  SearchContext& ctx_;
  RandomEngine rng_;
  SearchStats stats_;
  CandidateSampler sampler_;
  bool initialized_ = false;
  std::unordered_set<uint64_t> seen_;
};

} // namespace

std::unique_ptr<SearchStrategy> make_replay_trace_search(SearchContext& ctx) {
  return std::make_unique<ReplayTraceSearch>(ctx);
}

} // namespace mt
