// std.Dropout: at inference an identity (metatune builds inference graphs: no training step
// draws masks), kept as a layer so that configs written for training -- AXLearn's and Hugging
// Face's name a dropout after attention and in the feed-forward block -- load unchanged.
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

class Dropout : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "dropout; at inference the identity",
    "fields": [
      {"name": "rate", "type": "float", "default": 0.1,
       "doc": "probability of dropping a value in training (unused at inference)"}]})json";
  explicit Dropout(std::string_view config);
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;
};

} // namespace mt::std_layers
