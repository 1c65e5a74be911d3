// std.Embedding: a gather from the weight table by integer ids (the index is data, cast to the
// index type and clamped into the table).
#include "embedding.hpp"

#include "te_ops.hpp"

namespace mt::std_layers {

Embedding::Embedding(std::string_view config) {
  sdk::LayerConfig cfg(config);
  num_ = cfg.get<int64_t>("num_embeddings");
  dim_ = cfg.get<int64_t>("dim");
}

void Embedding::parameters(sdk::ParamList& p) {
  p.push("weight", sdk::DType::f32(), {num_, dim_});
}

std::vector<TeTensor> Embedding::build(sdk::LayerContext& ctx,
                                       const std::vector<TeTensor>& inputs) {
  if (inputs.size() != 1 || !inputs[0].dtype().is_int())
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "std.Embedding takes one tensor of integer ids");
  const TeTensor& ids = inputs[0];
  TensorBuilder& b = ctx.builder();
  TeTensor w = ctx.param("weight");
  std::vector<int64_t> shape = ids.shape();
  shape.push_back(dim_);
  return {b.compute("embedding", shape, [&](const std::vector<TeExpr>& v) {
    TeExpr id = b.cast(sdk::DType::index(), ids(leading(v)));
    id = sdk::min(sdk::max(id, b.int_imm(0)), b.int_imm(num_ - 1));
    return w(id, v.back());
  })};
}

} // namespace mt::std_layers
