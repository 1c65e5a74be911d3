// std.Dropout (see dropout.hpp).
#include "dropout.hpp"

namespace mt::std_layers {

Dropout::Dropout(std::string_view config) {
  double rate = sdk::LayerConfig(config).get<double>("rate");
  if (!(rate >= 0 && rate < 1))
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                     "std.Dropout: rate must be in [0, 1), got " + std::to_string(rate));
}

std::vector<sdk::TeTensor> Dropout::build(sdk::LayerContext& /*ctx*/,
                                          const std::vector<sdk::TeTensor>& inputs) {
  if (inputs.size() != 1)
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.Dropout takes one tensor");
  return inputs;
}

} // namespace mt::std_layers
