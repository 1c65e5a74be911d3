// The prefill of text generation needs the logits of one position: the prompt's last, whose
// arg max (or sample) is the first new token. A decoder computes them for every position --
// its LM head is the largest matrix product of the prompt (Llama-style small model: 21 of
// about 100 ms) -- so the prefill graph keeps the last position's row only. The row is a
// run-time input: a prompt is padded to its bucket, and its last position varies within it.
#pragma once

#include "core/graph/model_graph.h"

namespace mt {

// Rewrites `g`'s first output, logits [B, S, V] (a compute), into [B, 1, V]: the same value
// at position last_position[b] (a new input [B] i32, clamped into [0, S); its index is
// g.last_position_input). Every other output, the states' rows included, is unchanged.
// Returns false, leaving `g` as it was, when the first output is not such a compute.
bool keep_last_position_logits(ModelGraph& g);

} // namespace mt
