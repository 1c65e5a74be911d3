// Logical dimensions of an operator over its stages' loop variables, and tensors seen through
// strided views over them. A loop variable that some stage uses as v // c or v % c (the head
// and the position within the head of a flat [heads * width] axis) is split into digits,
// v = hi * c + lo, so that every index the stages use is an affine form of digits; a tensor
// accessed with such indices is a strided view over the digits (element strides and an
// offset), which is what oneDNN's strided memory descriptors express.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "op_plan.hpp"
#include "stages.hpp"

namespace mt::onednn {

// Digit (v / unit) % extent of the variable stored along output position `pos` (in a stage
// after the main one: that stage's own variable at the same position), or of the main stage's
// reduction variable `rvar`. Neither (pos = -1, rvar = -1): a unit dim.
struct LogicalDim {
  int pos = -1;
  int64_t rvar = -1;
  int64_t unit = 1;
  int64_t extent = 1;
};

// The digits of every output position (in order), then of every reduction variable, of stage
// `main`: each variable split at the divisors the stages from `main` on apply to it (each
// divides the next and the extent; otherwise the variable stays whole), outer digit first.
// Digits of extent 1 are left out. An output position spans the program's window if it has one.
std::vector<LogicalDim> stage_digits(const StageProgram& sp, size_t main);

// Output positions as logical dims (-1: a unit dim), each one digit, extents from `shape`.
std::vector<LogicalDim> position_dims(const std::vector<int>& positions,
                                      const std::vector<int64_t>& shape);

// A variable in terms of logical dims: sum of digit * unit over (dim index, unit), + offset.
struct VarDigits {
  std::vector<std::pair<size_t, int64_t>> digits;
  int64_t offset = 0;
};
using DigitMap = std::unordered_map<int64_t, VarDigits>;
// The variables of stage `k` of `sp` (the stages computing a windowed result start at the
// window's offsets; a variable not fully covered by `dims` is left out).
DigitMap digit_map(const StageProgram& sp, size_t k, const std::vector<LogicalDim>& dims);

// Buffer `b` accessed with `idx`: per logical dim the element stride (0: the access does not
// move along it) and the offset of the access at all digits 0. Rejects (NotRecognised) an
// index that is not affine in the digits, a negative stride, or an access leaving the buffer.
struct StridedAccess {
  std::vector<int64_t> strides;
  int64_t offset = 0;
};
StridedAccess strided_access(const P::Buffer& b, const std::vector<P::Expr>& idx,
                             const DigitMap& digits, const std::vector<LogicalDim>& dims);

// Parameter `param` through `a`: dims are the logical extents, 1 where the access does not
// move (a broadcast, rejected unless `broadcast`). Unit dims get strides valid for oneDNN.
TensorRef strided_ref(size_t param, const StridedAccess& a, const std::vector<LogicalDim>& dims,
                      bool broadcast);

// Whether no two elements of the view share memory (sufficient test: sorted by stride, each
// stride exceeds the span of the smaller ones).
bool non_overlapping(const TensorRef& r);

// An integer or boolean index expression (immediates, variables, + - *, // %, min, max,
// comparisons, and / or / not, select) evaluated at `vars`; nullopt for anything else.
std::optional<int64_t> eval_index(const P::Expr& e,
                                  const std::unordered_map<int64_t, int64_t>& vars);

} // namespace mt::onednn
