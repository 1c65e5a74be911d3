// The step shared by the mutators that re-choose a sample_categorical decision: pick one of
// the given instructions and give it another of its candidates, uniformly.
#pragma once

#include <optional>
#include <vector>

#include "metatune/sdk/schedule.hpp"
#include "trace_view.hpp"

namespace mt::std_rules {

std::optional<sdk::Trace> mutate_categorical(const sdk::Trace& trace, const TraceView& view,
                                             const std::vector<size_t>& instructions,
                                             sdk::Rng& rng);

} // namespace mt::std_rules
