#include "transposed_copy.h"

#include "metatune/sdk/index_analysis.hpp"
#include "program_walk.h"

namespace mt::llvm_cpu {

namespace P = sdk::program;

std::optional<TransposedCopy> match_transposed_copy(const P::StmtNode& outer, int64_t block) {
  if (outer.kind != P::StmtKind::For || block < 2 || outer.extent % block != 0 ||
      (outer.for_kind != P::ForKind::Serial && outer.for_kind != P::ForKind::Unrolled))
    return std::nullopt;
  const P::StmtNode* inner = only_stmt(outer.body);
  if (!inner || inner->kind != P::StmtKind::For || inner->for_kind != P::ForKind::Vectorized ||
      inner->extent % block != 0)
    return std::nullopt;
  const P::StmtNode* store = only_stmt(inner->body);
  if (!store || store->kind != P::StmtKind::Store) return std::nullopt;
  const int64_t a = outer.loop_var->var_id, v = inner->loop_var->var_id;
  const P::Expr dst = P::flat_index(*store->buffer, store->indices);
  if (P::affine_coefficient(dst, v) != 1 || !P::affine_coefficient(dst, a)) return std::nullopt;
  bool ok = true, strided = false;
  P::post_order_visit(store->value, [&](const P::Expr& x) {
    if (x->kind != P::ExprKind::Load) return;
    if (x->buffer->id == store->buffer->id) ok = false;
    const P::Expr src = P::flat_index(*x->buffer, x->args);
    if (!P::uses_var(src, a)) return; // one value per block row (a bias along v)
    if (P::affine_coefficient(src, a) != 1) ok = false;
    if (P::affine_coefficient(src, v) != 1) strided = true;
  });
  if (!ok || !strided) return std::nullopt;
  return TransposedCopy{inner, store, a, v};
}

} // namespace mt::llvm_cpu
