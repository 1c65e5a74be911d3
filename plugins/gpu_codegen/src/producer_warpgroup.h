// Warp specialisation of a TMA pipeline (Hopper): one more warpgroup than the schedule binds --
// the producer -- whose first thread issues every TMA copy of the kernel's one pipeline, while
// the schedule's warpgroups -- the consumers -- only wait for tiles and multiply. They hand
// each slot back and forth through two mbarriers: "full" (the copy's bytes have landed: TMA
// completes it) and "empty" (every consumer thread is done with the slot: the producer may
// refill it). No block barrier is left in the main loop, so a slow warpgroup holds up no other
// and the copies are never on the consumers' path.
//
// This file finds where that can be done: the kernel's copies must all be TMA box copies
// (tma_copy.h) in the pipeline's prologue and its fetch statement, with nothing else there,
// each into the slot of the tile the producer counts it as,
// reached from the kernel's top only through blocks, thread bindings (the producer takes their
// variables as 0, as the single issuing thread of the unspecialised kernel does), statement
// lists, allocations, conditions that no thread index decides, and loops of one iteration.
// The writer (kernel_writer/producer.cpp) writes the two roles from that plan.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "metatune/gpu_codegen/kernel_plan.hpp"
#include "tma_copy.h"

namespace mt::gpu_codegen {

struct ProducerPlan {
  const P::StmtNode* prologue = nullptr; // the pipeline's prologue loop
  const P::StmtNode* pipeline = nullptr; // the pipelined loop; its statement 0 is the fetch
  int64_t stages = 0;                    // software_pipeline.h's S
  int64_t spare = 0;                     // slots beyond the stages (products left in flight)
};

// The plan for `body`, or nullopt with `why` set. `tma_copy_of` gives the copy of each fetch
// nest the writer copies with TMA (nullptr for the others). The producer numbers tiles itself
// (the prologue's iteration i fetches tile i, the loop's iteration k tile k + S - 1): each
// copy's slot is checked to be that tile's (tile % slots) by running its index arithmetic.
std::optional<ProducerPlan>
plan_producer(const P::Stmt& body,
              const std::function<const TmaCopy*(const P::StmtNode*)>& tma_copy_of,
              std::string* why);

} // namespace mt::gpu_codegen
