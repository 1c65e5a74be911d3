// Model layers for plugins (plugin ABI 1.5; positions and decoding state 1.7): derive from
// ModelLayer, give the class a static `kSchema` (the config fields, JSON;
// plugin_api/metatune/plugin_api/components.h), declare parameters and build the computation from
// tensor expressions and the layer's children.
//
//   class Scale : public sdk::ModelLayer {
//   public:
//     static constexpr const char* kSchema = R"({"doc": "y = x * w",
//       "fields": [{"name": "dim", "type": "int", "required": true, "doc": "features"}]})";
//     explicit Scale(std::string_view config) : cfg_(config) {}
//     void parameters(sdk::ParamList& p) override {
//       p.push("weight", sdk::DType::f32(), {cfg_.get<int64_t>("dim")}, R"({"kind": "ones"})");
//     }
//     std::vector<sdk::TeTensor> build(sdk::LayerContext& ctx,
//                                      const std::vector<sdk::TeTensor>& in) override {
//       sdk::TeTensor x = in.at(0), w = ctx.param("weight");
//       return {ctx.builder().compute("scale", x.shape(), [&](const auto& i) {
//         return x(i) * w(i.back()); })};
//     }
//   private:
//     sdk::LayerConfig cfg_;
//   };
//
// This header uses nlohmann/json (the config is JSON); a layer plugin links
// nlohmann_json::nlohmann_json.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "metatune/sdk/error.hpp"
#include "metatune/sdk/plugin.hpp"
#include "metatune/sdk/te.hpp"

namespace mt::sdk {

// The layer's node of the model's config tree, as the host created the instance with (fields
// checked, defaults filled in, shared dimensions pushed down from the parent).
class LayerConfig {
public:
  explicit LayerConfig(std::string_view text) {
    j_ = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!j_.is_object())
      throw Error(MT_ERROR_INVALID_ARGUMENT, "layer config is not a JSON object");
  }
  const std::string kind() const { return j_.value("kind", std::string()); }
  bool has(std::string_view field) const {
    auto it = j_.find(field);
    return it != j_.end() && !it->is_null();
  }
  // The field's value; an error naming the layer and field when it is missing or mistyped.
  template <typename T> T get(std::string_view field) const {
    auto it = j_.find(field);
    if (it == j_.end() || it->is_null())
      throw Error(MT_ERROR_INVALID_ARGUMENT,
                  kind() + ": field '" + std::string(field) + "' has no value");
    try {
      return it->get<T>();
    } catch (const std::exception& e) {
      throw Error(MT_ERROR_INVALID_ARGUMENT,
                  kind() + ": field '" + std::string(field) + "': " + e.what());
    }
  }
  template <typename T> T get(std::string_view field, T fallback) const {
    return has(field) ? get<T>(field) : fallback;
  }
  const nlohmann::json& json() const { return j_; }

private:
  nlohmann::json j_;
};

// Where a layer declares its parameters.
class ParamList {
public:
  explicit ParamList(mt_layer_param_list* l) : l_(l) {}
  // `init`: JSON initialiser (host_api.h layer_param_push), "" = normal with std 0.02.
  void push(std::string_view name, DType dtype, const std::vector<int64_t>& shape,
            std::string_view init = "") {
    check(api().layer_param_push(l_, to_mt_str(name), to_c(dtype), shape.data(), shape.size(),
                                 to_mt_str(init)));
  }

private:
  mt_layer_param_list* l_;
};

// What build() builds with: the model's tensor builder, the layer's parameters, its children.
class LayerContext {
public:
  explicit LayerContext(mt_layer_context* c) : c_(c), b_(api().layer_builder(c)) {}
  TensorBuilder& builder() { return b_; }
  TeTensor param(std::string_view name) {
    const mt_te_tensor* t = nullptr;
    check(api().layer_param(c_, to_mt_str(name), &t));
    return TeTensor(&b_, t);
  }
  size_t num_children(std::string_view field) {
    size_t n = 0;
    check(api().layer_num_children(c_, to_mt_str(field), &n));
    return n;
  }
  // Child `index` of `field` (a layer field: index 0) built on `inputs`.
  std::vector<TeTensor> call(std::string_view field, const std::vector<TeTensor>& inputs,
                             size_t index = 0) {
    std::vector<const mt_te_tensor*> ins;
    for (const TeTensor& t : inputs)
      ins.push_back(t.get());
    std::vector<const mt_te_tensor*> outs(8, nullptr);
    size_t n = 0;
    mt_status st = api().layer_call_child(c_, to_mt_str(field), index, ins.data(), ins.size(),
                                          outs.data(), outs.size(), &n);
    if (st == MT_ERROR_BUFFER_TOO_SMALL && n > outs.size()) {
      outs.assign(n, nullptr);
      st = api().layer_call_child(c_, to_mt_str(field), index, ins.data(), ins.size(), outs.data(),
                                  outs.size(), &n);
    }
    check(st);
    std::vector<TeTensor> r;
    for (size_t i = 0; i < n; ++i)
      r.emplace_back(&b_, outs[i]);
    return r;
  }
  // The single output of a child.
  TeTensor call1(std::string_view field, const std::vector<TeTensor>& inputs, size_t index = 0) {
    std::vector<TeTensor> r = call(field, inputs, index);
    if (r.size() != 1)
      throw Error(MT_ERROR_INVALID_ARGUMENT, "child '" + std::string(field) + "' has " +
                                                 std::to_string(r.size()) +
                                                 " outputs, one expected");
    return r[0];
  }

