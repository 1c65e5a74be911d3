// std.Embedding (see embedding.cpp).
#pragma once

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

// ids [...] (integers) -> weight[ids, :] [..., dim]; an id outside [0, num_embeddings) reads
// the nearest row (clamped) rather than memory outside the table.
class Embedding : public sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "a learnt vector per id: weight[ids] (weight [num_embeddings, dim])",
    "fields": [
      {"name": "num_embeddings", "type": "int", "required": true, "doc": "ids (vocabulary size)"},
      {"name": "dim", "type": "int", "required": true, "doc": "width of a vector"}]})json";
  explicit Embedding(std::string_view config);
  void parameters(sdk::ParamList& p) override;
  std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
                                   const std::vector<sdk::TeTensor>& inputs) override;

private:
  int64_t num_ = 0, dim_ = 0;
};

} // namespace mt::std_layers
