// Matmul-like contractions: sum over shared digits of a[...] * b[...], every index an affine
// form of the loop variables' digits (logical_dims.hpp), and the elementwise tail after it.
// Each digit plays one role: batch (both operands and the output), rows (a and the output),
// columns (b and the output) or reduction (both operands). oneDNN's matmul takes
// src [batch..., M, K], weights [batch..., K, N] and dst [batch..., M, N] with arbitrary
// strides, so:
//   - the rows collapse into one M, the columns into one N and the reduction digits into one
//     K, each only where it is contiguous in every tensor that has it (a linear layer on
//     [batch, seq, in] is one [batch * seq, in] x [in, out] product: one large GEMM, which is
//     what oneDNN runs fastest; a tensor broadcast along all of a collapsed group keeps a dim
//     of 1, along part of it is refused);
//   - rows that do not all collapse keep as M the run of them (largest in extent) that does,
//     and the others become batch dims along which the second operand is broadcast; columns
//     likewise, the first operand broadcast (grouped-query attention: the query heads of one
//     key head are rows of the scores, q's heads are not contiguous with its positions);
//   - each batch digit is a batch dim with its own strides (attention's batch and head, heads
//     read in place from [B, S, H * D]);
//   - a weight stored [N, K] is a weights view with strides (1, K): no transpose is made;
//   - the operands are ordered so that dst's innermost dim is N where the output allows it.
#include <algorithm>
#include <tuple>

#include "logical_dims.hpp"
#include "recognize.hpp"

namespace mt::onednn::detail {

namespace {

// Dims of a view picked (and reordered) from a view over all digits.
StridedAccess pick(const StridedAccess& a, const std::vector<size_t>& at) {
  StridedAccess out;
  out.offset = a.offset;
  for (size_t i : at)
    out.strides.push_back(a.strides[i]);
  return out;
}

std::vector<LogicalDim> pick(const std::vector<LogicalDim>& dims, const std::vector<size_t>& at) {
  std::vector<LogicalDim> out;
  for (size_t i : at)
    out.push_back(dims[i]);
  return out;
}

// Groups of consecutive dims of a view, each collapsed into one (an empty group: a unit dim).
class Collapse {
public:
  explicit Collapse(std::vector<size_t> sizes) : sizes_(std::move(sizes)) {}

  // `what` names the tensor in a refusal.
  TensorRef operator()(const TensorRef& r, const std::string& what) const {
    TensorRef out;
    out.param = r.param;
    out.offset = r.offset;
    size_t d = 0;
    for (size_t n : sizes_) {
      int64_t extent = 1, stride = 1;
      size_t present = 0;
      for (size_t k = d; k < d + n; ++k)
        present += r.dims[k] > 1;
      if (present == n && n > 0) {
        for (size_t k = d; k < d + n; ++k) {
          if (k + 1 < d + n && r.strides[k] != r.dims[k + 1] * r.strides[k + 1])
            reject("dims that do not collapse into one in the " + what + " (strides " +
                   dims_string(r.strides) + ")");
          extent *= r.dims[k];
        }
        stride = r.strides[d + n - 1];
      } else if (present != 0) {
        reject("the " + what + " is broadcast along part of a collapsed dim");
      }
      out.dims.push_back(extent);
      out.strides.push_back(stride);
      d += n;
    }
    fix_unit_strides(&out);
    return out;
  }

  // A known condition is a dense table over its dims: consecutive dims merge when it varies
  // along all or none of them; along part of a group it is spread over the whole group first.
  // So is a tensor condition's index table. `extents`: the full dims.
  Condition operator()(const Condition& c, const std::vector<int64_t>& extents,
                       const std::string& what) const {
    Condition out = c;
    if (c.src) {
      out.src = (*this)(*c.src, what);
      out.dims = out.src->dims;
      if (!c.index_values.empty()) {
        collapse(&out.index_dims, &out.index_values, extents, what);
        for (size_t d = 0; d < out.dims.size(); ++d)
          out.dims[d] = std::max(out.dims[d], out.index_dims[d]);
      }
      return out;
    }
    collapse(&out.dims, &out.values, extents, what);
    return out;
  }

private:
  // A table over *dims (row-major), spread over every group it varies along part of, then its
  // dims merged as the dst's.
  template <class T>
  void collapse(std::vector<int64_t>* dims, std::vector<T>* values,
                const std::vector<int64_t>& extents, const std::string& what) const {
    std::vector<int64_t> full = *dims;
    size_t d = 0;
    for (size_t n : sizes_) {
      bool any = false;
      for (size_t k = d; k < d + n; ++k)
        any = any || (*dims)[k] > 1;
      for (size_t k = d; k < d + n && any; ++k)
        full[k] = extents[k];
      d += n;
    }
    if (full != *dims) {
      *values = spread(*values, *dims, full);
      *dims = full;
    }
    TensorRef dense;
    dense.dims = *dims;
    dense.strides = P::row_major_strides(*dims);
    fix_unit_strides(&dense);
    *dims = (*this)(dense, what).dims;
  }

