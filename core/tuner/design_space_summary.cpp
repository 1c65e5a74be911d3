// The design spaces of a workload as --show-space prints them (design_space_summary.h).
#include "core/tuner/design_space_summary.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <sstream>

#include "core/search/design_space.h"
#include "core/workload/library.h"

namespace mt {

namespace {

DesignSpaceSummary::Space summarize(const Trace& trace) {
  DesignSpaceSummary::Space s;
  s.instructions = trace.size();
  for (const Instruction& in : trace.instructions())
    if (in.is_sampling()) ++s.decisions;
  s.annotations = space_annotations(trace);
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
