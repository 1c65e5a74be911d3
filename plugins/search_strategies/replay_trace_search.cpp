// search.ReplayTrace (see replay_trace_search.hpp).
#include "replay_trace_search.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace mt::search {

ReplayTraceSearch::ReplayTraceSearch(std::string_view config) {
  if (config.empty()) return;
  nlohmann::json j = nlohmann::json::parse(config, nullptr, false);
  if (!j.is_object())
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "search.ReplayTrace: the configuration is not a "
                                                "JSON object: " +
                                                    std::string(config));
  for (auto& [key, value] : j.items()) {
    if (key != "attempts_per_candidate" || !value.is_number_unsigned())
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       "search.ReplayTrace: unknown or ill-typed field '" + key +
                           "' (known: attempts_per_candidate, a positive integer)");
    attempts_per_candidate_ = std::max<size_t>(1, value.get<size_t>());
  }
}

void ReplayTraceSearch::start(sdk::SearchContext ctx) {
  ctx_ = ctx;
  rng_ = sdk::Random(ctx.seed());
  std::vector<sdk::Trace> traces;
  for (size_t i = 0; i < ctx_.num_measured(); ++i)
    traces.push_back(ctx_.measured(i).first);
  std::vector<uint64_t> seeds(traces.size(), ctx_.seed());
  for (const sdk::Candidate& c : ctx_.replay(traces, seeds))
    if (c) seen_.insert(c.hash());
}

std::vector<sdk::Candidate> ReplayTraceSearch::next_batch(size_t n) {
  std::vector<sdk::Candidate> batch;
  size_t budget = attempts_per_candidate_ * n + 64;
  while (batch.size() < n && budget > 0) {
    size_t k = std::min(budget, n - batch.size());
    budget -= k;
    for (sdk::Candidate& c : ctx_.sample(rng_.seeds(k))) {
      if (!c) continue;
      if (!seen_.insert(c.hash()).second) {
        ctx_.count("duplicates");
        continue;
      }
      if (batch.size() < n) batch.push_back(std::move(c));
    }
  }
  return batch;
}

} // namespace mt::search
