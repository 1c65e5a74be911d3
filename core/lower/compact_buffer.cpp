// Lowering pass 3: buffer compaction. Inside its Allocate a buffer only needs to hold the
// region the enclosed loops touch; shrinking it to that region (indices shifted by the
// region's start) turns whole-tensor intermediates of fused schedules into small tiles.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "core/ir/arith.h"
#include "core/lower/lower.h"
#include "core/lower/storage_align.h"
#include "core/support/check.h"

namespace mt {

namespace {

struct Access {
  std::vector<Expr> indices;
  RangeMap inner_loops;              // loops between the Allocate and the access
  std::vector<const ForNode*> loops; // the same, outermost first
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
      stack_.push_back(f);
      visit(f->body);
      stack_.pop_back();
      inner_.erase(f->loop_var.get());
      return;
    }
    case StmtKind::Store: {
      auto* n = as<StoreNode>(s);
      if (n->buffer.get() == buf_) accesses.push_back({n->indices, inner_, stack_});
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
        accesses.push_back({x->args, inner_, stack_});
    });
  }

  const BufferNode* buf_;
  RangeMap inner_;
  std::vector<const ForNode*> stack_;
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

// The compacted shape of a buffer and the start subtracted from each index.
struct Region {
  std::vector<int64_t> shape;
  std::vector<Expr> mins;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t e : shape)
      n *= e;
    return n;
  }
};

Region region_of(const BufferNode& buf, const std::vector<Access>& accesses,
                 const RangeMap& outer) {
  Region out{buf.shape, std::vector<Expr>(buf.shape.size(), int_imm(0))};
  if (accesses.empty()) return out;
  for (size_t d = 0; d < buf.shape.size(); ++d) {
    std::optional<DimRegion> r = accessed_region(accesses, d, outer);
    if (!r || r->extent >= buf.shape[d]) continue;
    int64_t c;
    if (is_const_int(r->min, &c)) {
      // A constant region can be clipped to the buffer (relax over-approximates).
      int64_t begin = std::max<int64_t>(c, 0), end = std::min(c + r->extent, buf.shape[d]);
      if (begin >= end) continue;
      out.mins[d] = int_imm(begin);
      out.shape[d] = end - begin;
    } else {
      out.mins[d] = r->min;
      out.shape[d] = r->extent;
    }
  }
  return out;
}

// A shared buffer is allocated above the thread loops (lowering pass 2), so its region is
// relaxed over every loop below them too -- a GPU tile fetched under a serial k loop would
// span the whole k extent. When every access lies under the same serial loops, the region of
// one iteration is enough, its start moving with them, provided no element is touched in two
// iterations (then nothing is handed from one to the next): per loop, either the start does
// not move with it, or it moves by at least the region's extent in some dimension.
std::optional<Region> per_iteration_region(const BufferNode& buf,
                                           const std::vector<Access>& accesses,
                                           const RangeMap& outer) {
  if (accesses.empty()) return std::nullopt;
  std::vector<const ForNode*> common = accesses[0].loops;
  for (const Access& a : accesses) {
    size_t n = 0;
    while (n < common.size() && n < a.loops.size() && common[n] == a.loops[n])
      ++n;
    common.resize(n);
  }
  std::vector<const ForNode*> fixed;
  for (const ForNode* f : common)
    if (f->for_kind != ForKind::ThreadBinding) fixed.push_back(f);
  if (fixed.empty()) return std::nullopt;
  RangeMap with_fixed = outer;
  std::vector<Access> inner = accesses;
  for (const ForNode* f : fixed) {
    with_fixed[f->loop_var.get()] = IntBound::range(0, f->extent);
    for (Access& a : inner)
      a.inner_loops.erase(f->loop_var.get());
  }
  Region r = region_of(buf, inner, with_fixed);
  for (const ForNode* f : fixed) {
    bool moves = false, apart = false;
    for (size_t d = 0; d < r.mins.size(); ++d) {
      if (!uses_var(r.mins[d], f->loop_var.get())) continue;
      moves = true;
      std::optional<int64_t> c = linear_coefficient(r.mins[d], f->loop_var.get());
      if (!c) return std::nullopt;
      apart = apart || std::abs(*c) >= r.shape[d];
    }
    if (moves && !apart) return std::nullopt;
  }
  return r;
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

Stmt compact(const Stmt& s, RangeMap& outer, const StorageAligns& aligns) {
  if (!s) return s;
  switch (s->kind) {
  case StmtKind::For: {
    auto* f = as<ForNode>(s);
    outer[f->loop_var.get()] = IntBound::range(0, f->extent);
    Stmt nb = compact(f->body, outer, aligns);
    outer.erase(f->loop_var.get());
    return nb == f->body ? s : with_body(s, nb);
  }
  case StmtKind::Allocate: {
    auto* a = as<AllocateNode>(s);
    const Buffer& buf = a->buffer;
    AccessCollector collector(buf.get());
    collector.visit(a->body);
    Region region = region_of(*buf, collector.accesses, outer);
    if (buf->scope == "shared") {
      std::optional<Region> per_step = per_iteration_region(*buf, collector.accesses, outer);
      if (per_step && per_step->elements() < region.elements()) region = *per_step;
    }
    auto align = aligns.find(buf->name);
    const std::vector<int64_t> shape =
        align == aligns.end() ? region.shape : aligned_shape(region.shape, align->second);
    const std::vector<Expr>& mins = region.mins;
    Stmt body = a->body;
    Buffer nbuf = buf;
    if (shape != buf->shape) {
      nbuf = make_buffer(buf->name, buf->dtype, shape, buf->scope);
      body = retarget(body, buf, nbuf, mins);
    }
    Stmt nb = compact(body, outer, aligns);
    return nbuf == buf && nb == a->body ? s : make_allocate(nbuf, nb);
  }
  case StmtKind::Seq: {
    std::vector<Stmt> items;
    bool changed = false;
    for (const Stmt& c : as<SeqNode>(s)->stmts) {
      items.push_back(compact(c, outer, aligns));
      changed = changed || items.back() != c;
    }
    return changed ? make_seq(std::move(items)) : s;
  }
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(s);
    Stmt t = compact(n->then_case, outer, aligns), e = compact(n->else_case, outer, aligns);
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

Stmt compact_buffers(const Stmt& body, const StorageAligns& aligns) {
  RangeMap outer;
  return compact(body, outer, aligns);
}

Stmt compact_buffers(const Stmt& body) {
  return compact_buffers(body, {});
}

} // namespace mt
