// Private to core/ir/arith*.cpp: saturating interval arithmetic over IntBound (ends at
// kNegInf / kPosInf mean unbounded and absorb everything added to them) and the memoised
// interval analysis that bound_of and the simplifier share.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/ir/arith.h"
#include "core/ir/node_memo.h"

namespace mt::arith_detail {

constexpr int64_t kNegInf = IntBound::kNegInf;
constexpr int64_t kPosInf = IntBound::kPosInf;

bool is_inf(int64_t v);
// Floor division of finite values (b != 0).
int64_t floordiv_i(int64_t a, int64_t b);
int64_t clamp_end(int64_t v);

IntBound unbounded();
IntBound add_bound(IntBound a, IntBound b);
IntBound sub_bound(IntBound a, IntBound b);
IntBound mul_bound(IntBound a, IntBound b);
IntBound intersect(IntBound a, IntBound b);
IntBound unite(IntBound a, IntBound b);
// Value range of a scalar type; unbounded for 64-bit and non-integer types.
IntBound type_bound(DType t);
bool within(IntBound inner, IntBound outer);
// Decides `a <k> b` for every pair of values in the intervals; nullopt when it can go either way.
std::optional<bool> compare_bounds(ExprKind k, IntBound a, IntBound b);

// Interval analysis, memoised per node so that shared sub-expressions (a DAG) cost their size.
class BoundAnalyzer {
public:
  explicit BoundAnalyzer(const RangeMap& ranges) : ranges_(ranges) {}

  IntBound get(const Expr& e) {
    if (!e) return unbounded();
    if (e->args.empty()) return compute(e);
    if (const IntBound* known = cache_.find(e.get())) return *known;
    IntBound b = compute(e);
    cache_.emplace(e, b);
    return b;
  }

  const RangeMap& ranges() const { return ranges_; }

private:
  IntBound compute(const Expr& e);

  const RangeMap& ranges_;
  NodeMemo<IntBound> cache_;
};

} // namespace mt::arith_detail
