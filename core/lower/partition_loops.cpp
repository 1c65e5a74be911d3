// Loop partitioning (lowering pass 6). An imperfect split guards the statements of the blocks
// below it with the original bound (`i0*66 + i1*6 + i2 < 1024`); lowered as is, that guard is
// evaluated in the innermost, hottest loop although it is false only in the last tile. Here a
// loop whose first (or last) iterations provably satisfy a guard gets its body duplicated under
// two: one copy simplified with v in [0, t), where the guard folds away, the other with v in
// [t, extent), where it stays (or folds the other way). A serial or unrolled loop becomes two
// consecutive loops (a one-iteration part, no loop); a parallel loop keeps its iteration space
// and branches on its index inside the parallel body, outside the loops the guard protected.
// The same peels the first iteration of a reduction loop whose init is guarded by `k == 0`.
#include <functional>

#include "core/ir/arith.h"
#include "core/lower/lower.h"

namespace mt {

namespace {

// Bound on how many times one function body may be duplicated: each partition doubles the
// statements below the partitioned loop, and code size costs compile time in tuning.
constexpr int kMaxPartitions = 6;

struct Cut {
  int64_t t = 0;
};

struct Segment {
  int64_t lo = 0, hi = 0;
  Stmt body; // for v in [lo, hi)
};

class Partitioner {
public:
  Stmt visit(const Stmt& s, RangeMap& ranges) {
    if (!s) return s;
    switch (s->kind) {
    case StmtKind::For: {
      auto* f = as<ForNode>(s);
      // Lanes and threads are not split: a branch per lane is what vectorization removes,
      // and a branch on a thread index diverges.
      if (f->for_kind == ForKind::Vectorized || f->for_kind == ForKind::ThreadBinding) return s;
      std::vector<Segment> segs = split_range(f->body, f->loop_var, 0, f->extent, ranges);
      Stmt out = assemble(*f, segs, ranges);
      ranges.erase(f->loop_var.get());
      return out;
    }
    case StmtKind::Seq: {
      std::vector<Stmt> items;
      bool changed = false;
      for (const Stmt& c : as<SeqNode>(s)->stmts) {
        items.push_back(visit(c, ranges));
        changed = changed || items.back() != c;
      }
      return changed ? make_seq(std::move(items)) : s;
    }
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      Stmt t = visit(n->then_case, ranges);
      Stmt e = visit(n->else_case, ranges);
      return t == n->then_case && e == n->else_case ? s : make_if(n->condition, t, e);
    }
    case StmtKind::Allocate: {
      Stmt body = visit(as<AllocateNode>(s)->body, ranges);
      return body == as<AllocateNode>(s)->body ? s : with_body(s, body);
    }
    default:
      return s;
    }
  }

private:
  int budget_ = kMaxPartitions;

  // `body` of a loop over v in [lo, hi), as consecutive ranges each with its own copy.
  std::vector<Segment> split_range(const Stmt& body, const Expr& v, int64_t lo, int64_t hi,
                                   RangeMap& ranges) {
    ranges[v.get()] = IntBound{lo, hi - 1};
    std::optional<Cut> cut;
    if (budget_ > 0 && hi - lo > 1) cut = find_cut(body, v, lo, hi, ranges);
    if (!cut) return {Segment{lo, hi, visit(body, ranges)}};
    --budget_;
    Stmt first = refine(body, v, lo, cut->t, ranges);
    Stmt rest = freshen_loop_vars(refine(body, v, cut->t, hi, ranges));
    std::vector<Segment> out = split_range(first, v, lo, cut->t, ranges);
    for (Segment& s : split_range(rest, v, cut->t, hi, ranges))
      out.push_back(std::move(s));
    ranges[v.get()] = IntBound{lo, hi - 1};
    return out;
  }

  // A parallel loop keeps its iteration space and branches on the index inside (two parallel
  // loops would synchronise twice and leave threads idle in the short one); other loops
  // become consecutive loops, a one-iteration part no loop at all.
  Stmt assemble(const ForNode& f, const std::vector<Segment>& segs, RangeMap& ranges) {
    if (segs.size() == 1) {
      if (segs[0].body == f.body) return std::make_shared<ForNode>(f);
      auto n = std::make_shared<ForNode>(f);
      n->body = segs[0].body;
      return n;
    }
    if (f.for_kind == ForKind::Parallel) {
      Stmt chain = segs.back().body;
      for (size_t i = segs.size() - 1; i-- > 0;)
        chain = make_if(f.loop_var < int_imm(segs[i].hi), segs[i].body, chain);
      auto n = std::make_shared<ForNode>(f);
      n->body = chain;
      return n;
    }
    std::vector<Stmt> parts;
    for (const Segment& s : segs) {
      if (s.hi - s.lo == 1) {
        parts.push_back(fold_constant_branches(
            simplify(substitute(s.body, {{f.loop_var.get(), int_imm(s.lo)}}), ranges)));
        continue;
      }
      Expr w = make_var(f.loop_var->name, f.loop_var->dtype);
      ranges[w.get()] = IntBound::range(0, s.hi - s.lo);
      Stmt body = fold_constant_branches(
          simplify(substitute(s.body, {{f.loop_var.get(), w + int_imm(s.lo)}}), ranges));
      ranges.erase(w.get());
      auto n = std::make_shared<ForNode>(f);
      n->loop_var = w;
      n->extent = s.hi - s.lo;
      n->body = body;
      parts.push_back(n);
    }
    return make_seq(std::move(parts));
  }

