// Small analyses of program expressions that code generation needs: structural equality,
// the constant stride of an index in one variable (vector loads/stores), and integer bounds
// (cheaper floor division/modulo for non-negative operands).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

bool same_expr(const sdk::program::Expr& a, const sdk::program::Expr& b);

// c such that e == c * var + (terms without var), if e is affine in var with a constant
// coefficient; 0 if e does not use var; nullopt otherwise.
std::optional<int64_t> affine_coefficient(const sdk::program::Expr& e, int64_t var_id);

struct Bound {
  static constexpr int64_t kNegInf = INT64_MIN / 4;
  static constexpr int64_t kPosInf = INT64_MAX / 4;
  int64_t lo = kNegInf;
  int64_t hi = kPosInf;
  bool non_negative() const { return lo >= 0; }
};
using BoundMap = std::unordered_map<int64_t, Bound>; // var id -> inclusive bounds

// Conservative bounds of an integer expression; unknown parts are unbounded.
Bound bound_of(const sdk::program::Expr& e, const BoundMap& vars);

// Row-major flattening: sum(indices[d] * stride[d]) with trivial terms folded.
sdk::program::Expr flat_index(const sdk::program::BufferNode& buf,
                              const std::vector<sdk::program::Expr>& indices);

} // namespace mt::llvm_cpu
