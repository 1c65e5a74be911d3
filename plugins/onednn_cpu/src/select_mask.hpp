// A Select post-op (dst = keep ? dst : fill, keep a conjunction of conditions) as two binary
// post-ops oneDNN has: dst = max(min(dst, hi), lo) with hi = keep ? +inf : fill and
// lo = keep ? -inf : fill. For every dst that is not NaN this is exactly the select (min and
// max with an infinity return dst; with fill on both sides they return fill, whatever dst
// is, infinities included), which an add of a large negative number is not.
#pragma once

#include <vector>

#include "metatune/sdk/components.hpp"
#include "op_plan.hpp"

namespace mt::onednn {

class SelectMask {
public:
  // `full`: dims for the tables (the dst's) instead of the smallest the conditions allow.
  explicit SelectMask(const PostOp& select, const std::vector<int64_t>* full = nullptr);

  // The dims of hi and lo: where any condition varies, else 1.
  const std::vector<int64_t>& dims() const { return dims_; }
  // Whether every condition is known from positions alone (then hi and lo are constants).
  bool constant() const;
  // Writes hi and lo (dense, row-major over dims()); `args` are the call's tensors (unused
  // when constant()).
  void fill(float* hi, float* lo, const std::vector<sdk::TensorView>& args) const;

private:
  std::vector<Condition> conds_;
  float fill_ = 0;
  std::vector<int64_t> dims_;
};

} // namespace mt::onednn
