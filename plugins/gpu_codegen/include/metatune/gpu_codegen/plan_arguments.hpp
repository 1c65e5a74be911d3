// What every GPU target's module does with the host's arguments: check them against the plan's
// parameters, and know which parameters the kernels write (copied back after a run).
#pragma once

#include <string>
#include <vector>

#include "metatune/gpu_codegen/kernel_plan.hpp"
#include "metatune/sdk/components.hpp"

namespace mt::gpu_codegen {

// Throws sdk::Error(MT_ERROR_INVALID_ARGUMENT) naming `target` and the parameter when the
// arguments do not match the plan's parameters in number, dtype or shape.
void check_arguments(const KernelPlan& plan, const std::vector<sdk::TensorView>& args,
                     const std::string& target);

// written[i]: some kernel stores to parameter i.
std::vector<bool> written_params(const KernelPlan& plan);

} // namespace mt::gpu_codegen
