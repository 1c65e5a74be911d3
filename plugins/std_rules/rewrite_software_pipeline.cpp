// RewriteSoftwarePipeline (GPU): a loop whose software-pipeline depth the rule sampled
// (MultiLevelTilingTensorCore's k loop: software_pipeline_stages and its link to the
// sample_categorical behind it, sampled_annotation.hpp) gets the depth the trace decides now --
// replay with a re-sampled decision keeps the annotation's recorded constant, so without this
// every sample of a space would pipeline as deep as the space did. The link is removed;
// lowering (core's software_pipeline.h) reads the depth.
#include "block_analysis.hpp"
#include "config.hpp"
#include "sampled_annotation.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

class RewriteSoftwarePipeline : public sdk::Postproc {
public:
  explicit RewriteSoftwarePipeline(std::string_view text) {
    Config("std.RewriteSoftwarePipeline", text).allow_only({});
  }

  bool apply(sdk::Schedule& sch) override {
    const std::string key = sdk::program::kSoftwarePipelineStages;
    const std::string link = sampled_link_key(key);
    const std::vector<std::string> names = block_names_in_order(sch);
    std::optional<TraceView> trace;
    for (const std::string& name : names) {
      sdk::BlockRV block = sch.get_block(name);
      for (sdk::LoopRV loop : sch.get_loops(block)) {
        sdk::Annotations anns = sch.annotations(loop);
        if (!anns.count(link)) continue; // not sampled, or already rewritten (a shared loop)
        if (!trace) trace.emplace(sch.trace());
        std::optional<int64_t> stages = resolve_sampled(anns, key, *trace);
        unannotate_sampled(sch, loop, anns, key);
        if (stages && *stages > 1) sch.annotate(loop, key, *stages);
      }
    }
    return true;
  }
};

} // namespace

void register_rewrite_software_pipeline(sdk::Registry& r) {
  r.add<RewriteSoftwarePipeline>("std.RewriteSoftwarePipeline",
                                 "GPU: give a sampled software-pipeline depth its current value");
}

} // namespace mt::std_rules
