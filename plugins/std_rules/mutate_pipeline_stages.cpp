// MutatePipelineStages (GPU): re-chooses a sampled software-pipeline depth -- the
// sample_categorical behind a loop's software_pipeline_stages (MultiLevelTilingTensorCore,
// resolved by RewriteSoftwarePipeline) -- among its other candidates, so that a good tiling is
// tried with a deeper or shallower pipeline. Default probability: 0.02 (GPU).
#include "categorical_mutation.hpp"
#include "config.hpp"
#include "sampled_annotation.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

class MutatePipelineStages : public sdk::Mutator {
public:
  explicit MutatePipelineStages(std::string_view text) {
    Config("std.MutatePipelineStages", text).allow_only({});
  }

  std::optional<sdk::Trace> apply(const sdk::Trace& trace, sdk::Rng& rng) override {
    TraceView view(trace);
    return mutate_categorical(trace, view,
                              linked_samples(view, sdk::program::kSoftwarePipelineStages), rng);
  }
};

} // namespace

void register_mutate_pipeline_stages(sdk::Registry& r) {
  r.add<MutatePipelineStages>("std.MutatePipelineStages",
                              "re-choose a sampled software-pipeline depth (default p = 0.02 GPU)");
}

} // namespace mt::std_rules
