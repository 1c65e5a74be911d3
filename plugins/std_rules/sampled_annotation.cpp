#include "sampled_annotation.hpp"

#include <algorithm>

#include "annotation_keys.hpp"

namespace mt::std_rules {

namespace {

std::string link_key(const std::string& key) {
  return key + keys::kSampleIndexSuffix;
}

// The value a sample_categorical instruction decides, if it is one with a valid decision.
std::optional<int64_t> decided_value(const TraceView& trace, size_t i) {
  if (i >= trace.size() || trace.kind(i) != "sample_categorical") return std::nullopt;
  std::optional<std::vector<int64_t>> decision = trace.decision(i);
  if (!decision || decision->size() != 1) return std::nullopt;
  std::optional<std::vector<int64_t>> cands = trace.attr_ints(i, 0);
  int64_t d = (*decision)[0];
  if (!cands || d < 0 || d >= static_cast<int64_t>(cands->size())) return std::nullopt;
  return (*cands)[static_cast<size_t>(d)];
}

template <class RV>
int64_t annotate_sampled_at(sdk::Schedule& sch, RV at, const std::string& key,
                            const std::vector<int64_t>& candidates,
                            const std::vector<double>& probs) {
  sdk::ExprRV v = sch.sample_categorical(candidates, probs);
  // The sample is the instruction just recorded.
  int64_t index = static_cast<int64_t>(sch.trace().size()) - 1;
  int64_t value = sch.get(v);
  sch.annotate(at, key, value);
  sch.annotate(at, link_key(key), index);
  return value;
}

template <class RV>
void unannotate_sampled_at(sdk::Schedule& sch, RV at, const sdk::Annotations& anns,
                           const std::string& key) {
  if (anns.count(key)) sch.unannotate(at, key);
  if (anns.count(link_key(key))) sch.unannotate(at, link_key(key));
}

} // namespace

std::string sampled_link_key(const std::string& key) {
  return link_key(key);
}

int64_t annotate_sampled(sdk::Schedule& sch, sdk::BlockRV block, const std::string& key,
                         const std::vector<int64_t>& candidates, const std::vector<double>& probs) {
  return annotate_sampled_at(sch, block, key, candidates, probs);
}

int64_t annotate_sampled(sdk::Schedule& sch, sdk::LoopRV loop, const std::string& key,
                         const std::vector<int64_t>& candidates, const std::vector<double>& probs) {
  return annotate_sampled_at(sch, loop, key, candidates, probs);
}

std::optional<int64_t> resolve_sampled(const sdk::Annotations& anns, const std::string& key,
                                       const TraceView& trace) {
  auto it = anns.find(key);
  if (it == anns.end()) return std::nullopt;
  auto link = anns.find(link_key(key));
  if (link != anns.end())
    if (const int64_t* idx = std::get_if<int64_t>(&link->second); idx && *idx >= 0)
      if (std::optional<int64_t> v = decided_value(trace, static_cast<size_t>(*idx))) return v;
  if (const int64_t* v = std::get_if<int64_t>(&it->second)) return *v;
  return std::nullopt;
}

void unannotate_sampled(sdk::Schedule& sch, sdk::BlockRV block, const sdk::Annotations& anns,
                        const std::string& key) {
  unannotate_sampled_at(sch, block, anns, key);
}

void unannotate_sampled(sdk::Schedule& sch, sdk::LoopRV loop, const sdk::Annotations& anns,
                        const std::string& key) {
  unannotate_sampled_at(sch, loop, anns, key);
}

std::vector<size_t> linked_samples(const TraceView& trace, const std::string& key) {
  std::vector<size_t> out;
  auto add = [&](size_t i) {
    if (decided_value(trace, i) && std::find(out.begin(), out.end(), i) == out.end())
      out.push_back(i);
  };
  const std::string link = link_key(key);
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace.kind(i) != "annotate") continue;
    std::optional<std::string> k = trace.attr_string(i, 0);
    if (!k) continue;
    if (*k == link) {
      if (std::optional<int64_t> idx = trace.attr_int(i, 1); idx && *idx >= 0)
        add(static_cast<size_t>(*idx));
    } else if (*k == key && trace.num_attrs(i) == 1 && trace.num_inputs(i) > 1) {
      // Annotated with the sampled variable itself (a host that supports it): the value is
      // input 1, not attribute 1.
      if (std::optional<std::string> var = trace.input_var(i, 1))
        if (std::optional<size_t> def = trace.defining(*var)) add(*def);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace mt::std_rules
