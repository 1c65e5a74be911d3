// MutateComputeLocation: picks a sample_compute_location decision and moves it to a
// neighbouring candidate (one loop out or in) or to the root. The trace does not say how many
// locations the block had, so a move past the innermost one makes the replay fail; that costs
// the candidate, as any illegal mutation does. Default probability: 0.05 (CPU).
#include <algorithm>

#include "config.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

class MutateComputeLocation : public sdk::Mutator {
public:
  explicit MutateComputeLocation(std::string_view text) {
    Config("std.MutateComputeLocation", text).allow_only({});
  }

  std::optional<sdk::Trace> apply(const sdk::Trace& trace, sdk::Rng& rng) override {
    std::vector<std::pair<size_t, int64_t>> sites;
    for (size_t i = 0, n = trace.size(); i < n; ++i) {
      if (trace.kind(i) != "sample_compute_location") continue;
      std::optional<std::vector<int64_t>> d = trace.decision(i);
      if (d && d->size() == 1) sites.push_back({i, (*d)[0]});
    }
    if (sites.empty()) return std::nullopt;
    auto [index, current] =
        sites[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(sites.size())))];
    // -2 = inline, -1 = root, 0.. = loops outermost first.
    std::vector<int64_t> options;
    for (int64_t d : {int64_t{-1}, current - 1, current + 1})
      if (d >= -2 && d != current && std::find(options.begin(), options.end(), d) == options.end())
        options.push_back(d);
    int64_t choice =
        options[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(options.size())))];
    return trace.with_decision(index, {choice});
  }
};

} // namespace

void register_mutate_compute_location(sdk::Registry& r) {
  r.add<MutateComputeLocation>("std.MutateComputeLocation",
                               "move a sampled compute location (default p = 0.05 on CPU)");
}

} // namespace mt::std_rules
