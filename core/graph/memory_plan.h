// The static memory plan of a model run: every intermediate tensor (a group output that only
// later groups read) gets an offset in one arena, and tensors whose lifetimes do not overlap
// share bytes. A lifetime runs from the group that writes the tensor to the last group that
// reads it (group order is the run order). The model's outputs, inputs and parameters are not
// planned: the caller owns them.
//
// Placement is greedy by size, largest first, each tensor at the lowest offset where it fits
// between the tensors already placed whose lifetimes overlap its own -- the usual heuristic
// for this offline interval-colouring problem; the plan is checked, not trusted (verify()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/graph/fusion.h"

namespace mt {

struct PlannedBuffer {
  const te::TensorNode* tensor = nullptr;
  size_t bytes = 0;
  size_t offset = 0;          // in the arena, a multiple of kAlignment
  size_t first = 0, last = 0; // groups writing and last reading it
};

struct MemoryPlan {
  static constexpr size_t kAlignment = 64;
  std::vector<PlannedBuffer> buffers;
  size_t arena_bytes = 0;     // what the plan needs
  size_t unplanned_bytes = 0; // what one buffer per tensor would need
  // Throws std::logic_error if two buffers live at once and overlap in the arena.
  void verify() const;
};

// `outputs`: the model's outputs (left out of the plan).
MemoryPlan plan_memory(const std::vector<FusedGroup>& groups,
                       const std::vector<te::Tensor>& outputs);

} // namespace mt
