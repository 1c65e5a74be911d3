// An out-of-tree model layer: ext.SquaredReLUFeedForward, the feed-forward block of Primer
// (So et al., 2021) with a learnt per-channel residual scale (CaiT's LayerScale):
//   y = x + scale * linear2(relu(linear1(x))^2)
// Its two projections are child layers (std.Linear unless the config names another kind):
// the host builds them, so this plugin needs nothing of the standard library but its names.
#include <metatune/sdk/layer.hpp>

namespace {

using mt::sdk::TeExpr;
using mt::sdk::TeTensor;

class SquaredReLUFeedForward : public mt::sdk::ModelLayer {
public:
  static constexpr const char* kSchema = R"json({
    "doc": "x + scale * linear2(relu(linear1(x))^2), scale learnt per channel",
    "fields": [
      {"name": "input_dim", "type": "int", "required": true, "doc": "model width"},
      {"name": "hidden_dim", "type": "int", "required": true, "doc": "inner width"},
      {"name": "scale_init", "type": "float", "default": 0.5,
       "doc": "initial value of the residual scale"},
      {"name": "linear1", "type": "layer", "default": {"kind": "std.Linear"}, "doc": "up"},
      {"name": "linear2", "type": "layer", "default": {"kind": "std.Linear"}, "doc": "down"}],
    "push_down": {"input_dim": ["linear1.input_dim", "linear2.output_dim"],
                  "hidden_dim": ["linear1.output_dim", "linear2.input_dim"]}})json";

  // The host passes the config resolved: required fields present, defaults filled in.
  explicit SquaredReLUFeedForward(std::string_view config) {
    mt::sdk::LayerConfig cfg(config);
    dim_ = cfg.get<int64_t>("input_dim");
    scale_init_ = cfg.get<double>("scale_init");
  }

  void parameters(mt::sdk::ParamList& p) override {
    nlohmann::json init = {{"kind", "constant"}, {"value", scale_init_}};
    p.push("scale", mt::sdk::DType::f32(), {dim_}, init.dump());
  }

  std::vector<TeTensor> build(mt::sdk::LayerContext& ctx,
                              const std::vector<TeTensor>& inputs) override {
    if (inputs.size() != 1 || inputs[0].shape().empty() || inputs[0].shape().back() != dim_)
      throw mt::sdk::Error(MT_ERROR_INVALID_ARGUMENT,
                           "ext.SquaredReLUFeedForward takes one input [..., input_dim]");
    TeTensor x = inputs[0], scale = ctx.param("scale");
    mt::sdk::TensorBuilder& b = ctx.builder();
    TeTensor up = ctx.call1("linear1", {x});
    // Elementwise after linear1 and linear2: fusion folds each into its projection's kernel.
    TeTensor act = b.compute("squared_relu", up.shape(), [&](const std::vector<TeExpr>& i) {
      TeExpr r = mt::sdk::max(up(i), b.float_imm(0.0));
      return r * r;
    });
    TeTensor down = ctx.call1("linear2", {act});
    return {b.compute("scaled_residual", x.shape(), [&](const std::vector<TeExpr>& i) {
      return x(i) + scale(i.back()) * down(i);
    })};
  }

private:
  int64_t dim_ = 0;
  double scale_init_ = 0;
};

} // namespace

METATUNE_PLUGIN("ext_layers", "0.1", "an out-of-tree layer, built against the installed SDK") {
  registry.add<SquaredReLUFeedForward>("ext.SquaredReLUFeedForward",
                                       "Primer's squared-ReLU feed-forward with a scaled residual");
}
