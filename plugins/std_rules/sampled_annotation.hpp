// Block annotations whose value is decided by a sample_categorical instruction (the unroll
// depth, the parallel extent).
//
// MetaSchedule annotates with the sampled variable itself, so that replaying the trace with a
// re-sampled or mutated decision changes the annotation. ABI 1.0 can only annotate with a
// constant, so a rule records the link next to the value: `key` = the value sampled now and
// `key.sample_index` = the trace index of the sampling instruction. Replay keeps instruction
// indices, so postprocessors resolve the live value from that instruction's decision and
// mutators find the instruction to change. When the ABI gains annotate-with-variable, the same
// lookups also accept that form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metatune/sdk/schedule.hpp"
#include "trace_view.hpp"

namespace mt::std_rules {

// Samples one of `candidates` and annotates `block` with it (and with the link). Returns the
// value sampled.
int64_t annotate_sampled(sdk::Schedule& sch, sdk::BlockRV block, const std::string& key,
                         const std::vector<int64_t>& candidates, const std::vector<double>& probs);

// The same for a loop (a loop annotation whose value the search explores, e.g. a software
// pipeline's depth).
int64_t annotate_sampled(sdk::Schedule& sch, sdk::LoopRV loop, const std::string& key,
                         const std::vector<int64_t>& candidates, const std::vector<double>& probs);

// The current value of a sampled annotation of `anns`: the decision of the linked instruction
// in `trace` if the link is intact, else the annotated value; nullopt if `key` is absent.
std::optional<int64_t> resolve_sampled(const sdk::Annotations& anns, const std::string& key,
                                       const TraceView& trace);

// Removes `key` and its link from the block or loop (whichever are present).
void unannotate_sampled(sdk::Schedule& sch, sdk::BlockRV block, const sdk::Annotations& anns,
                        const std::string& key);
void unannotate_sampled(sdk::Schedule& sch, sdk::LoopRV loop, const sdk::Annotations& anns,
                        const std::string& key);
// The key of the link next to a sampled annotation `key`.
std::string sampled_link_key(const std::string& key);

// Indices of the sample_categorical instructions that decide annotations named `key`.
std::vector<size_t> linked_samples(const TraceView& trace, const std::string& key);

} // namespace mt::std_rules
