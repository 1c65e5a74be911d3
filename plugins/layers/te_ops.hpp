// Tensor-expression pieces the standard layers share: constants, activations, and the shape
// arithmetic of "every axis but the last".
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "metatune/sdk/layer.hpp"

namespace mt::std_layers {

using sdk::TeExpr;
using sdk::TensorBuilder;
using sdk::TeTensor;

inline TeExpr f32(TensorBuilder& b, double v) {
  return b.float_imm(v, sdk::DType::f32());
}

// GELU, erf form (BERT, GPT-2's reference uses the tanh form: "gelu_tanh").
inline TeExpr gelu(TensorBuilder& b, TeExpr x) {
  TeExpr e = b.call(sdk::MathFn::Erf, {x * f32(b, 1.0 / std::sqrt(2.0))});
  return x * f32(b, 0.5) * (e + f32(b, 1.0));
}
inline TeExpr gelu_tanh(TensorBuilder& b, TeExpr x) {
  TeExpr inner = f32(b, std::sqrt(2.0 / M_PI)) * (x + f32(b, 0.044715) * x * x * x);
  return f32(b, 0.5) * x * (f32(b, 1.0) + b.call(sdk::MathFn::Tanh, {inner}));
}
inline TeExpr silu(TensorBuilder& b, TeExpr x) {
  return x * b.call(sdk::MathFn::Sigmoid, {x});
}
// The named activation; an error listing the known names otherwise.
TeExpr activation(TensorBuilder& b, const std::string& name, TeExpr x);

// shape without its last axis, and `axes` without theirs.
inline std::vector<int64_t> leading(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin(), shape.end() - 1);
}
inline std::vector<TeExpr> leading(const std::vector<TeExpr>& axes) {
  return std::vector<TeExpr>(axes.begin(), axes.end() - 1);
}
inline std::vector<TeExpr> with(std::vector<TeExpr> axes, TeExpr last) {
  axes.push_back(last);
  return axes;
}

// The one input a layer takes, its last axis checked against `dim`.
TeTensor single_input(const std::string& layer, const std::vector<TeTensor>& inputs, int64_t dim);

} // namespace mt::std_layers
