// The prefill of text generation needs the logits of one position: the prompt's last, whose
// arg max (or sample) is the first new token. A decoder computes them for every position --
// its LM head is the largest matrix product of the prompt (Llama-style small model: 21 of
// about 100 ms) -- so the prefill graph keeps the last position's row only. The row is a
// run-time input: a prompt is padded to its bucket, and its last position varies within it.
#pragma once

#include "core/graph/model_graph.h"

namespace mt {

// Rewrites `g`'s first output, logits [B, S, V] (a compute reading one tensor x[b, s, ...]
// along its sequence axis), into [B, 1, V]: the same value at position last_position[b] (a
// new input [B] i32, clamped into [0, S); its index is g.last_position_input). x's row is
// gathered first, so that the product is a plain one -- the decode step's LM head, the same
// task, and one a library implements. Every other output, the states' rows included, is
// unchanged. An elementwise function of such logits (a soft-cap) is kept as that function of
// the one row. Returns false, leaving `g` as it was, when the first output is not of that form.
bool keep_last_position_logits(ModelGraph& g);

} // namespace mt