  // The body simplified for v in [lo, hi): guards decided by that range fold away.
  static Stmt refine(const Stmt& body, const Expr& v, int64_t lo, int64_t hi, RangeMap ranges) {
    ranges[v.get()] = IntBound{lo, hi - 1};
    return fold_constant_branches(simplify(body, ranges));
  }

  // The two copies are siblings; fresh loop variables keep every variable bound by one loop.
  static Stmt freshen_loop_vars(const Stmt& s) {
    VarMap vmap;
    visit_stmts(s, [&](const Stmt& x) {
      if (x->kind == StmtKind::For) {
        const Expr& lv = as<ForNode>(x)->loop_var;
        vmap[lv.get()] = make_var(lv->name, lv->dtype);
      }
      return true;
    });
    if (vmap.empty()) return s;
    Stmt r = substitute(s, vmap);
    return transform_stmts(r, [&](const Stmt& x) -> Stmt {
      if (x->kind != StmtKind::For) return x;
      auto it = vmap.find(as<ForNode>(x)->loop_var.get());
      if (it == vmap.end()) return x;
      auto n = std::make_shared<ForNode>(*as<ForNode>(x));
      n->loop_var = it->second;
      return n;
    });
  }

  // A point t in (lo, hi) such that some guard conjunct over v holds for every v < t (a
  // prefix) or for every v >= t (a suffix) with everything else in its range. The first
  // guard found wins (outermost statements first).
  std::optional<Cut> find_cut(const Stmt& body, const Expr& v, int64_t lo, int64_t hi,
                              RangeMap& ranges) {
    std::optional<Cut> found;
    std::vector<const ExprNode*> inner;
    std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
      if (!s || found) return;
      switch (s->kind) {
      case StmtKind::For: {
        auto* f = as<ForNode>(s);
        ranges[f->loop_var.get()] = IntBound::range(0, f->extent);
        inner.push_back(f->loop_var.get());
        walk(f->body);
        inner.pop_back();
        ranges.erase(f->loop_var.get());
        return;
      }
      case StmtKind::IfThenElse: {
        auto* n = as<IfThenElseNode>(s);
        for (const Expr& c : conjuncts(n->condition)) {
          if (found) break;
          if (uses_var(c, v.get())) found = cut_for(c, v, lo, hi, ranges);
        }
        walk(n->then_case);
        walk(n->else_case);
        return;
      }
      default:
        for (const Stmt& c : children(s))
          walk(c);
      }
    };
    walk(body);
    ranges[v.get()] = IntBound{lo, hi - 1};
    return found;
  }

  static std::optional<Cut> cut_for(const Expr& c, const Expr& v, int64_t lo, int64_t hi,
                                    RangeMap& ranges) {
    auto holds = [&](int64_t a, int64_t b) { // c for every v in [a, b)
      if (a >= b) return true;
      ranges[v.get()] = IntBound{a, b - 1};
      return prove(c, ranges);
    };
    // Largest t with c true on [lo, t); holds(lo, t) is monotone (decreasing) in t.
    int64_t a = lo, b = hi;
    while (a < b) {
      int64_t mid = a + (b - a + 1) / 2;
      if (holds(lo, mid))
        a = mid;
      else
        b = mid - 1;
    }
    if (a > lo && a < hi) return Cut{a};
    // Smallest t with c true on [t, hi).
    a = lo;
    b = hi;
    while (a < b) {
      int64_t mid = a + (b - a) / 2;
      if (holds(mid, hi))
        b = mid;
      else
        a = mid + 1;
    }
    if (a > lo && a < hi) return Cut{a};
    return std::nullopt;
  }
};

} // namespace

Stmt partition_loops(const Stmt& body) {
  Partitioner p;
  RangeMap ranges;
  return p.visit(body, ranges);
}

} // namespace mt
