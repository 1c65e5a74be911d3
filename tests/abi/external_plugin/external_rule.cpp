// An out-of-tree plugin: a rule that unrolls the innermost loop of every block by annotation.
#include <metatune/sdk.hpp>

namespace {

class AnnotateInnermost : public mt::sdk::ScheduleRule {
public:
  std::vector<mt::sdk::Schedule> apply(mt::sdk::Schedule& sch, mt::sdk::BlockRV block) override {
    std::vector<mt::sdk::LoopRV> loops = sch.get_loops(block);
    if (!loops.empty()) sch.annotate(loops.back(), "external.visited", int64_t{1});
    return {sch};
  }
};

} // namespace

METATUNE_PLUGIN("external_rule", "0.3", "built against the installed SDK") {
  registry.add<AnnotateInnermost>("external.AnnotateInnermost", "marks the innermost loop");
}
