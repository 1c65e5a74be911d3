// Groups that compute the same function of the same tensors run once. Every attention layer
// of a rotary model builds its own sine and cosine tables from the same positions -- twelve
// equal kernels on equal inputs in a 12-layer Llama, in the prompt and in every decode step.
// Of such groups the first stays; the later ones are dropped and what read their outputs
// reads the first one's. A group whose output the model's caller reads is kept.
#pragma once

#include <vector>

#include "core/graph/fusion.h"

namespace mt {

// `groups` (in fuse()'s order) without the repeats; `outputs`: the model's.
std::vector<FusedGroup> without_repeated_groups(std::vector<FusedGroup> groups,
                                                const std::vector<te::Tensor>& outputs);

} // namespace mt
