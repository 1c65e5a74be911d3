// std.LayerNorm and std.RMSNorm: normalisation over the last axis (see layer_norm.cpp).
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

class LayerNorm : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "y = (x - mean) / sqrt(var + eps) * scale + bias over the last axis",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "features normalised"},
      {"name": "eps", "type": "float", "default": 1e-5, "doc": "added to the variance"}]})json";
  explicit LayerNorm(std::string_view config);
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t dim_ = 0;
  double eps_ = 1e-5;
};

class RMSNorm : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "y = x / sqrt(mean(x^2) + eps) * scale over the last axis (Llama)",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "features normalised"},
      {"name": "eps", "type": "float", "default": 1e-6, "doc": "added to the mean square"}]})json";
  explicit RMSNorm(std::string_view config);
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t dim_ = 0;
  double eps_ = 1e-6;
};

} // namespace mt::std_layers
