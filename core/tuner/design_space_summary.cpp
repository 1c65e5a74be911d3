// The design spaces of a workload as --show-space prints them (design_space_summary.h).
#include "core/tuner/design_space_summary.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <set>
#include <sstream>
#include <string_view>
#include <variant>

#include "core/search/design_space.h"
#include "core/workload/library.h"

namespace mt {

namespace {

std::string attr_text(const InstAttr& a) {
  if (const auto* s = std::get_if<std::string>(&a)) return *s;
  return std::visit([](const auto& v) { return nlohmann::json(v).dump(); }, a);
}

// A value drawn when the trace is replayed: an annotation of a sampled variable, or one the
// rules record with the index of the draw that chose it under `<key>.sample_index` (the
// standard rules' way, which mutators use) -- its value in this space says nothing of others.
constexpr std::string_view kSampleIndexSuffix = ".sample_index";
constexpr const char* kSampled = "sampled";

DesignSpaceSummary::Space summarize(const Trace& trace) {
  DesignSpaceSummary::Space s;
  s.instructions = trace.size();
  std::vector<std::pair<std::string, std::string>> all;
  for (const Instruction& in : trace.instructions()) {
    if (in.is_sampling()) ++s.decisions;
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
    s.annotations.emplace_back(key, sampled.count(key) ? kSampled : value);
  }
  return s;
}

} // namespace

DesignSpaceSummary summarize_design_spaces(const PluginHost& host, const TargetSetup& target,
                                           const SearchSpace& space, const std::string& spec,
                                           uint64_t seed) {
  DesignSpaceSummary out;
  out.workload = canonical_workload_spec(spec);
  out.seed = seed;
  Function workload = make_workload(spec);
  std::vector<std::unique_ptr<PluginScheduleRule>> rules;
  for (const SpaceComponent& c : space.rules) {
    rules.push_back(host.create_schedule_rule(c.name, c.config));
    rules.back()->initialize(target.attrs);
  }
  for (const auto& s : generate_design_spaces(workload, rules, seed, &out.dropped))
    out.spaces.push_back(summarize(s->trace()));
  return out;
}

std::string format_design_spaces(const DesignSpaceSummary& summary) {
  std::ostringstream out;
  out << "\ndesign spaces of " << summary.workload << " (seed " << summary.seed
      << "): " << summary.spaces.size() << "\n";
  for (size_t i = 0; i < summary.spaces.size(); ++i) {
    const auto& s = summary.spaces[i];
    out << "  [" << i << "] " << s.instructions << " instructions, " << s.decisions << " decisions";
    for (size_t a = 0; a < s.annotations.size(); ++a)
      out << (a ? ", " : ": ") << s.annotations[a].first << "=" << s.annotations[a].second;
    out << "\n";
  }
  for (const std::string& why : summary.dropped)
    out << "  dropped by a rule: " << why << "\n";
  return out.str();
}

std::string design_spaces_json(const DesignSpaceSummary& summary) {
  nlohmann::json j;
  j["workload"] = summary.workload;
  j["seed"] = summary.seed;
  j["spaces"] = nlohmann::json::array();
  for (const auto& s : summary.spaces) {
    nlohmann::json a = nlohmann::json::object();
    for (const auto& [k, v] : s.annotations)
      a[k] = v;
    j["spaces"].push_back(
        {{"instructions", s.instructions}, {"decisions", s.decisions}, {"annotations", a}});
  }
  j["dropped"] = summary.dropped;
  return j.dump();
}

} // namespace mt
