// Binding a root loop nest to a GPU grid, shared by AutoBind (with a sampled thread count) and
// RewriteUnboundBlock (with a fixed one): the outer loops that only drive spatial iteration
// variables of every block under them are fused, split by the thread count, and bound to
// blockIdx.x / threadIdx.x.
#pragma once

#include <optional>
#include <vector>

#include "metatune/sdk/schedule.hpp"

namespace mt::std_rules {

// The loops of `block` from the outermost that can be fused into one data-parallel loop: serial,
// each the only child of the previous, never bound to a reduction iter var of any block under
// it. Empty if the nest is already bound or has no such loop.
std::vector<sdk::LoopRV> bindable_outer_loops(sdk::Schedule& sch, sdk::BlockRV block);

// Whether any loop enclosing `block` is bound to a thread axis.
bool under_thread_binding(const sdk::Schedule& sch, sdk::BlockRV block);

// Fuses `loops`, splits the result by `threads` (a constant or a sampled value) and binds the
// parts to blockIdx.x and threadIdx.x. Throws sdk::ScheduleError if the schedule refuses.
void bind_block_thread(sdk::Schedule& sch, const std::vector<sdk::LoopRV>& loops,
                       sdk::Factor threads);

} // namespace mt::std_rules
