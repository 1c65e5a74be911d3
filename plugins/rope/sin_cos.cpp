// Sine and cosine from a quadrant reduction and polynomials (see sin_cos.hpp).
#include "sin_cos.hpp"

#include <cmath>
#include <initializer_list>

namespace mt::rope {

using sdk::TeExpr;
using sdk::TensorBuilder;

namespace {

TeExpr f32(TensorBuilder& b, double v) {
  return b.float_imm(v, sdk::DType::f32());
}

// sum_k c_k x^(2k) by Horner's rule in x^2, lowest coefficient first.
TeExpr even_poly(TensorBuilder& b, TeExpr x2, std::initializer_list<double> coeffs) {
  TeExpr acc;
  for (auto it = std::rbegin(coeffs); it != std::rend(coeffs); ++it)
    acc = acc.get() ? acc * x2 + f32(b, *it) : f32(b, *it);
  return acc;
}

} // namespace

TeExpr floor_to_index(TensorBuilder& b, TeExpr x) {
  // The cast truncates towards zero; one step down for a negative non-integer.
  TeExpr t = b.cast(sdk::DType::index(), x);
  TeExpr below = b.cast(sdk::DType::f32(), t) > x;
  return b.select(below, t - b.int_imm(1), t);
}

SinCos sin_cos_of_turns(TensorBuilder& b, TeExpr turns) {
  // turns = quadrant / 4 + r with r in [-1/8, 1/8], r exact in f32 (Sterbenz: quadrant / 4 is
  // within a factor of two of turns whenever it is not zero).
  TeExpr quadrant = floor_to_index(b, turns * f32(b, 4.0) + f32(b, 0.5));
  TeExpr r = turns - b.cast(sdk::DType::f32(), quadrant) * f32(b, 0.25);
  TeExpr x = r * f32(b, 2.0 * M_PI), x2 = x * x;
  TeExpr s =
      x * even_poly(b, x2, {1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800});
  TeExpr c = even_poly(
      b, x2, {1.0, -1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600});
  // Quadrant q rotates by q quarter turns: (sin, cos) -> (cos, -sin) each time.
  TeExpr q = b.binary(sdk::ExprKind::FloorMod, quadrant, b.int_imm(4));
  auto is = [&](int64_t v) { return b.binary(sdk::ExprKind::EQ, q, b.int_imm(v)); };
  TeExpr neg_s = f32(b, 0.0) - s, neg_c = f32(b, 0.0) - c;
  return {b.select(is(0), s, b.select(is(1), c, b.select(is(2), neg_s, neg_c))),
          b.select(is(0), c, b.select(is(1), neg_s, b.select(is(2), neg_c, s)))};
}

} // namespace mt::rope
