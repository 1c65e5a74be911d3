// Lowering pass 3: buffer compaction. Inside its Allocate a buffer only needs to hold the
// region the enclosed loops touch; shrinking it to that region (indices shifted by the
// region's start) turns whole-tensor intermediates of fused schedules into small tiles.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/ir/arith.h"
#include "core/lower/lower.h"
#include "core/support/check.h"

namespace mt {

namespace {

struct Access {
  std::vector<Expr> indices;
  RangeMap inner_loops; // loops between the Allocate and the access
};

class AccessCollector {
public:
  explicit AccessCollector(const BufferNode* buf) : buf_(buf) {}

  void visit(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case StmtKind::For: {
      auto* f = as<ForNode>(s);
      inner_[f->loop_var.get()] = IntBound::range(0, f->extent);
      visit(f->body);
      inner_.erase(f->loop_var.get());
      return;
    }
    case StmtKind::Store: {
      auto* n = as<StoreNode>(s);
      if (n->buffer.get() == buf_) accesses.push_back({n->indices, inner_});
      for (const Expr& i : n->indices)
        visit_expr(i);
      visit_expr(n->value);
      return;
    }
    case StmtKind::IfThenElse:
      visit_expr(as<IfThenElseNode>(s)->condition);
      break;
    default:
      break;
    }
    for (const Stmt& c : children(s))
      visit(c);
  }

  std::vector<Access> accesses;

private:
  void visit_expr(const Expr& e) {
    post_order_visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load && x->buffer.get() == buf_)
        accesses.push_back({x->args, inner_});
    });
  }

  const BufferNode* buf_;
  RangeMap inner_;
};

struct DimRegion {
  Expr min;
  int64_t extent;
};

// The union of what the accesses touch in dimension `d`, as [min, min + extent) with `min` an
// expression of the outer loop variables; nullopt when it cannot be bounded.
std::optional<DimRegion> accessed_region(const std::vector<Access>& accesses, size_t d,
                                         const RangeMap& outer) {
  Expr base;
  int64_t lo = 0, hi = 0; // [base + lo, base + hi)
  for (const Access& a : accesses) {
    std::optional<RelaxedRange> r = relax(a.indices[d], a.inner_loops, outer);
    if (!r || !r->min || r->extent <= 0) return std::nullopt;
    // The start must be fixed for the whole allocation: only outer variables may remain.
    for (const auto& [var, range] : a.inner_loops)
      if (uses_var(r->min, var)) return std::nullopt;
    if (!base) {
      base = r->min;
      hi = r->extent;
      continue;
    }
    // Different accesses may start at different offsets of the outer variables: bound the
    // offset between them over the outer ranges.
    IntBound off = bound_of(simplify(make_binary(ExprKind::Sub, r->min, base), outer), outer);
    if (!off.bounded()) return std::nullopt;
    lo = std::min(lo, off.min);
    hi = std::max(hi, off.max + r->extent);
  }
  if (!base) return std::nullopt;
  return DimRegion{simplify(make_binary(ExprKind::Add, base, int_imm(lo)), outer), hi - lo};
}

std::vector<Expr> shifted(const std::vector<Expr>& idx, const std::vector<Expr>& mins) {
  std::vector<Expr> out(idx.size());
  for (size_t i = 0; i < idx.size(); ++i)
    out[i] =
        is_const_int(mins[i], int64_t{0}) ? idx[i] : make_binary(ExprKind::Sub, idx[i], mins[i]);
  return out;
}

Stmt retarget(const Stmt& body, const Buffer& from, const Buffer& to,
              const std::vector<Expr>& mins) {
  auto fix = [&](const Expr& e) {
    return transform(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load && x->buffer == from)
        return make_load(to, shifted(x->args, mins));
      return x;
    });
  };
  return transform_stmts(body, [&](const Stmt& s) -> Stmt {
    if (s->kind == StmtKind::Store) {
      auto* n = as<StoreNode>(s);
      std::vector<Expr> idx;
      for (const Expr& i : n->indices)
        idx.push_back(fix(i));
      if (n->buffer == from) return make_store(to, shifted(idx, mins), fix(n->value));
      return make_store(n->buffer, std::move(idx), fix(n->value));
    }
    if (s->kind == StmtKind::IfThenElse) {
      auto* n = as<IfThenElseNode>(s);
      return make_if(fix(n->condition), n->then_case, n->else_case);
    }
    return s;
  });
}

Stmt compact(const Stmt& s, RangeMap& outer) {
  if (!s) return s;
  switch (s->kind) {
  case StmtKind::For: {
    auto* f = as<ForNode>(s);
    outer[f->loop_var.get()] = IntBound::range(0, f->extent);
    Stmt nb = compact(f->body, outer);
    outer.erase(f->loop_var.get());
    return nb == f->body ? s : with_body(s, nb);
  }
  case StmtKind::Allocate: {
    auto* a = as<AllocateNode>(s);
    const Buffer& buf = a->buffer;
    AccessCollector collector(buf.get());
    collector.visit(a->body);
    std::vector<int64_t> shape = buf->shape;
    std::vector<Expr> mins(shape.size(), int_imm(0));
    if (!collector.accesses.empty()) {
      for (size_t d = 0; d < shape.size(); ++d) {
        std::optional<DimRegion> r = accessed_region(collector.accesses, d, outer);
        if (!r || r->extent >= buf->shape[d]) continue;
        int64_t c;
        if (is_const_int(r->min, &c)) {
          // A constant region can be clipped to the buffer (relax over-approximates).
          int64_t begin = std::max<int64_t>(c, 0), end = std::min(c + r->extent, buf->shape[d]);
          if (begin >= end) continue;
          mins[d] = int_imm(begin);
          shape[d] = end - begin;
        } else {
          mins[d] = r->min;
          shape[d] = r->extent;
        }
      }
    }
    Stmt body = a->body;
    Buffer nbuf = buf;
    if (shape != buf->shape) {
      nbuf = make_buffer(buf->name, buf->dtype, shape, buf->scope);
      body = retarget(body, buf, nbuf, mins);
    }
    Stmt nb = compact(body, outer);
    return nbuf == buf && nb == a->body ? s : make_allocate(nbuf, nb);
  }
  case StmtKind::Seq: {
    std::vector<Stmt> items;
    bool changed = false;
    for (const Stmt& c : as<SeqNode>(s)->stmts) {
      items.push_back(compact(c, outer));
      changed = changed || items.back() != c;
    }
    return changed ? make_seq(std::move(items)) : s;
  }
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(s);
    Stmt t = compact(n->then_case, outer), e = compact(n->else_case, outer);
    return t == n->then_case && e == n->else_case ? s : make_if(n->condition, t, e);
  }
  case StmtKind::BlockRealize:
    MT_ICHECK(false, "compact_buffers before lower_blocks (a block is left)");
    return s;
  default:
    return s;
  }
}

} // namespace

Stmt compact_buffers(const Stmt& body) {
  RangeMap outer;
  return compact(body, outer);
}

} // namespace mt
