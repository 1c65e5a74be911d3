// Design-space generation: the schedule rules applied to every block of a workload in
// MetaSchedule's post-order (rule by rule; blocks from the last to the first, consumers before
// producers), each rule free to fork a space into several. The result is a set of schedules
// whose traces hold sampling instructions; the search samples and mutates their decisions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/function.h"
#include "core/plugin/plugin_components.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"

namespace mt {

// A block a previous rule removed is skipped. A rule that throws (PluginError) drops only the
// space it was applied to; its message is appended to *errors when given.
std::vector<std::shared_ptr<Schedule>>
generate_design_spaces(const Function& workload,
                       const std::vector<std::unique_ptr<PluginScheduleRule>>& rules,
                       uint64_t seed, std::vector<std::string>* errors = nullptr);

// What a design space's trace says about the kind of schedule it makes: each annotation key it
// sets, first value of each, in trace order -- "sampled" where the value is drawn on replay
// (an annotation of a sampled variable, or one whose draw the rules record under
// `<key>.sample_index`: its value in this space says nothing of others). --show-space prints
// these; the sampler gives each distinct list an equal share of fresh samples.
std::vector<std::pair<std::string, std::string>> space_annotations(const Trace& trace);

enum class SampleOutcome { Ok, ReplayFailed, Rejected };

// Replays `trace` on a fresh schedule of `workload` (re-sampling every decision unless
// `use_decisions`), then runs the postprocessors in order. On failure *why says which
// instruction or postprocessor refused and why; a postprocessor that throws rejects.
SampleOutcome sample_candidate(const Function& workload, const Trace& trace, uint64_t seed,
                               bool use_decisions,
                               const std::vector<std::unique_ptr<PluginPostproc>>& postprocs,
                               std::shared_ptr<Schedule>* out, std::string* why = nullptr);

} // namespace mt
