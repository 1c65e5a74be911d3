// AutoInline: folds cheap elementwise / injective blocks (padding included) into their
// consumers with compute_inline, or -- for epilogues such as a bias + activation writing the
// output -- into their producer with reverse_compute_inline. Reductions are never inlined, and
// a block writing a function output is only ever reverse-inlined.
//
// Configuration: {"into_consumer": true, "into_producer": true}.
#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

class AutoInline : public sdk::ScheduleRule {
public:
  explicit AutoInline(std::string_view text) {
    Config cfg("std.AutoInline", text);
    cfg.allow_only({"into_consumer", "into_producer"});
    into_consumer_ = cfg.get_bool("into_consumer", true);
    into_producer_ = cfg.get_bool("into_producer", true);
  }

  std::vector<sdk::Schedule> apply(sdk::Schedule& sch, sdk::BlockRV block) override {
    if (!sch.valid(block) || has_reduce_iter(sch, block)) return {sch};
    // A single store: anything else (several stores, conditional stores) is not elementwise.
    auto [body, init] = sch.block_body(block);
    if (init || !body || body.kind() != sdk::StmtKind::Store) return {sch};
    if (sch.writes(block).size() != 1) return {sch};
    // Each primitive is all-or-nothing: a refusal leaves the schedule as it was.
    if (into_consumer_ && !writes_param(sch, block)) {
      try {
        sch.compute_inline(block);
        return {sch};
      } catch (const sdk::ScheduleError&) {
      }
    }
    if (into_producer_) {
      try {
        sch.reverse_compute_inline(block);
        return {sch};
      } catch (const sdk::ScheduleError&) {
      }
    }
    return {sch};
  }

private:
  bool into_consumer_ = true;
  bool into_producer_ = true;
};

} // namespace

void register_auto_inline(sdk::Registry& r) {
  r.add<AutoInline>("std.AutoInline",
                    "inline elementwise blocks into consumers, epilogues into producers");
}

} // namespace mt::std_rules
