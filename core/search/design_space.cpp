// Design-space generation and candidate sampling (see design_space.h).
#include "core/search/design_space.h"

#include <nlohmann/json.hpp>

#include <set>
#include <string_view>
#include <utility>
#include <variant>

namespace mt {

namespace {

std::string attr_text(const InstAttr& a) {
  if (const auto* s = std::get_if<std::string>(&a)) return *s;
  return std::visit([](const auto& v) { return nlohmann::json(v).dump(); }, a);
}

constexpr std::string_view kSampleIndexSuffix = ".sample_index";
constexpr const char* kSampled = "sampled";

} // namespace

std::vector<std::pair<std::string, std::string>> space_annotations(const Trace& trace) {
  std::vector<std::pair<std::string, std::string>> all, out;
  for (const Instruction& in : trace.instructions()) {
    if (in.kind != "annotate" || in.attrs.empty()) continue;
    const auto* key = std::get_if<std::string>(&in.attrs[0]);
    if (!key) continue;
    // annotate(rv, key, value): a constant value is the second attribute, a sampled one an
    // input.
    all.emplace_back(*key, in.attrs.size() >= 2 ? attr_text(in.attrs[1]) : kSampled);
  }
  std::set<std::string> sampled, seen;
  for (const auto& [key, value] : all)
    if (key.size() > kSampleIndexSuffix.size() && key.ends_with(kSampleIndexSuffix))
      sampled.insert(key.substr(0, key.size() - kSampleIndexSuffix.size()));
  for (const auto& [key, value] : all) {
    if (key.ends_with(kSampleIndexSuffix) || !seen.insert(key).second) continue;
    out.emplace_back(key, sampled.count(key) ? kSampled : value);
  }
  return out;
}

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
