// Shared tensor-expression pieces of the standard layers (see te_ops.hpp).
#include "te_ops.hpp"

namespace mt::std_layers {

TeExpr activation(TensorBuilder& b, const std::string& name, TeExpr x) {
  if (name == "gelu") return gelu(b, x);
  if (name == "gelu_tanh") return gelu_tanh(b, x);
  if (name == "relu") return sdk::max(x, f32(b, 0.0));
  if (name == "silu") return silu(b, x);
  if (name == "linear" || name == "none") return x;
  throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                   "unknown activation '" + name + "' (gelu, gelu_tanh, relu, silu, linear)");
}

TeTensor single_input(const std::string& layer, const std::vector<TeTensor>& inputs, int64_t dim) {
  if (inputs.size() != 1)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     layer + " takes one input, " + std::to_string(inputs.size()) + " given");
  std::vector<int64_t> s = inputs[0].shape();
  if (s.empty() || s.back() != dim)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     layer + ": input's last axis is " +
                         (s.empty() ? std::string("missing") : std::to_string(s.back())) +
                         ", input_dim is " + std::to_string(dim));
  return inputs[0];
}

} // namespace mt::std_layers
