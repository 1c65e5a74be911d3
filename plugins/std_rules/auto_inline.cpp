// AutoInline: folds cheap elementwise / injective blocks (padding included) into their
// consumers with compute_inline, or -- for epilogues such as a bias + activation writing the
// output -- into their producer with reverse_compute_inline. Reductions are never inlined, and
// a block writing a function output is only ever reverse-inlined.
//
// A block whose value is chosen by a condition -- padding: `cond ? data[...] : 0` -- is not
// inlined into its consumer on CPU ("disallow_if_then_else", MetaSchedule's CPU default): in a
// convolution every load of the input window would carry the guard, which keeps the register
// tile from vectorizing; computed on its own, the padded copy is made once and read without
// guards. GPU default: inlined (registers are cheap there, an extra pass over memory is not).
//
// A block that calls a costly math function (exp, erf, tanh, ...) and feeds more than one
// consumer is not inlined on CPU either ("disallow_recomputed_math"): inlined, each consumer
// would compute the function again. Softmax's exp feeds the row sum and the normalisation:
// tuned 64 trials with it inlined into both, 0.59-0.64 of oneDNN; computed once (placed by
// RandomComputeLocation, which does not draw "inline" for it either), 0.98-1.10 over three
// seeds (figures in docs/std_rules.md). GPU default: inlined, as for padding.
//
// Configuration: {"into_consumer": true, "into_producer": true,
//                 "disallow_if_then_else": true on CPU, false on GPU,
//                 "disallow_recomputed_math": true on CPU, false on GPU}.
#include <optional>

#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"
#include "target_info.hpp"

namespace mt::std_rules {

namespace {

class AutoInline : public sdk::ScheduleRule {
public:
  explicit AutoInline(std::string_view text) {
    Config cfg("std.AutoInline", text);
    cfg.allow_only(
        {"into_consumer", "into_producer", "disallow_if_then_else", "disallow_recomputed_math"});
    into_consumer_ = cfg.get_bool("into_consumer", true);
    into_producer_ = cfg.get_bool("into_producer", true);
    if (cfg.has("disallow_if_then_else"))
      disallow_if_then_else_ = cfg.get_bool("disallow_if_then_else", true);
    if (cfg.has("disallow_recomputed_math"))
      disallow_recomputed_math_ = cfg.get_bool("disallow_recomputed_math", true);
  }

  void initialize(const sdk::TuneContext& ctx) override {
    bool cpu = !TargetInfo::from(ctx).gpu;
    if (!disallow_if_then_else_) disallow_if_then_else_ = cpu;
    if (!disallow_recomputed_math_) disallow_recomputed_math_ = cpu;
  }

  std::vector<sdk::Schedule> apply(sdk::Schedule& sch, sdk::BlockRV block) override {
    if (!sch.valid(block) || has_reduce_iter(sch, block)) return {sch};
    // A single store: anything else (several stores, conditional stores) is not elementwise.
    auto [body, init] = sch.block_body(block);
    if (init || !body || body.kind() != sdk::StmtKind::Store) return {sch};
    if (sch.writes(block).size() != 1) return {sch};
    // Each primitive is all-or-nothing: a refusal leaves the schedule as it was.
    bool conditional = disallow_if_then_else_.value_or(true) && has_select(body.value());
    if (into_consumer_ && !writes_param(sch, block) && !conditional &&
        !(disallow_recomputed_math_.value_or(true) && inlining_recomputes_math(sch, block))) {
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
  static bool has_select(const sdk::ExprRef& e) {
    if (!e) return false;
    if (e.kind() == sdk::ExprKind::Select) return true;
    for (size_t i = 0, n = e.num_args(); i < n; ++i)
      if (has_select(e.arg(i))) return true;
    return false;
  }

  bool into_consumer_ = true;
  bool into_producer_ = true;
  // Unset until configured or initialized from the target; unset = disallow (CPU behaviour).
  std::optional<bool> disallow_if_then_else_;
  std::optional<bool> disallow_recomputed_math_;
};

} // namespace

void register_auto_inline(sdk::Registry& r) {
  r.add<AutoInline>("std.AutoInline",
                    "inline elementwise blocks into consumers, epilogues into producers");
}

} // namespace mt::std_rules