  // ABI 1.7. The absolute position of token (batch, seq) as an index expression: `seq` itself
  // for a whole sequence or a prefill, the decode step's position input otherwise. Layers
  // that depend on positions (position embeddings, rotary embeddings) read them here, so the
  // same layer serves every build mode.
  TeExpr position(TeExpr batch, TeExpr seq) {
    const mt_te_tensor* p = nullptr;
    check(api().layer_positions(c_, &p));
    if (!p) return seq;
    return b_.cast(DType::index(), TeTensor(&b_, p)(batch, seq));
  }
  // Whether the positions are a run-time input (a decode step).
  bool decoding() {
    const mt_te_tensor* p = nullptr;
    check(api().layer_positions(c_, &p));
    return p != nullptr;
  }
  // ABI 1.7. Hands this step's `rows` [B, S, W] of state `name` to the host (kept across
  // generation steps); gives back the cache [B, C, W] of the earlier rows when building a
  // decode step, an empty tensor (get() == nullptr) otherwise.
  TeTensor state_append(std::string_view name, const TeTensor& rows) {
    const mt_te_tensor* c = nullptr;
    check(api().layer_state_append(c_, to_mt_str(name), rows.get(), &c));
    return TeTensor(&b_, c);
  }
  // ABI 1.9. Whether the host writes a state's rows into its cache in place (state_write).
  bool can_write_state() const {
    return MT_HAS_FIELD(&api(), mt_host_api, layer_state_write) && api().layer_state_write;
  }
  // ABI 1.9 (can_write_state()). As state_append, but when decoding the host writes `rows` into
  // the cache at their positions before anything reads it: the cache given back holds this
  // step's positions too, and the layer reads it alone instead of splicing the rows into a copy.
  TeTensor state_write(std::string_view name, const TeTensor& rows) {
    const mt_te_tensor* c = nullptr;
    check(api().layer_state_write(c_, to_mt_str(name), rows.get(), &c));
    return TeTensor(&b_, c);
  }

private:
  mt_layer_context* c_;
  TensorBuilder b_;
};

class ModelLayer {
public:
  virtual ~ModelLayer() = default;
  virtual void parameters(ParamList& /*params*/) {}
  virtual std::vector<TeTensor> build(LayerContext& ctx, const std::vector<TeTensor>& inputs) = 0;
};

namespace detail {

template <typename T> mt_status model_layer_parameters(void* self, mt_layer_param_list* out) {
  return guard([&] {
    ParamList p(out);
    object<T>(self).parameters(p);
  });
}

template <typename T>
mt_status model_layer_build(void* self, mt_layer_context* ctx, const mt_te_tensor* const* inputs,
                            size_t n, const mt_te_tensor** outputs, size_t capacity,
                            size_t* count) {
  return guard([&] {
    LayerContext c(ctx);
    std::vector<TeTensor> ins;
    for (size_t i = 0; i < n; ++i)
      ins.emplace_back(&c.builder(), inputs[i]);
    std::vector<TeTensor> outs = object<T>(self).build(c, ins);
    *count = outs.size();
    if (outs.size() > capacity)
      throw Error(MT_ERROR_BUFFER_TOO_SMALL, "build has more outputs than the host expected");
    for (size_t i = 0; i < outs.size(); ++i)
      outputs[i] = outs[i].get();
  });
}

template <typename T> const mt_layer_vtable* model_layer_table() {
  static const mt_layer_vtable table = {
      sizeof(mt_layer_vtable), 1, release<T>, nullptr, T::kSchema, model_layer_parameters<T>,
      model_layer_build<T>};
  return &table;
}

} // namespace detail

} // namespace mt::sdk