  // The table `v` over `from` (each from[d] is 1 or dims[d]) over `dims`.
  template <class T>
  static std::vector<T> spread(const std::vector<T>& v, const std::vector<int64_t>& from,
                               const std::vector<int64_t>& dims) {
    int64_t points = 1;
    for (int64_t n : dims)
      points *= n;
    if (points > (int64_t{1} << 24)) reject("a position mask too large to tabulate");
    std::vector<T> out(static_cast<size_t>(points));
    std::vector<int64_t> at(dims.size(), 0);
    for (int64_t i = 0; i < points; ++i) {
      int64_t src = 0;
      for (size_t d = 0; d < dims.size(); ++d)
        src = src * from[d] + (from[d] > 1 ? at[d] : 0);
      out[static_cast<size_t>(i)] = v[static_cast<size_t>(src)];
      for (size_t d = dims.size(); d-- > 0;)
        if (++at[d] < dims[d])
          break;
        else
          at[d] = 0;
    }
    return out;
  }

  std::vector<size_t> sizes_;
};

class MatmulMatcher {
public:
  explicit MatmulMatcher(const StageProgram& sp) : sp_(sp), m_(sp.stages[0]) {}

  Plan plan() {
    operands();
    classify();
    order();
    rows_bcast_ = split_off_uncollapsed(&rows_, a_);
    cols_bcast_ = split_off_uncollapsed(&cols_, b_);
    return build();
  }

private:
  // The two operands and their views over all digits of the main stage.
  void operands() {
    if (m_.reduce != Reduce::Sum || m_.init != 0) reject("the first step is not a sum reduction");
    std::tie(la_, lb_) = product(m_);
    if (!sp_.is_param(la_->buffer) || !sp_.is_param(lb_->buffer))
      reject("an operand is not a parameter");
    if (P::expr_equal(la_, lb_)) reject("a square, not a product of two operands");
    dims_ = stage_digits(sp_, 0);
    const DigitMap digits = digit_map(sp_, 0, dims_);
    a_ = strided_access(la_->buffer, la_->args, digits, dims_);
    b_ = strided_access(lb_->buffer, lb_->args, digits, dims_);
  }

  void classify() {
    for (size_t i = 0; i < dims_.size(); ++i) {
      const bool in_a = a_.strides[i] != 0, in_b = b_.strides[i] != 0;
      if (dims_[i].pos >= 0) {
        if (!in_a && !in_b) reject("an output dimension neither operand depends on");
        (in_a && in_b ? batch_ : in_a ? rows_ : cols_).push_back(i);
      } else {
        if (!in_a || !in_b) reject("a reduction over one operand only");
        red_.push_back(i);
      }
    }
    if (red_.empty()) reject("no reduction shared by both operands");
  }

  // Outer digit first in each group (by the output's strides; the reduction by the first
  // operand's), and the operands swapped when that makes dst's innermost dim N.
  void order() {
    dst_strides_.assign(dims_.size(), 0);
    std::vector<size_t> out;
    for (size_t i = 0; i < dims_.size(); ++i)
      if (dims_[i].pos >= 0) out.push_back(i);
    const TensorRef natural = output_view(sp_, pick(dims_, out));
    auto dst_stride = [&](size_t i) {
      return natural
          .strides[static_cast<size_t>(std::find(out.begin(), out.end(), i) - out.begin())];
    };
    auto by_dst = [&](std::vector<size_t>* g) {
      std::stable_sort(g->begin(), g->end(),
                       [&](size_t x, size_t y) { return dst_stride(x) > dst_stride(y); });
    };
    for (size_t i : out)
      dst_strides_[i] = dst_stride(i);
    by_dst(&batch_);
    by_dst(&rows_);
    by_dst(&cols_);
    std::stable_sort(red_.begin(), red_.end(),
                     [&](size_t x, size_t y) { return a_.strides[x] > a_.strides[y]; });
    if (!rows_.empty() && dst_stride(rows_.back()) == 1 &&
        (cols_.empty() || dst_stride(cols_.back()) != 1)) {
      std::swap(la_, lb_);
      std::swap(a_, b_);
      std::swap(rows_, cols_);
    }
  }

