// Software pipelining at lowering: a loop annotated `software_pipeline_stages = S` (S >= 2;
// the tensor-core rule puts it on the k loop of a GPU tile) whose body begins with statements
// that only fill block-shared buffers -- the producers, the k-tile's fetch -- and goes on with
// statements that read them -- the consumers -- becomes
//
//   for s in [0, S-1):                      software_pipeline_prologue = S
//     producers(k = s)  into slot s
//   for k in [0, K):                        software_pipeline_stages = S
//     if (k < K - (S-1)) producers(k + S-1)  into slot (k + S-1) % S
//     consumers(k)                          from slot k % S
//
// with each such buffer given a leading dimension of S slots. Iteration k then fetches the
// tile S-1 steps ahead while it computes on its own, which a GPU with asynchronous copies
// overlaps (CUDA's cp.async on sm_80+: the GPU generator issues the producers' copies
// asynchronously, commits one group per producer step and waits for the oldest before the
// barrier that precedes the consumers; see plugins/gpu_codegen). Each top loop of a producer
// is marked `software_pipeline_async_copy = 1` for it. As written the program is an ordinary
// loop program: the interpreter runs it and checks the restructuring; a target without
// asynchronous copies runs the copies as they come.
//
// Requirements, checked (otherwise the loop is left as it was and the annotation removed, so
// a target never reads a half-applied request): the loop is serial, K >= 2; the producers are
// the leading statements of its body and each writes only "shared" buffers allocated outside
// the loop, accessed nowhere but in it; the consumers never write them; the producers read
// nothing the loop writes. Assumed, as the annotation's contract: the producers of an
// iteration write every element its consumers read (true of a k-tile's fetch, whose region is
// the tile's, compaction having made the buffer one iteration's region). S larger than K is
// cut to K. With software_pipeline_spare_slots = n beside it, each buffer has S + n slots and
// slot indices run modulo S + n: the fetch of iteration k then overwrites the slot iteration
// k - 1 - n read, for consumers still reading after their iteration ends (wgmma).
#pragma once

#include "core/ir/stmt.h"

namespace mt {

// The loop annotations (the ABI spells them MT_LOOP_SOFTWARE_PIPELINE_*, checked equal in
// core/plugin/host_api_program.cpp).
inline constexpr const char* kSoftwarePipelineStages = "software_pipeline_stages";
inline constexpr const char* kSoftwarePipelinePrologue = "software_pipeline_prologue";
inline constexpr const char* kSoftwarePipelineAsyncCopy = "software_pipeline_async_copy";
// n more slots than stages: iteration k's fetch (k + S-1) overwrites the slot of k - 1 - n.
inline constexpr const char* kSoftwarePipelineSpareSlots = "software_pipeline_spare_slots";

// Applies every software_pipeline_stages annotation of a lowered body (after compaction).
Stmt software_pipeline(const Stmt& body);

} // namespace mt
