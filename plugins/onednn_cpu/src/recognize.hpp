// Recognition: from a lowered program to the oneDNN operator it computes (a Plan), by
// structure only: loop nests, what each stores, which buffers its value loads and with which
// index expressions, and the shape of the value expression. Buffer, block and loop names are
// never looked at. recognize() throws NotRecognised, naming for every operator family why it
// does not apply.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "logical_dims.hpp"
#include "op_plan.hpp"
#include "stages.hpp"

namespace mt::onednn {

Plan recognize(const P::Program& program);

namespace detail {

// A pad stage: out = select(inside, src[clamped idx - before], fill) over a parameter.
struct PadInfo {
  const Stage* stage = nullptr;
  P::Buffer source; // a parameter
  std::vector<int64_t> before, after;
  double fill = 0;
};
std::optional<PadInfo> match_pad(const StageProgram& sp, const Stage& s);

// A view of buffer `b` (accessed with indices `idx` in stage `s`) in the logical order
// `vars` (var ids; -1 = a unit dim). Buffer dims whose index is not one of `vars` must have
// extent 1; with `broadcast`, a var the access does not use gives a unit dim instead of a
// rejection.
TensorRef view(const StageProgram& sp, const P::Buffer& b, const std::vector<P::Expr>& idx,
               const std::vector<int64_t>& vars, bool broadcast = false);
// Strides for unit dims (which address nothing) that keep the descriptor valid for oneDNN and
// plain where the view is: where the other dims are in row-major order, the strides row-major
// order gives (oneDNN reads [heads, 1, keys] as abc; a unit dim made outermost reads as bac,
// which oneDNN 2.6's gemm:jit batched matmul crashes on when a binary post-op is broadcast over
// the heads), else beyond the whole span.
void fix_unit_strides(TensorRef* r);

// The elementwise stages after the main one (from stage `first` on), each applying one or
// more steps to the previous stage's result, as post-ops. `logical` is the main output's
// logical order: logical dims, or positions into its out_idx (-1 for a unit dim).
std::vector<PostOp> match_tail(const StageProgram& sp, size_t first,
                               const std::vector<LogicalDim>& logical);
std::vector<PostOp> match_tail(const StageProgram& sp, size_t first,
                               const std::vector<int>& logical);

// The final output (written by the last stage) in the main operator's logical order.
TensorRef output_view(const StageProgram& sp, const std::vector<LogicalDim>& logical);
TensorRef output_view(const StageProgram& sp, const std::vector<int>& logical);

// The two loads of `a * b` (the operand of a contraction).
std::pair<P::Expr, P::Expr> product(const Stage& m);
// A leading Add post-op that only varies along logical dim `dim` becomes the bias (of rank 1
// unless `keep_rank`).
std::optional<TensorRef> take_bias(std::vector<PostOp>* ops, size_t dim, bool keep_rank);
std::string post_op_names(const std::vector<PostOp>& ops);

Plan try_matmul(const StageProgram& sp);
Plan try_conv(const StageProgram& sp);
Plan try_pool(const StageProgram& sp);
Plan try_softmax(const StageProgram& sp);
Plan try_layernorm(const StageProgram& sp);
Plan try_reduction(const StageProgram& sp);
Plan try_eltwise(const StageProgram& sp);

std::string dims_string(const std::vector<int64_t>& d);

} // namespace detail

} // namespace mt::onednn
