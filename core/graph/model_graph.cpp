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
  te::Tensor positions() override;
  te::Tensor state_append(const std::string& name, const te::Tensor& rows) override;
  te::Tensor state_write(const std::string& name, const te::Tensor& rows) override;

  std::vector<te::Tensor> build(const std::vector<te::Tensor>& inputs);
  const std::string& path() const { return path_; }

private:
  std::string where() const { return "layer '" + kind_ + "' at '" + path_ + "'"; }
  te::Tensor state(const std::string& name, const te::Tensor& rows, bool written_in_place);
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
  Instantiation(const PluginHost& host, BuildMode mode, const std::vector<te::Tensor>& inputs)
      : host_(host), mode_(mode) {
    if (mode_.kind != BuildMode::Kind::Whole) {
      if (inputs.empty() || inputs[0].ndim() < 2)
        throw std::invalid_argument("a model built for generation takes ids [B, S] first");
      batch_ = inputs[0].shape()[0];
      seq_ = inputs[0].shape()[1];
    }
    if (mode_.kind == BuildMode::Kind::Decode) {
      if (mode_.capacity < seq_)
        throw std::invalid_argument("decode step of " + std::to_string(seq_) +
                                    " tokens against a cache of capacity " +
                                    std::to_string(mode_.capacity));
      positions_ = te::placeholder({batch_, seq_}, DType::i32(), "positions");
    }
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
  const BuildMode& mode() const { return mode_; }
  const te::Tensor& positions() const { return positions_; }
  std::vector<ModelState>& states() { return states_; }

  // The state `path` appends `rows` to (see host_api.h layer_state_append).
  te::Tensor state_append(const std::string& where, const std::string& path, const te::Tensor& rows,
                          bool written_in_place) {
    if (mode_.kind == BuildMode::Kind::Whole) return {};
    if (rows.ndim() != 3 || rows.shape()[0] != batch_ || rows.shape()[1] != seq_)
      throw std::invalid_argument(where + ": state rows must be [" + std::to_string(batch_) + ", " +
                                  std::to_string(seq_) + ", W], not of rank " +
                                  std::to_string(rows.ndim()));
    for (const ModelState& s : states_)
      if (s.path == path) throw std::invalid_argument(where + ": state '" + path + "' twice");
    ModelState s;
    s.path = path;
    s.rows = rows;
    s.written_in_place = written_in_place;
    if (mode_.kind == BuildMode::Kind::Decode)
      s.cache = te::placeholder({batch_, mode_.capacity, rows.shape()[2]}, rows.dtype(), path);
    states_.push_back(s);
    return s.cache;
  }

private:
  const PluginHost& host_;
  BuildMode mode_;
  int64_t batch_ = 0, seq_ = 0;
  te::Tensor positions_;
  std::vector<ModelState> states_;
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

te::Tensor LayerNode::positions() {
  return model_.positions();
}

te::Tensor LayerNode::state_append(const std::string& name, const te::Tensor& rows) {
  return state(name, rows, /*written_in_place=*/false);
}

te::Tensor LayerNode::state_write(const std::string& name, const te::Tensor& rows) {
  return state(name, rows, /*written_in_place=*/true);
}

te::Tensor LayerNode::state(const std::string& name, const te::Tensor& rows,
                            bool written_in_place) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw std::invalid_argument(where() + ": state name '" + name + "' is empty or has a '.'");
  return model_.state_append(where(), path_.empty() ? name : path_ + "." + name, rows,
                             written_in_place);
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
                             const std::vector<te::Tensor>& inputs, BuildMode mode) {
  Instantiation model(host, mode, inputs);
  LayerNode root(model, "", config);
  ModelGraph g;
  g.inputs = inputs;
  g.mode = mode;
  g.outputs = root.build(inputs);
  if (g.outputs.empty()) throw std::invalid_argument("the model's root layer built no output");
  g.num_root_outputs = g.outputs.size();
  g.params = std::move(model.params());
  if (mode.kind != BuildMode::Kind::Whole && model.states().empty())
    throw std::invalid_argument("the model keeps no state across steps (no layer appends to "
                                "a cache): it cannot be built for generation");
  if (mode.kind == BuildMode::Kind::Decode) {
    g.positions = model.positions();
    g.positions_input = g.inputs.size();
    g.inputs.push_back(g.positions);
  }
  g.states = std::move(model.states());
  for (ModelState& s : g.states) {
    s.output = g.outputs.size();
    g.outputs.push_back(s.rows);
    if (s.cache) {
      s.input = g.inputs.size();
      g.inputs.push_back(s.cache);
    }
  }
  return g;
}

} // namespace mt
