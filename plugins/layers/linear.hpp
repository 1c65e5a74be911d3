// std.Linear (see linear.cpp).
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

class Linear : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "y = x W^T + b over the last axis (weight [output_dim, input_dim])",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "features in"},
      {"name": "output_dim", "type": "int", "required": true, "doc": "features out"},
      {"name": "bias", "type": "bool", "default": true, "doc": "add a bias"}]})json";
  explicit Linear(std::string_view config);
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  sdk::LayerConfig cfg_;
  int64_t in_ = 0, out_ = 0;
  bool bias_ = true;
};

} // namespace mt::std_layers
