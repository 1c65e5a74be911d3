// Arguments of a plan's parameters (plan_arguments.hpp).
#include "metatune/gpu_codegen/plan_arguments.hpp"

#include "metatune/sdk/error.hpp"

namespace mt::gpu_codegen {

void check_arguments(const KernelPlan& plan, const std::vector<sdk::TensorView>& args,
                     const std::string& target) {
  if (args.size() != plan.num_params)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     target + ": " + std::to_string(args.size()) + " arguments for " +
                         std::to_string(plan.num_params) + " parameters of " + plan.name);
  for (size_t i = 0; i < args.size(); ++i) {
    const P::BufferNode& b = *plan.buffers[i];
    if (!(args[i].dtype == b.dtype) || args[i].shape != b.shape)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                       target + ": argument " + std::to_string(i) + " ('" + b.name +
                           "') has the wrong dtype or shape (want " + P::to_string(b.dtype) +
                           " with " + std::to_string(b.shape.size()) + " dimensions)");
  }
}

std::vector<bool> written_params(const KernelPlan& plan) {
  std::vector<bool> written(plan.num_params, false);
  for (const auto& k : plan.kernels)
    P::visit_stmts(k.body, [&](const P::Stmt& s) {
      if (s->kind == P::StmtKind::Store)
        for (size_t i = 0; i < plan.num_params; ++i)
          if (plan.buffers[i]->id == s->buffer->id) written[i] = true;
      return true;
    });
  return written;
}

} // namespace mt::gpu_codegen
