// Instantiation of a config tree into a tensor-expression graph (see model_graph.h).
#include "core/graph/model_graph.h"

#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"
#include "core/plugin/layer_backend.h"
#include "core/plugin/layer_schema.h"
#include "core/plugin/plugin_components.h"
#include "core/plugin/plugin_host.h"

namespace mt {

namespace {

// The model under construction: its builder, parameters, and one LayerNode per config node.
class Instantiation;

class LayerNode : public LayerBackend {
public:
  LayerNode(Instantiation& model, std::string path, const nlohmann::json& config);

  mt_te_builder_s& builder() override;
  te::Tensor param(const std::string& name) override;
  size_t num_children(const std::string& field) override;
  std::vector<te::Tensor> call_child(const std::string& field, size_t index,
                                     const std::vector<te::Tensor>& inputs) override;

  std::vector<te::Tensor> build(const std::vector<te::Tensor>& inputs);
  const std::string& path() const { return path_; }

private:
  std::string where() const { return "layer '" + kind_ + "' at '" + path_ + "'"; }
  const SchemaChildField& child_field(const std::string& field) const;
  const nlohmann::json* child_config(const std::string& field, size_t index);
  std::string child_path(const std::string& field, size_t index) const;

  Instantiation& model_;
  std::string path_, kind_;
  nlohmann::json config_;
  std::unique_ptr<PluginLayer> layer_;
  std::map<std::string, SchemaChildField> child_fields_;
  std::map<std::string, te::Tensor> params_;
  std::map<std::pair<std::string, size_t>, std::unique_ptr<LayerNode>> children_;
};

class Instantiation {
public:
  explicit Instantiation(const PluginHost& host) : host_(host) {
    mt_te_builder* b = nullptr;
    if (host_api()->te_builder_create(&b) != MT_OK) throw std::runtime_error("te_builder_create");
    builder_ = b;
  }
  ~Instantiation() { host_api()->te_builder_release(builder_); }
  Instantiation(const Instantiation&) = delete;
  Instantiation& operator=(const Instantiation&) = delete;