  // The digits of `group` (outer first) that leave the collapsed dim: all but the run of
  // consecutive digits, largest in extent, whose strides nest in `operand` and in the output.
  std::vector<size_t> split_off_uncollapsed(std::vector<size_t>* group,
                                            const StridedAccess& operand) const {
    const std::vector<size_t>& g = *group;
    auto nests = [&](size_t k) { // digit g[k] directly outside g[k + 1] in both tensors
      const int64_t e = dims_[g[k + 1]].extent;
      return operand.strides[g[k]] == e * operand.strides[g[k + 1]] &&
             dst_strides_[g[k]] == e * dst_strides_[g[k + 1]];
    };
    size_t best_from = 0, best_to = g.size(); // [from, to)
    int64_t best = -1;
    for (size_t from = 0; from < g.size(); ++from) {
      int64_t extent = dims_[g[from]].extent;
      size_t to = from + 1;
      while (to < g.size() && nests(to - 1))
        extent *= dims_[g[to++]].extent;
      if (extent >= best) { // ties: the inner run, as the strides order rows
        best = extent;
        best_from = from;
        best_to = to;
      }
    }
    std::vector<size_t> kept(g.begin() + static_cast<std::ptrdiff_t>(best_from),
                             g.begin() + static_cast<std::ptrdiff_t>(best_to));
    std::vector<size_t> moved;
    for (size_t k = 0; k < g.size(); ++k)
      if (k < best_from || k >= best_to) moved.push_back(g[k]);
    *group = std::move(kept);
    return moved;
  }

  Plan build() const {
    const std::vector<size_t> batch_at = concat({batch_, rows_bcast_, cols_bcast_});
    const std::vector<size_t> src_at = concat({batch_at, rows_, red_});
    const std::vector<size_t> wei_at = concat({batch_at, red_, cols_});
    const std::vector<size_t> dst_at = concat({batch_at, rows_, cols_});
    const std::vector<size_t> batch(batch_at.size(), 1); // each batch digit its own dim
    const Collapse src_c(concat_sizes(batch, {rows_.size(), red_.size()}));
    const Collapse wei_c(concat_sizes(batch, {red_.size(), cols_.size()}));
    const Collapse dst_c(concat_sizes(batch, {rows_.size(), cols_.size()}));

    MatmulOp op;
    // Only the batch dims split off the other operand's rows or columns do not move.
    op.src = src_c(strided_ref(sp_.param_of(la_->buffer), pick(a_, src_at), pick(dims_, src_at),
                               /*broadcast=*/!cols_bcast_.empty()),
                   "first operand");
    op.weights = wei_c(strided_ref(sp_.param_of(lb_->buffer), pick(b_, wei_at), pick(dims_, wei_at),
                                   /*broadcast=*/!rows_bcast_.empty()),
                       "second operand");
    if (!non_overlapping(op.src) || !non_overlapping(op.weights))
      reject("an operand read through overlapping windows");
    const std::vector<LogicalDim> logical = pick(dims_, dst_at);
    std::vector<int64_t> extents;
    for (const LogicalDim& d : logical)
      extents.push_back(d.extent);
    op.dst = dst_c(output_view(sp_, logical), "output");
    Plan plan;
    for (const PostOp& p : match_tail(sp_, 1, logical)) {
      PostOp q = p;
      if (is_binary(p.alg)) q.src1 = dst_c(p.src1, std::string(to_string(p.alg)) + " operand");
      for (Condition& c : q.conds)
        c = dst_c(c, extents, "mask");
      plan.post_ops.push_back(q);
    }
    op.bias = take_bias(&plan.post_ops, op.dst.dims.size() - 1, /*keep_rank=*/true);
    plan.family = batch_.empty() ? "matmul" : "batch_matmul";
    plan.detail = dims_string(op.src.dims) + " x " + dims_string(op.weights.dims) + " -> " +
                  dims_string(op.dst.dims) + (op.bias ? " +bias" : "") +
                  post_op_names(plan.post_ops);
    plan.op = op;
    return plan;
  }

  static std::vector<size_t> concat(std::initializer_list<std::vector<size_t>> parts) {
    std::vector<size_t> out;
    for (const auto& p : parts)
      out.insert(out.end(), p.begin(), p.end());
    return out;
  }
  static std::vector<size_t> concat_sizes(std::vector<size_t> head,
                                          std::initializer_list<size_t> tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  }

  const StageProgram& sp_;
  const Stage& m_;
  P::Expr la_, lb_;                               // the operand loads: src, weights once ordered
  StridedAccess a_, b_;                           // their views over dims_
  std::vector<LogicalDim> dims_;                  // every digit of the main stage
  std::vector<size_t> batch_, rows_, cols_, red_; // indices into dims_
  std::vector<size_t> rows_bcast_, cols_bcast_;   // split off rows_ / cols_: batch dims
  std::vector<int64_t> dst_strides_;              // per digit: its stride in the output
};

} // namespace

Plan try_matmul(const StageProgram& sp) {
  return MatmulMatcher(sp).plan();
}

} // namespace mt::onednn::detail
