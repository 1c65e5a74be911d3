// MutateUnroll: re-chooses the decision of a sampled unroll depth (the sample_categorical
// behind meta_schedule.unroll_explicit / unroll_implicit) among its other candidates.
// Default probability: 0.03 (CPU), 0.08 (GPU).
#include "annotation_keys.hpp"
#include "categorical_mutation.hpp"
#include "config.hpp"
#include "sampled_annotation.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

class MutateUnroll : public sdk::Mutator {
public:
  explicit MutateUnroll(std::string_view text) { Config("std.MutateUnroll", text).allow_only({}); }

  std::optional<sdk::Trace> apply(const sdk::Trace& trace, sdk::Rng& rng) override {
    TraceView view(trace);
    std::vector<size_t> sites = linked_samples(view, keys::kUnrollExplicit);
    for (size_t i : linked_samples(view, keys::kUnrollImplicit))
      sites.push_back(i);
    return mutate_categorical(trace, view, sites, rng);
  }
};

} // namespace

void register_mutate_unroll(sdk::Registry& r) {
  r.add<MutateUnroll>("std.MutateUnroll",
                      "re-choose a sampled unroll depth (default p = 0.03 CPU, 0.08 GPU)");
}

} // namespace mt::std_rules
