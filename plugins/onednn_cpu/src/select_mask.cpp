// Tables of a Select post-op (select_mask.hpp).
#include "select_mask.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace mt::onednn {

namespace {

// The row-major position of point `at` in a table over `dims` (a dim of 1: broadcast).
int64_t table_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& at) {
  int64_t flat = 0;
  for (size_t d = 0; d < at.size(); ++d)
    flat = flat * dims[d] + (dims[d] > 1 ? at[d] : 0);
  return flat;
}

bool compare(double x, Cmp c, double t) {
  switch (c) {
  case Cmp::LT:
    return x < t;
  case Cmp::LE:
    return x <= t;
  case Cmp::GT:
    return x > t;
  case Cmp::GE:
    return x >= t;
  case Cmp::EQ:
    return x == t;
  case Cmp::NE:
    return x != t;
  }
  return false;
}

} // namespace

SelectMask::SelectMask(const PostOp& select, const std::vector<int64_t>* full)
    : conds_(select.conds), fill_(select.fill) {
  if (full) {
    dims_ = *full;
    return;
  }
  for (const Condition& c : conds_) {
    if (dims_.empty()) dims_.assign(c.dims.size(), 1);
    for (size_t d = 0; d < c.dims.size(); ++d)
      dims_[d] = std::max(dims_[d], c.dims[d]);
  }
}

bool SelectMask::constant() const {
  return std::none_of(conds_.begin(), conds_.end(), [](const Condition& c) { return c.src; });
}

void SelectMask::fill(float* hi, float* lo, const std::vector<sdk::TensorView>& args) const {
  const float inf = std::numeric_limits<float>::infinity();
  int64_t points = 1;
  for (int64_t n : dims_)
    points *= n;
  std::vector<int64_t> at(dims_.size(), 0);
  for (int64_t i = 0; i < points; ++i) {
    bool keep = true;
    for (const Condition& c : conds_) {
      if (c.src) {
        int64_t off = c.src->offset;
        for (size_t d = 0; d < at.size(); ++d)
          if (c.src->dims[d] > 1) off += at[d] * c.src->strides[d];
        const void* data = args[c.src->param].data;
        const double x = c.src_i32 ? static_cast<const int32_t*>(data)[off]
                                   : static_cast<const float*>(data)[off];
        double other = c.threshold;
        if (!c.index_values.empty())
          other = static_cast<double>(
              c.index_values[static_cast<size_t>(table_index(c.index_dims, at))]);
        keep = keep && compare(x, c.cmp, other);
      } else {
        keep = keep && c.values[static_cast<size_t>(table_index(c.dims, at))];
      }
    }
    hi[i] = keep ? inf : fill_;
    lo[i] = keep ? -inf : fill_;
    for (size_t d = at.size(); d-- > 0;)
      if (++at[d] < dims_[d])
        break;
      else
        at[d] = 0;
  }
}

} // namespace mt::onednn
