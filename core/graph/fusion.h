// Fusion: a model's tensor-expression graph cut into the kernels that run it. Each group is
// one Function -- one tuning task, one kernel call -- holding an anchor and the work fused
// with it:
//   - a contraction (a reduction over an axis that indexes two tensors: matmul, attention
//     scores) with the elementwise work after it (bias, activation, residual add, scaling);
//     at most one contraction per group;
//   - row reductions (over an axis indexing one tensor: the sums and maxima of softmax,
//     layernorm, rmsnorm) with the elementwise work between and after them, the whole row
//     computation in one group;
//   - elementwise work with no anchor before it (an embedding gather) in a group of its own.
// A compute joins the group of its latest producer when the kinds allow it and no other
// group stands between them (that would make the groups depend on each other both ways).
// An elementwise compute larger than the contraction it follows is not its epilogue and
// starts a group of its own; a contraction does not take elementwise work on other groups'
// outputs as a prologue (it would be recomputed per reduction term). What another group or the model's caller reads becomes a group
// output.
#pragma once

#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/workload/te.h"

namespace mt {

struct FusedGroup {
  std::string name;                 // "fused_<anchor>" (unique in the model)
  std::vector<te::Tensor> inputs;   // placeholders, or outputs of earlier groups
  std::vector<te::Tensor> outputs;  // read by later groups or by the caller
  std::vector<te::Tensor> computes; // every compute of the group, in graph order
  bool has_contraction = false;
  Function func; // params = inputs, then outputs
};

// The groups, in an order that runs each after the groups it reads. `outputs`: the model's.
// Groups that would compute the same function of the same tensors are one
// (repeated_groups.h).
std::vector<FusedGroup> fuse(const std::vector<te::Tensor>& outputs);

// Whether the reduction compute `t` is a contraction (as above).
bool is_contraction(const te::Tensor& t);

} // namespace mt
