// Integer arithmetic analysis over index expressions: constant bounds, simplification into a
// canonical affine form, and region relaxation (what a set of loops touches). Used by the
// schedule primitives (compute_at regions, split predicates) and by lowering.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include "core/ir/expr.h"
#include "core/ir/stmt.h"

namespace mt {

// Inclusive integer interval; kNegInf / kPosInf stand for unbounded ends.
struct IntBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min() / 4;
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max() / 4;
  int64_t min = kNegInf;
  int64_t max = kPosInf;
  bool is_const() const { return min == max; }
  bool bounded() const { return min != kNegInf && max != kPosInf; }
  static IntBound range(int64_t begin, int64_t extent) { return {begin, begin + extent - 1}; }
};

// Variable (by identity) -> inclusive bounds. Variables not in the map are unbounded.
using RangeMap = std::unordered_map<const ExprNode*, IntBound>;

// Constant bounds of an integer expression, given bounds of its variables. Never throws;
// unknown parts give unbounded ends.
IntBound bound_of(const Expr& e, const RangeMap& ranges = {});

// Canonicalises integer arithmetic: constant folding, collecting linear terms
// (x*4 + x*2 -> x*6, (a+3)-3 -> a), floordiv/floormod elimination when the ranges prove the
// quotient/remainder ((i0*32 + i1) // 32 -> i0 and (i0*32 + i1) % 32 -> i1 for 0<=i1<32),
// min/max/select/comparison folding when bounds decide them, boolean folding. Float
// expressions are left alone except for the integer sub-expressions in them (indices).
// The result is equivalent to the input for every assignment within `ranges`.
Expr simplify(const Expr& e, const RangeMap& ranges = {});

// Simplifies every expression of a statement tree, using the ranges of enclosing For loops
// and block iter vars (domain [0, extent)) as it descends; drops For loops of extent 1 is NOT
// done here (that changes loop identity) -- only expressions change.
Stmt simplify(const Stmt& s, const RangeMap& ranges = {});

// True if `cond` (a boolean expression) holds for every assignment within `ranges`.
bool prove(const Expr& cond, const RangeMap& ranges = {});

// simplify() and prove() for several expressions under the same ranges (a block's bindings
// and predicate), sharing one memo of sub-expressions and bounds: the same results, at the
// cost of one analysis instead of one per expression. `ranges` must outlive it.
class RangeSimplifier {
public:
  explicit RangeSimplifier(const RangeMap& ranges);
  ~RangeSimplifier();
  RangeSimplifier(const RangeSimplifier&) = delete;
  RangeSimplifier& operator=(const RangeSimplifier&) = delete;
  Expr simplify(const Expr& e);
  bool prove(const Expr& cond);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The set of values `index` takes when the variables in `relaxed` range over their bounds and
// every other variable is held fixed: [min, min + extent), where `min` is an expression of the
// fixed variables and `extent` a constant upper bound on the size. Over-approximates when the
// expression is not affine in the relaxed variables; returns nullopt when no finite extent
// can be found. `context` gives bounds of the fixed variables (used only for simplification).
struct RelaxedRange {
  Expr min;
  int64_t extent = 1;
};
std::optional<RelaxedRange> relax(const Expr& index, const RangeMap& relaxed,
                                  const RangeMap& context = {});

// If `e` is affine in `var` (e = var * coeff + rest, with `rest` free of var), returns coeff.
std::optional<int64_t> linear_coefficient(const Expr& e, const ExprNode* var);

} // namespace mt
