// Sine and cosine as tensor expressions. The IR's math functions (plugin_api/ir_vocabulary.h)
// have no sin or cos, so they are built here from what it has: the angle comes in turns
// (1 turn = 2 pi), which makes the reduction to a quadrant exact, and Taylor polynomials on
// [-pi/4, pi/4] do the rest (truncation error below 2e-9, well under f32's rounding).
#pragma once

#include "metatune/sdk/te.hpp"

namespace mt::rope {

struct SinCos {
  sdk::TeExpr sin, cos;
};

// sin and cos of 2 pi * `turns` (an f32 expression of any sign and moderate size).
SinCos sin_cos_of_turns(sdk::TensorBuilder& b, sdk::TeExpr turns);

// floor(x) of an f32 expression, as an index expression.
sdk::TeExpr floor_to_index(sdk::TensorBuilder& b, sdk::TeExpr x);

} // namespace mt::rope