  const PluginHost& host() const { return host_; }
  mt_te_builder_s& builder() { return *builder_; }
  std::vector<ModelParam>& params() { return params_; }

private:
  const PluginHost& host_;
  mt_te_builder_s* builder_ = nullptr;
  std::vector<ModelParam> params_;
};

LayerNode::LayerNode(Instantiation& model, std::string path, const nlohmann::json& config)
    : model_(model), path_(std::move(path)), config_(config) {
  if (!config_.is_object() || !config_.contains("kind") || !config_["kind"].is_string())
    throw std::invalid_argument("config at '" + path_ + "' is not an object with a \"kind\"");
  kind_ = config_["kind"];
  bool known = false;
  for (const ComponentInfo& c : model_.host().components(ComponentKind::Layer))
    known = known || c.name == kind_;
  if (!known)
    throw std::invalid_argument("unknown layer '" + kind_ + "' at '" + path_ +
                                "' (plugin not found: no loaded plugin registers it; "
                                "`metatune layers` lists those that do)");
  try {
    layer_ = model_.host().create_layer(kind_, config_.dump());
  } catch (const std::exception& e) {
    throw std::invalid_argument(where() + ": " + e.what());
  }
  if (!layer_->is_model_layer())
    throw std::invalid_argument(where() + " is a version-1 layer (forward only): it cannot be "
                                          "part of a model config tree");
  try {
    for (SchemaChildField& c : schema_child_fields(layer_->schema()))
      child_fields_[c.name] = std::move(c);
    for (LayerParamDecl& d : layer_->parameters()) {
      ModelParam p;
      p.path = path_.empty() ? d.name : path_ + "." + d.name;
      p.dtype = d.dtype;
      p.shape = d.shape;
      p.init = d.init;
      p.placeholder = te::placeholder(p.shape, p.dtype, p.path);
      params_[d.name] = p.placeholder;
      model_.params().push_back(std::move(p));
    }
  } catch (const std::exception& e) {
    throw std::invalid_argument(where() + ": " + e.what());
  }
}

mt_te_builder_s& LayerNode::builder() {
  return model_.builder();
}

te::Tensor LayerNode::param(const std::string& name) {
  auto it = params_.find(name);
  if (it == params_.end()) {
    std::string have;
    for (const auto& [n, t] : params_)
      have += (have.empty() ? "" : ", ") + n;
    throw std::invalid_argument(
        where() + " asks for parameter '" + name +
        "' it did not declare (declared: " + (have.empty() ? "none" : have) + ")");
  }
  return it->second;
}

const SchemaChildField& LayerNode::child_field(const std::string& field) const {
  auto f = child_fields_.find(field);
  if (f == child_fields_.end())
    throw std::invalid_argument(where() + ": '" + field + "' is not a layer field of its schema");
  return f->second;
}

const nlohmann::json* LayerNode::child_config(const std::string& field, size_t index) {
  const SchemaChildField& f = child_field(field);
  auto it = config_.find(field);
  if (it == config_.end() || it->is_null() || index >= num_children(field)) return nullptr;
  if (f.kind != SchemaChildField::Kind::List) return &*it;
  if (!it->is_array())
    throw std::invalid_argument(where() + ": field '" + field + "' is a layer_list, not a list");
  return &(*it)[index];
}

std::string LayerNode::child_path(const std::string& field, size_t index) const {
  std::string p = path_.empty() ? field : path_ + "." + field;
  return child_fields_.at(field).kind == SchemaChildField::Kind::Single
             ? p
             : p + "." + std::to_string(index);
}

size_t LayerNode::num_children(const std::string& field) {
  const SchemaChildField& f = child_field(field);
  auto it = config_.find(field);
  if (it == config_.end() || it->is_null()) return 0;
  switch (f.kind) {
  case SchemaChildField::Kind::Single:
    return 1;
  case SchemaChildField::Kind::List:
    return it->is_array() ? it->size() : 0;
  case SchemaChildField::Kind::Repeated: {
    auto n = config_.find(f.count_field);
    if (n == config_.end() || !n->is_number_integer() || n->get<int64_t>() < 0)
      throw std::invalid_argument(where() + ": '" + f.count_field + "' (the count of '" + field +
                                  "') is not a count");
    return static_cast<size_t>(n->get<int64_t>());
  }
  }
  return 0;
}

std::vector<te::Tensor> LayerNode::call_child(const std::string& field, size_t index,
                                              const std::vector<te::Tensor>& inputs) {
  auto key = std::make_pair(field, index);
  auto it = children_.find(key);
  if (it == children_.end()) {
    const nlohmann::json* c = child_config(field, index);
    if (!c)
      throw std::invalid_argument(where() + ": child " + std::to_string(index) + " of '" + field +
                                  "' is not set (" + std::to_string(num_children(field)) +
                                  " there)");
    it = children_.emplace(key, std::make_unique<LayerNode>(model_, child_path(field, index), *c))
             .first;
  }
  return it->second->build(inputs);
}

std::vector<te::Tensor> LayerNode::build(const std::vector<te::Tensor>& inputs) {
  try {
    return layer_->build(*this, inputs);
  } catch (const std::invalid_argument&) {
    throw; // already names the layer that failed (a child's own error included)
  } catch (const std::exception& e) {
    throw std::invalid_argument(where() + ": " + e.what());
  }
}

} // namespace

ModelGraph instantiate_model(const PluginHost& host, const nlohmann::json& config,
                             const std::vector<te::Tensor>& inputs) {
  Instantiation model(host);
  LayerNode root(model, "", config);
  ModelGraph g;
  g.inputs = inputs;
  g.outputs = root.build(inputs);
  if (g.outputs.empty()) throw std::invalid_argument("the model's root layer built no output");
  g.params = std::move(model.params());
  return g;
}

} // namespace mt
