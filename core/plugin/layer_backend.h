// What a model layer builds with (plugin ABI 1.5, 1.7): the host side of a layer context. The
// model instantiator (core/model) implements LayerBackend for one layer of the config tree --
// its parameters as placeholders of the model, its children built on demand -- and the host
// API's layer_* functions forward to it. The C handles behind the opaque layer types are at
// the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/workload/te.h"

struct mt_te_builder_s;

namespace mt {

// A parameter a layer declares: its name relative to the layer, shape, dtype, initialiser.
struct LayerParamDecl {
  std::string name;
  DType dtype = DType::f32();
  std::vector<int64_t> shape;
  std::string init; // JSON, see host_api.h layer_param_push; "" = normal(0.02)
};

class LayerBackend {
public:
  virtual ~LayerBackend() = default;
  // The model's builder: every tensor handed to the layer is kept there.
  virtual mt_te_builder_s& builder() = 0;
  // A declared parameter's placeholder; throws naming the layer when it declared none so.
  virtual te::Tensor param(const std::string& name) = 0;
  virtual size_t num_children(const std::string& field) = 0;
  virtual std::vector<te::Tensor> call_child(const std::string& field, size_t index,
                                             const std::vector<te::Tensor>& inputs) = 0;
  // ABI 1.7 (host_api.h layer_positions / layer_state_append): the positions input of a
  // decode step (an undefined tensor otherwise), and a state's rows handed over, its cache
  // given back when decoding (an undefined tensor otherwise).
  virtual te::Tensor positions() = 0;
  virtual te::Tensor state_append(const std::string& name, const te::Tensor& rows) = 0;
  // ABI 1.9 (layer_state_write): the same, the rows written into the cache in place before
  // anything reads it, which then holds the step's positions too.
  virtual te::Tensor state_write(const std::string& name, const te::Tensor& rows) = 0;
};

} // namespace mt

struct mt_layer_context_s {
  explicit mt_layer_context_s(mt::LayerBackend& b) : backend(&b) {}
  mt::LayerBackend* backend;
};

struct mt_layer_param_list_s {
  std::vector<mt::LayerParamDecl> params;
};
