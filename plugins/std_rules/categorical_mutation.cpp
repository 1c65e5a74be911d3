#include "categorical_mutation.hpp"

namespace mt::std_rules {

std::optional<sdk::Trace> mutate_categorical(const sdk::Trace& trace, const TraceView& view,
                                             const std::vector<size_t>& instructions,
                                             sdk::Rng& rng) {
  // Only instructions with an alternative to move to.
  std::vector<size_t> usable;
  for (size_t i : instructions) {
    if (i >= view.size() || view[i].kind != "sample_categorical" || !view[i].decision) continue;
    std::optional<std::vector<int64_t>> cands = view[i].attr_ints(0);
    if (cands && cands->size() >= 2) usable.push_back(i);
  }
  if (usable.empty()) return std::nullopt;
  size_t i = usable[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(usable.size())))];
  int64_t n = static_cast<int64_t>(view[i].attr_ints(0)->size());
  int64_t current = (*view[i].decision)[0];
  // Uniform over the other n - 1 indices.
  int64_t pick = rng.uniform_int(0, n - 1);
  if (pick >= current) ++pick;
  return trace.with_decision(i, {pick});
}

} // namespace mt::std_rules
