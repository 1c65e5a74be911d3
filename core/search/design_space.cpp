// Design-space generation and candidate sampling (see design_space.h).
#include "core/search/design_space.h"

#include <utility>

namespace mt {

std::vector<std::shared_ptr<Schedule>>
generate_design_spaces(const Function& workload,
                       const std::vector<std::unique_ptr<PluginScheduleRule>>& rules, uint64_t seed,
                       std::vector<std::string>* errors) {
  auto sch = std::make_shared<Schedule>(workload, seed);
  std::vector<BlockRV> blocks = sch->all_blocks();
  std::vector<std::shared_ptr<Schedule>> result{sch};
  for (const auto& rule : rules) {
    // Depth-first over (space, blocks still to visit) so that forks keep the rule's order.
    std::vector<std::pair<std::shared_ptr<Schedule>, size_t>> stack;
    for (auto it = result.rbegin(); it != result.rend(); ++it)
      stack.push_back({*it, blocks.size()});
    result.clear();
    while (!stack.empty()) {
      auto [s, left] = stack.back();
      stack.pop_back();
      if (left == 0) {
        result.push_back(s);
        continue;
      }
      BlockRV b = blocks[left - 1];
      if (!s->valid(b)) {
        stack.push_back({s, left - 1});
        continue;
      }
      std::vector<std::shared_ptr<Schedule>> out;
      try {
        out = rule->apply(s, b);
      } catch (const std::exception& e) {
        if (errors) errors->push_back(e.what());
        continue;
      }
      for (auto it = out.rbegin(); it != out.rend(); ++it)
        stack.push_back({*it, left - 1});
    }
  }
  return result;
}

SampleOutcome sample_candidate(const Function& workload, const Trace& trace, uint64_t seed,
                               bool use_decisions,
                               const std::vector<std::unique_ptr<PluginPostproc>>& postprocs,
                               std::shared_ptr<Schedule>* out, std::string* why) {
  auto s = std::make_shared<Schedule>(workload, seed);
  try {
    trace.apply_to(*s, use_decisions);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return SampleOutcome::ReplayFailed;
  }
  for (const auto& p : postprocs) {
    std::string reason;
    bool ok = false;
    try {
      ok = p->apply(s, &reason);
    } catch (const std::exception& e) {
      reason = e.what();
    }
    if (!ok) {
      // Named once: a component's own message usually starts with its name already.
      const std::string& name = p->info().name;
      if (why) *why = reason.rfind(name, 0) == 0 ? reason : name + ": " + reason;
      return SampleOutcome::Rejected;
    }
  }
  *out = std::move(s);
  return SampleOutcome::Ok;
}

} // namespace mt
