// The model-layer part of the host API table (ABI 1.5, 1.7): a layer declares its parameters and
// builds on a layer context, forwarded to the model instantiator's LayerBackend
// (layer_backend.h).
#include <nlohmann/json.hpp>

#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"
#include "core/plugin/layer_backend.h"

namespace mt::plugin_detail {

namespace {

LayerBackend& backend_of(mt_layer_context* ctx) {
  return *require(ctx, "layer context")->backend;
}

const te::Tensor& tensor_of(const mt_te_tensor* t, const char* what) {
  return require(t, what)->tensor;
}

mt_status layer_param_push(mt_layer_param_list* list, mt_str name, mt_dtype dtype,
                           const int64_t* shape, size_t ndim, mt_str init) {
  return guard("layer_param_push", [&] {
    auto& l = *require(list, "parameter list");
    LayerParamDecl d;
    d.name = std::string(view(name));
    if (d.name.empty() || d.name.find('.') != std::string::npos)
      throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                     "parameter name '" + d.name + "': empty or contains '.'");
    for (const LayerParamDecl& p : l.params)
      if (p.name == d.name)
        throw ApiError(MT_ERROR_INVALID_ARGUMENT, "parameter '" + d.name + "' declared twice");
    d.dtype = from_c(dtype);
    if (ndim && !shape) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "shape is NULL");
    d.shape.assign(shape, shape + ndim);
    for (int64_t x : d.shape)
      if (x <= 0)
        throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                       "parameter '" + d.name + "': dimension " + std::to_string(x));
    d.init = std::string(view(init));
    if (!d.init.empty()) {
      nlohmann::json j = nlohmann::json::parse(d.init, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string())
        throw ApiError(MT_ERROR_INVALID_ARGUMENT, "parameter '" + d.name +
                                                      "': initialiser is not a JSON object "
                                                      "with a \"kind\": " +
                                                      d.init);
    }
    l.params.push_back(std::move(d));
  });
}

mt_te_builder* layer_builder(mt_layer_context* ctx) {
  return ctx ? &ctx->backend->builder() : nullptr;
}

mt_status layer_param(mt_layer_context* ctx, mt_str name, const mt_te_tensor** out) {
  return guard("layer_param", [&] {
    LayerBackend& b = backend_of(ctx);
    *require(out, "out") = b.builder().keep(b.param(std::string(view(name))));
  });
}

mt_status layer_num_children(mt_layer_context* ctx, mt_str field, size_t* out) {
  return guard("layer_num_children", [&] {
    *require(out, "out") = backend_of(ctx).num_children(std::string(view(field)));
  });
}

mt_status layer_call_child(mt_layer_context* ctx, mt_str field, size_t index,
                           const mt_te_tensor* const* inputs, size_t num_inputs,
                           const mt_te_tensor** outputs, size_t capacity, size_t* num_outputs) {
  return guard("layer_call_child", [&] {
    LayerBackend& b = backend_of(ctx);
    require(num_outputs, "num_outputs");
    if (num_inputs && !inputs) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "inputs is NULL");
    std::vector<te::Tensor> ins;
    for (size_t i = 0; i < num_inputs; ++i)
      ins.push_back(tensor_of(inputs[i], "input"));
    std::vector<te::Tensor> outs = b.call_child(std::string(view(field)), index, ins);
    *num_outputs = outs.size();
    if (outs.size() > capacity) {
      throw ApiError(MT_ERROR_BUFFER_TOO_SMALL, "child '" + std::string(view(field)) + "' has " +
                                                    std::to_string(outs.size()) + " outputs, " +
                                                    std::to_string(capacity) + " slots given");
    }
    if (outs.size() && !outputs) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "outputs is NULL");
    for (size_t i = 0; i < outs.size(); ++i)
      outputs[i] = b.builder().keep(outs[i]);
  });
}

mt_status layer_positions(mt_layer_context* ctx, const mt_te_tensor** out) {
  return guard("layer_positions", [&] {
    LayerBackend& b = backend_of(ctx);
    te::Tensor p = b.positions();
    *require(out, "out") = p ? b.builder().keep(p) : nullptr;
  });
}

mt_status layer_state_append(mt_layer_context* ctx, mt_str name, const mt_te_tensor* rows,
                             const mt_te_tensor** cache) {
  return guard("layer_state_append", [&] {
    LayerBackend& b = backend_of(ctx);
    require(cache, "cache");
    te::Tensor c = b.state_append(std::string(view(name)), tensor_of(rows, "rows"));
    *cache = c ? b.builder().keep(c) : nullptr;
  });
}

mt_status layer_state_write(mt_layer_context* ctx, mt_str name, const mt_te_tensor* rows,
                            const mt_te_tensor** cache) {
  return guard("layer_state_write", [&] {
    LayerBackend& b = backend_of(ctx);
    require(cache, "cache");
    te::Tensor c = b.state_write(std::string(view(name)), tensor_of(rows, "rows"));
    *cache = c ? b.builder().keep(c) : nullptr;
  });
}

} // namespace

void fill_layer_api(mt_host_api& t) {
  t.layer_param_push = layer_param_push;
  t.layer_builder = layer_builder;
  t.layer_param = layer_param;
  t.layer_num_children = layer_num_children;
  t.layer_call_child = layer_call_child;
  t.layer_positions = layer_positions;
  t.layer_state_append = layer_state_append;
  t.layer_state_write = layer_state_write;
}

} // namespace mt::plugin_detail
