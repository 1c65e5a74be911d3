#include "categorical_mutation.hpp"

namespace mt::std_rules {

std::optional<sdk::Trace> mutate_categorical(const sdk::Trace& trace, const TraceView& view,
                                             const std::vector<size_t>& instructions,
                                             sdk::Rng& rng) {
  // Only instructions with an alternative to move to.
  struct Site {
    size_t index;
    int64_t candidates;
    int64_t current;
  };
  std::vector<Site> usable;
  for (size_t i : instructions) {
    if (i >= view.size() || view.kind(i) != "sample_categorical") continue;
    std::optional<std::vector<int64_t>> decision = view.decision(i);
    if (!decision || decision->empty()) continue;
    std::optional<std::vector<int64_t>> cands = view.attr_ints(i, 0);
    if (cands && cands->size() >= 2)
      usable.push_back({i, static_cast<int64_t>(cands->size()), (*decision)[0]});
  }
  if (usable.empty()) return std::nullopt;
  const Site& site =
      usable[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(usable.size())))];
  size_t i = site.index;
  int64_t n = site.candidates;
  int64_t current = site.current;
  // Uniform over the other n - 1 indices.
  int64_t pick = rng.uniform_int(0, n - 1);
  if (pick >= current) ++pick;
  return trace.with_decision(i, {pick});
}

} // namespace mt::std_rules
