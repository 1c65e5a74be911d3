// Recognising vectorised copies (vector_copy.h).
#include "vector_copy.h"

#include "metatune/sdk/index_analysis.hpp"

namespace mt::gpu_codegen {

namespace {

using P::ExprKind;

// How an index moves with the lane variable v in [0, lanes): e(v) == e(0) + step * v for every
// value of the other variables, or nullopt when that is not provable. The cooperative fetch's
// index is built from a fused loop, f = x * lanes + v, taken apart by floor division and modulo
// by the tile's width; when the width is a multiple of lanes, v never crosses a row.
class LaneStep {
public:
  LaneStep(int64_t v, int64_t lanes) : v_(v), lanes_(lanes) {}

  std::optional<int64_t> step(const P::Expr& e) const {
    if (!P::uses_var(e, v_)) return 0;
    int64_t c = 0;
    switch (e->kind) {
    case ExprKind::Var:
      return 1;
    case ExprKind::Add:
    case ExprKind::Sub: {
      auto a = step(e->args[0]), b = step(e->args[1]);
      if (!a || !b) return std::nullopt;
      return e->kind == ExprKind::Add ? *a + *b : *a - *b;
    }
    case ExprKind::Mul:
      if (P::is_const_int(e->args[1], &c)) {
        auto a = step(e->args[0]);
        return a ? std::optional<int64_t>(*a * c) : std::nullopt;
      }
      if (P::is_const_int(e->args[0], &c)) {
        auto b = step(e->args[1]);
        return b ? std::optional<int64_t>(*b * c) : std::nullopt;
      }
      return std::nullopt;
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: {
      // (y * lanes + v) / d == (y * lanes) / d and (y * lanes + v) % d == (y * lanes) % d + v
      // when lanes divides d: the lanes stay within one multiple of d.
      if (!P::is_const_int(e->args[1], &c) || c <= 0) return std::nullopt;
      auto a = step(e->args[0]);
      // What does not move with the lane gives one quotient and one remainder for all of them.
      if (a && *a == 0) return 0;
      if (c % lanes_ != 0) return std::nullopt;
      if (!a || *a != 1 || !multiple_at_zero(e->args[0])) return std::nullopt;
      return e->kind == ExprKind::FloorDiv ? 0 : 1;
    }
    default:
      return std::nullopt;
    }
  }

  // Whether e(0) is a multiple of lanes for every value of the other variables.
  bool multiple_at_zero(const P::Expr& e) const {
    int64_t c = 0;
    switch (e->kind) {
    case ExprKind::IntImm:
      return e->int_value % lanes_ == 0;
    case ExprKind::Var:
      return e->var_id == v_;
    case ExprKind::Add:
    case ExprKind::Sub:
      return multiple_at_zero(e->args[0]) && multiple_at_zero(e->args[1]);
    case ExprKind::Mul:
      if (P::is_const_int(e->args[1], &c) && c % lanes_ == 0) return true;
      if (P::is_const_int(e->args[0], &c) && c % lanes_ == 0) return true;
      return multiple_at_zero(e->args[0]) || multiple_at_zero(e->args[1]);
    case ExprKind::FloorMod:
      return P::is_const_int(e->args[1], &c) && c % lanes_ == 0 && multiple_at_zero(e->args[0]);
    default:
      return false;
    }
  }

private:
  int64_t v_, lanes_;
};

} // namespace

std::optional<VectorCopy> match_vector_copy(const P::Stmt& loop, const FlatIndex& flat_index) {
  if (!loop || loop->kind != P::StmtKind::For || loop->for_kind != P::ForKind::Vectorized)
    return std::nullopt;
  const P::Stmt& st = loop->body;
  if (!st || st->kind != P::StmtKind::Store) return std::nullopt;
  const P::Expr& v = st->value;
  if (v->kind != ExprKind::Load || !(v->buffer->dtype == st->buffer->dtype)) return std::nullopt;
  VectorCopy out;
  out.store = st;
  out.lanes = loop->extent;
  out.bytes = loop->extent * st->buffer->dtype.bytes();
  if (out.bytes != 4 && out.bytes != 8 && out.bytes != 16) return std::nullopt;
  LaneStep lanes(loop->loop_var->var_id, loop->extent);
  for (const auto& [buffer, indices] :
       {std::pair{st->buffer, st->indices}, std::pair{v->buffer, v->args}}) {
    P::Expr flat = flat_index(buffer, indices);
    auto step = lanes.step(flat);
    if (!step || *step != 1 || !lanes.multiple_at_zero(flat)) return std::nullopt;
  }
  return out;
}

} // namespace mt::gpu_codegen
