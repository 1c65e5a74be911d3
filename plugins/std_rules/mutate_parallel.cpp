// MutateParallel: re-chooses the parallel extent budget of a root nest: the sample_categorical
// behind meta_schedule.parallel, whose candidates are max_jobs_per_core x num_cores and its
// halvings down to one job per core (ParallelVectorizeUnroll samples the full budget; the
// others are reached only through this mutator). MetaSchedule edits the annotation itself;
// ABI 1.0 mutators can only change decisions, hence the sampled value.
// Default probability: 0.02 (CPU).
#include "annotation_keys.hpp"
#include "categorical_mutation.hpp"
#include "config.hpp"
#include "sampled_annotation.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

class MutateParallel : public sdk::Mutator {
public:
  explicit MutateParallel(std::string_view text) {
    Config("std.MutateParallel", text).allow_only({});
  }

  std::optional<sdk::Trace> apply(const sdk::Trace& trace, sdk::Rng& rng) override {
    TraceView view(trace);
    return mutate_categorical(trace, view, linked_samples(view, keys::kParallel), rng);
  }
};

} // namespace

void register_mutate_parallel(sdk::Registry& r) {
  r.add<MutateParallel>("std.MutateParallel",
                        "re-choose a root nest's parallel extent (default p = 0.02 on CPU)");
}

} // namespace mt::std_rules
