// compute_at and reverse_compute_at: move a producer under a loop of its consumers (or a
// consumer under a loop of its producers), regenerating its loops to cover just the region
// needed (or produced) per iteration of that loop.
#include <algorithm>
#include <map>

#include "core/ir/structural.h"
#include "core/schedule/region.h"
#include "core/schedule/schedule_impl.h"
#include "core/schedule/transaction.h"

namespace mt {

namespace {

bool path_contains(const StmtPath& p, const Stmt& node) {
  return std::find(p.nodes.begin(), p.nodes.end(), node) != p.nodes.end();
}

// Loop nest realizing `block` over `domain` (one range per iter var; null min = full range),
// its loops outermost first in `order` (iter var indices; empty = the iter vars' order).
Stmt make_nest(const Block& block, const std::vector<DimRange>& domain, const RangeMap& ctx,
               std::vector<int> order = {}) {
  std::vector<Expr> loop_vars, values;
  Expr pred;
  RangeMap ranges = ctx;
  for (size_t i = 0; i < block.iter_vars.size(); ++i) {
    const IterVar& iv = block.iter_vars[i];
    std::string base = iv.var->name;
    if (base.size() > 1 && base[0] == 'v') base = base.substr(1);
    Expr lv = make_var(base);
    loop_vars.push_back(lv);
    int64_t ext = std::min(domain[i].extent, iv.extent);
    ranges[lv.get()] = IntBound::range(0, ext);
    Expr value = domain[i].min ? simplify(domain[i].min + lv, ranges) : lv;
    values.push_back(value);
    if (domain[i].min) {
      for (Expr c : {value >= int_imm(0), value < int_imm(iv.extent)}) {
        if (prove(c, ranges)) continue;
        pred = pred ? (pred && c) : c;
      }
    }
  }
  Stmt s = make_block_realize(values, pred, block);
  if (order.empty())
    for (size_t i = 0; i < block.iter_vars.size(); ++i)
      order.push_back(static_cast<int>(i));
  for (size_t k = order.size(); k-- > 0;) {
    auto i = static_cast<size_t>(order[k]);
    s = make_for(loop_vars[i], std::min(domain[i].extent, block.iter_vars[i].extent), s);
  }
  return s;
}

// A producer's loops in the order of the dimensions it writes, then its other iter vars as
// they come: a copy whose layout was transformed (a weight packed with the output channels
// last) then stores whole vectors along its innermost loop and gathers its reads, instead of
// scattering every store; for any other producer the order is its iter vars' own.
std::vector<int> write_order(const Block& b, const std::vector<int>& dim_iter) {
  std::vector<int> order = dim_iter;
  for (size_t i = 0; i < b.iter_vars.size(); ++i)
    if (std::find(order.begin(), order.end(), static_cast<int>(i)) == order.end())
      order.push_back(static_cast<int>(i));
  return order;
}

// The single write buffer of a block whose store indices are distinct spatial iter vars;
// returns the iter var index for each buffer dimension.
std::vector<int> write_dims(const char* prim, const std::string& subject, const Block& b,
                            const Buffer& w) {
  std::vector<int> dim_iter;
  bool found = false;
  visit_stmts(b.body, [&](const Stmt& s) {
    if (s->kind != StmtKind::Store || as<StoreNode>(s)->buffer != w) return true;
    if (found)
      schedule_error(prim, subject, "the block stores to '" + w->name + "' more than once");
    found = true;
    for (auto& idx : as<StoreNode>(s)->indices) {
      int which = -1;
      for (size_t i = 0; i < b.iter_vars.size(); ++i)
        if (idx.same_as(b.iter_vars[i].var)) which = static_cast<int>(i);
      if (which < 0 || b.iter_vars[which].kind != IterKind::Spatial ||
          std::find(dim_iter.begin(), dim_iter.end(), which) != dim_iter.end())
        schedule_error(prim, subject,
                       "the block's store indices must be distinct spatial iter vars");
      dim_iter.push_back(which);
    }
    return true;
  });
  if (!found) schedule_error(prim, subject, "the block does not store to '" + w->name + "'");
  for (size_t i = 0; i < b.iter_vars.size(); ++i)
    if (b.iter_vars[i].kind == IterKind::Spatial &&
        std::find(dim_iter.begin(), dim_iter.end(), static_cast<int>(i)) == dim_iter.end())
      schedule_error(prim, subject,
                     "spatial iter var '" + b.iter_vars[i].var->name + "' is not a store index");
  return dim_iter;
}

// True when a producer's predicate only restates its own domain -- every conjunct is
// `value_i < extent_i` for one of its iter vars, as an imperfect split of its loops leaves it --
// and every dimension of `x` it stores at such an iter var is no larger than that extent. Then
// the block writes every in-bounds point of its relaxed region of `x`, which is all a consumer
// nest (guarded by its own bounds) reads.
bool predicate_is_domain_bound(const BlockRealizeNode& br, const StmtPath& path, const Buffer& x) {
  RangeMap ranges = path_ranges(path);
  const Block& b = *br.block;
  for (const Expr& term : conjuncts(br.predicate)) {
    Expr c = simplify(term, ranges);
    int which = -1;
    for (size_t i = 0; i < b.iter_vars.size() && which < 0; ++i)
      if (structural_equal(c, simplify(br.iter_values[i] < int_imm(b.iter_vars[i].extent), ranges)))
        which = static_cast<int>(i);
    if (which < 0) return false;
    bool ok = true;
    visit_stmts(b.body, [&](const Stmt& s) {
      if (s->kind != StmtKind::Store || as<StoreNode>(s)->buffer != x) return true;
      auto& idx = as<StoreNode>(s)->indices;
      for (size_t d = 0; d < idx.size(); ++d)
        if (idx[d].same_as(b.iter_vars[which].var) && x->shape[d] > b.iter_vars[which].extent)
          ok = false;
      return true;
    });
    if (!ok) return false;
  }
  return true;
}

bool is_param(const Function& f, const Buffer& b) {
  return std::find(f.params.begin(), f.params.end(), b) != f.params.end();
}

std::vector<Stmt> items_of(const Stmt& body) {
  if (body->kind == StmtKind::Seq) return as<SeqNode>(body)->stmts;
  return {body};
}

bool subtree_has_block(const Stmt& s, const std::function<bool(const Block&)>& pred) {
  for (auto* br : collect_blocks(s))
    if (pred(*br->block)) return true;
  return false;
}

} // namespace

void Schedule::compute_at(BlockRV block, LoopRV loop) {
  transact(*impl_, [&] {
    const char* prim = "compute_at";
    Instruction inst{prim, {Impl::ref(block), Impl::ref(loop)}, {}, {}, std::nullopt};
    if (loop.is_root()) {
      impl_->block_path(prim, block);
      impl_->record(std::move(inst));
      return 0;
    }
    if (loop.is_inlined()) {
      compute_inline(block);
      impl_->record(std::move(inst));
      return 0;
    }
    StmtPath bp = impl_->block_path(prim, block);
    StmtPath lp = impl_->loop_path(prim, loop);
    const Block& b = *impl_->realize(bp)->block;
    std::string subject = "block '" + b.name + "'";
    if (path_contains(bp, lp.leaf()))
      schedule_error(prim, subject, "the block is already under " + impl_->loop_desc(loop));
    if (is_reduction_block(b) && !b.init)
      schedule_error(prim, subject,
                     "the block is a reduction update without its init "
                     "(after decompose_reduction); it must not be recomputed");
    auto writes = block_writes(b);
    if (writes.size() != 1)
      schedule_error(prim, subject, "the block must write exactly one buffer");
    Buffer w = writes[0];
    if (is_param(func_, w))
      schedule_error(prim, subject, "the block writes the function output '" + w->name + "'");
    std::vector<int> dim_iter = write_dims(prim, subject, b, w);

    // Consumers must all be under the loop; the region they need per iteration is the union.
    Stmt loop_node = lp.leaf();
    size_t scope_depth = lp.nodes.size() - 1;
    std::vector<std::optional<DimRange>> region(w->shape.size());
    RangeMap ctx = path_ranges(lp);
    int consumers = 0;
    for (auto* br : collect_blocks(func_.body)) {
      if (br->block->name == b.name) continue;
      auto loads = block_loads_of(*br->block, w.get());
      if (loads.empty()) continue;
      StmtPath cp = *find_block(func_.body, br->block->name);
      if (!path_contains(cp, loop_node))
        schedule_error(prim, subject,
                       "consumer block '" + br->block->name + "' is not under " +
                           impl_->loop_desc(loop));
      ++consumers;
      for (auto& ld : loads)
        for (size_t d = 0; d < w->shape.size(); ++d) {
          DimRange r =
              relax_index(ld->args[d], br, cp, scope_depth, w->shape[d], w->scope == "shared");
          if (!region[d]) {
            region[d] = r;
          } else {
            auto u = union_range(*region[d], r, ctx);
            region[d] = u ? *u : DimRange{int_imm(0), w->shape[d]};
          }
        }
    }
    if (consumers == 0)
      schedule_error(prim, subject, "the block has no consumer under " + impl_->loop_desc(loop));
    std::vector<DimRange> domain(b.iter_vars.size());
    for (size_t i = 0; i < b.iter_vars.size(); ++i)
      domain[i] = DimRange{Expr(), b.iter_vars[i].extent};
    for (size_t d = 0; d < dim_iter.size(); ++d) {
      DimRange r = *region[d];
      if (r.extent >= w->shape[d] && is_const_int(r.min, 0)) continue;
      domain[dim_iter[d]] = r;
    }
    Stmt nest = make_nest(b, domain, ctx, write_order(b, dim_iter));

    std::vector<std::string> before = block_names_in_order(func_.body);
    impl_->root() = replace_at(bp, nullptr);
    StmtPath lp2 = impl_->loop_path(prim, loop);
    auto* f = as<ForNode>(lp2.leaf());
    std::vector<Stmt> items = items_of(f->body);
    auto reads = block_reads(b);
    size_t pos = items.size();
    for (size_t i = 0; i < items.size(); ++i)
      if (subtree_has_block(items[i],
                            [&](const Block& x) { return block_reads_buffer(x, w.get()); })) {
        pos = i;
        break;
      }
    for (size_t i = pos; i < items.size(); ++i)
      if (subtree_has_block(items[i], [&](const Block& x) {
            for (auto& r : reads)
              if (block_writes_buffer(x, r.get())) return true;
            return false;
          }))
        schedule_error(prim, subject, "a producer of the block comes after its first consumer");
    items.insert(items.begin() + static_cast<long>(pos), nest);
    impl_->root() = replace_at(lp2, with_body(lp2.leaf(), make_seq(items)));
    impl_->check_order_preserved(prim, subject, before);
    impl_->normalize();
    impl_->record(std::move(inst));
    return 0;
  });
}

void Schedule::reverse_compute_at(BlockRV block, LoopRV loop) {
  transact(*impl_, [&] {
    const char* prim = "reverse_compute_at";
    Instruction inst{prim, {Impl::ref(block), Impl::ref(loop)}, {}, {}, std::nullopt};
    StmtPath bp = impl_->block_path(prim, block);
    StmtPath lp = impl_->loop_path(prim, loop);
    const Block& c = *impl_->realize(bp)->block;
    std::string subject = "block '" + c.name + "'";
    if (path_contains(bp, lp.leaf()))
      schedule_error(prim, subject, "the block is already under " + impl_->loop_desc(loop));
    if (is_reduction_block(c) && !c.init)
      schedule_error(prim, subject,
                     "the block is a reduction update without its init "
                     "(after decompose_reduction); it must not be recomputed");
    Stmt loop_node = lp.leaf();
    size_t scope_depth = lp.nodes.size() - 1;
    RangeMap ctx = path_ranges(lp);
    std::vector<const ExprNode*> outer_loops;
    for (auto* f : lp.loops())
      outer_loops.push_back(f->loop_var.get());
    outer_loops.push_back(as<ForNode>(loop_node)->loop_var.get());

    // Buffers the consumer reads that are produced under the loop.
    std::vector<DimRange> domain(c.iter_vars.size());
    for (size_t i = 0; i < c.iter_vars.size(); ++i)
      domain[i] = DimRange{Expr(), c.iter_vars[i].extent};
    bool any = false;
    for (auto& x : block_reads(c)) {
      std::vector<std::optional<DimRange>> region(x->shape.size());
      bool under = false, outside = false;
      for (auto* br : collect_blocks(func_.body)) {
        if (!block_writes_buffer(*br->block, x.get())) continue;
        StmtPath pp = *find_block(func_.body, br->block->name);
        if (!path_contains(pp, loop_node)) {
          outside = true;
          continue;
        }
        under = true;
        if (br->predicate && !predicate_is_domain_bound(*br, pp, x))
          schedule_error(
              prim, subject,
              "producer block '" + br->block->name +
                  "' is predicated beyond its own bounds: some iterations write nothing");
        for (size_t i = 0; i < br->iter_values.size(); ++i)
          if (br->block->iter_vars[i].kind == IterKind::Reduce)
            for (auto* v : outer_loops)
              if (uses_var(br->iter_values[i], v))
                schedule_error(prim, subject,
                               "producer block '" + br->block->name +
                                   "' has not finished its reduction within one iteration of " +
                                   impl_->loop_desc(loop));
        visit_stmts(br->block->body, [&](const Stmt& s) {
          if (s->kind != StmtKind::Store || as<StoreNode>(s)->buffer != x) return true;
          auto& idx = as<StoreNode>(s)->indices;
          for (size_t d = 0; d < idx.size(); ++d) {
            // The consumer may only read what this iteration wrote: the region must be exact.
            if (!relaxed_range_is_dense(idx[d], br, pp, scope_depth))
              schedule_error(prim, subject,
                             "producer block '" + br->block->name +
                                 "' writes a strided or "
                                 "irregular region of '" +
                                 x->name + "' per iteration");
            DimRange r = relax_index(idx[d], br, pp, scope_depth, x->shape[d]);
            if (!region[d]) {
              region[d] = r;
            } else {
              auto u = union_range(*region[d], r, ctx);
              int64_t gap = 0;
              if (u) gap = u->extent - region[d]->extent - r.extent;
              if (!u || gap > 0)
                schedule_error(prim, subject,
                               "the producers of '" + x->name +
                                   "' write disjoint regions per iteration");
              region[d] = *u;
            }
          }
          return true;
        });
      }
      if (!under) continue;
      if (outside)
        schedule_error(prim, subject,
                       "'" + x->name + "' is also written outside " + impl_->loop_desc(loop));
      any = true;
      for (auto& ld : block_loads_of(c, x.get()))
        for (size_t d = 0; d < ld->args.size(); ++d) {
          int which = -1;
          for (size_t i = 0; i < c.iter_vars.size(); ++i)
            if (ld->args[d].same_as(c.iter_vars[i].var)) which = static_cast<int>(i);
          if (which < 0 || c.iter_vars[which].kind != IterKind::Spatial)
            schedule_error(prim, subject,
                           "the block must read '" + x->name + "' at its spatial iter vars");
          DimRange r = *region[d];
          if (r.extent >= x->shape[d] && is_const_int(r.min, 0)) continue;
          if (domain[which].min) {
            auto u = union_range(domain[which], r, ctx);
            if (!u)
              schedule_error(prim, subject,
                             "inconsistent regions for '" + c.iter_vars[which].var->name + "'");
            domain[which] = *u;
          } else {
            domain[which] = r;
          }
        }
    }
    if (!any)
      schedule_error(prim, subject,
                     "the block reads nothing produced under " + impl_->loop_desc(loop));
    Stmt nest = make_nest(c, domain, ctx);
    std::vector<std::string> before = block_names_in_order(func_.body);
    impl_->root() = replace_at(bp, nullptr);
    StmtPath lp2 = impl_->loop_path(prim, loop);
    std::vector<Stmt> items = items_of(as<ForNode>(lp2.leaf())->body);
    items.push_back(nest);
    impl_->root() = replace_at(lp2, with_body(lp2.leaf(), make_seq(items)));
    impl_->check_order_preserved(prim, subject, before);
    impl_->normalize();
    impl_->record(std::move(inst));
    return 0;
  });
}

} // namespace mt
