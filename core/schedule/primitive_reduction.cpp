// decompose_reduction and rfactor: restructure reduction blocks.
#include <algorithm>
#include <set>

#include "core/schedule/schedule_impl.h"
#include "core/schedule/transaction.h"

namespace mt {

namespace {

bool any_uses(const std::vector<Expr>& es, const ExprNode* v) {
  return std::any_of(es.begin(), es.end(), [&](const Expr& e) { return uses_var(e, v); });
}

struct ReductionParts {
  const StoreNode* store;
  ExprKind combiner;  // Add, Max or Min
  Expr rhs;           // the value combined into the accumulator
  Expr identity;      // the init value
};

ReductionParts match_reduction(const char* prim, const std::string& subject, const Block& b) {
  if (!b.init || b.body->kind != StmtKind::Store || b.init->kind != StmtKind::Store)
    schedule_error(prim, subject, "the block is not a reduction with an init");
  auto* st = as<StoreNode>(b.body);
  Expr v = st->value;
  if (v->kind == ExprKind::Cast) v = v->args[0];
  if (v->kind != ExprKind::Add && v->kind != ExprKind::Max && v->kind != ExprKind::Min)
    schedule_error(prim, subject, "the reduction combiner must be +, max or min");
  auto is_acc = [&](const Expr& e) {
    if (e->kind != ExprKind::Load || e->buffer != st->buffer) return false;
    for (size_t d = 0; d < e->args.size(); ++d)
      if (!e->args[d].same_as(st->indices[d])) return false;
    return true;
  };
  Expr rhs;
  if (is_acc(v->args[0])) rhs = v->args[1];
  else if (is_acc(v->args[1])) rhs = v->args[0];
  else schedule_error(prim, subject, "the reduction does not read its accumulator");
  if (uses_buffer(rhs, st->buffer.get()))
    schedule_error(prim, subject, "the reduction reads its accumulator more than once");
  return {st, v->kind, rhs, as<StoreNode>(b.init)->value};
}

Expr combine(ExprKind k, Expr a, Expr b) { return make_binary(k, a, b); }

} // namespace

BlockRV Schedule::decompose_reduction(BlockRV block, LoopRV loop) {
  return transact(*impl_, [&] {
    const char* prim = "decompose_reduction";
    StmtPath bp = impl_->block_path(prim, block);
    StmtPath lp = impl_->loop_path(prim, loop);
    auto* br = impl_->realize(bp);
    const Block& b = *br->block;
    std::string subject = "block '" + b.name + "'";
    if (!b.init) schedule_error(prim, subject, "the block has no init to decompose");
    auto it = std::find(bp.nodes.begin(), bp.nodes.end(), lp.leaf());
    if (it == bp.nodes.end())
      schedule_error(prim, subject, impl_->loop_desc(loop) + " does not enclose the block");
    size_t depth = static_cast<size_t>(it - bp.nodes.begin());
    std::vector<Expr> spatial_vals, reduce_vals;
    for (size_t i = 0; i < b.iter_vars.size(); ++i)
      (b.iter_vars[i].kind == IterKind::Spatial ? spatial_vals : reduce_vals).push_back(br->iter_values[i]);
    // Loops above `loop` must not drive the reduction, or the init would run repeatedly.
    for (size_t k = 0; k < depth; ++k)
      if (bp.nodes[k]->kind == StmtKind::For &&
          any_uses(reduce_vals, as<ForNode>(bp.nodes[k])->loop_var.get()))
        schedule_error(prim, subject, "reduction loop '" + as<ForNode>(bp.nodes[k])->loop_var->name +
                                          "' is outside " + impl_->loop_desc(loop));
    // Copy the loops at/below `loop` that drive spatial iter vars.
    std::vector<const ForNode*> copied;
    VarMap loop_map;
    for (size_t k = depth; k + 1 < bp.nodes.size(); ++k) {
      if (bp.nodes[k]->kind != StmtKind::For) continue;
      auto* f = as<ForNode>(bp.nodes[k]);
      bool sp = any_uses(spatial_vals, f->loop_var.get());
      bool rd = any_uses(reduce_vals, f->loop_var.get());
      if (sp && rd)
        schedule_error(prim, subject, "loop '" + f->loop_var->name + "' drives both spatial and reduction iter vars");
      if (!sp && !rd && f->extent > 1)
        schedule_error(prim, subject, "loop '" + f->loop_var->name +
                                          "' repeats the reduction; the init must stay inside it");
      if (sp) {
        copied.push_back(f);
        loop_map[f->loop_var.get()] = make_var(f->loop_var->name + "_init");
      }
    }
    Block init;
    init.name = impl_->fresh_name(b.name + "_init");
    VarMap iv_map;
    std::vector<Expr> vals;
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      if (b.iter_vars[i].kind != IterKind::Spatial) continue;
      Expr nv = make_var(b.iter_vars[i].var->name);
      iv_map[b.iter_vars[i].var.get()] = nv;
      init.iter_vars.push_back({nv, b.iter_vars[i].extent, IterKind::Spatial});
      vals.push_back(substitute(br->iter_values[i], loop_map));
    }
    init.body = substitute(b.init, iv_map);
    // Keep the predicate conjuncts that only involve loops the init nest has.
    std::set<const ExprNode*> below;
    for (size_t k = depth; k + 1 < bp.nodes.size(); ++k)
      if (bp.nodes[k]->kind == StmtKind::For) below.insert(as<ForNode>(bp.nodes[k])->loop_var.get());
    Expr pred;
    for (auto& c : conjuncts(br->predicate)) {
      bool ok = true;
      for (auto* v : below)
        if (uses_var(c, v) && !loop_map.count(v)) ok = false;
      if (!ok) continue;
      Expr c2 = substitute(c, loop_map);
      pred = pred ? (pred && c2) : c2;
    }
    Stmt nest = make_block_realize(vals, pred, init);
    for (size_t i = copied.size(); i-- > 0;)
      nest = make_for(loop_map[copied[i]->loop_var.get()], copied[i]->extent, nest);
    Block upd = b;
    upd.init = nullptr;
    impl_->root() = replace_at(bp, make_block_realize(br->iter_values, br->predicate, upd));
    StmtPath lp2 = impl_->loop_path(prim, loop);
    impl_->root() = replace_at(lp2, make_seq({nest, lp2.leaf()}));
    impl_->normalize();
    BlockRV out = impl_->new_block_rv(init.name);
    impl_->record({prim, {Impl::ref(block), Impl::ref(loop)}, {}, {Impl::ref(out)}, std::nullopt});
    return out;
  });
}

BlockRV Schedule::rfactor(LoopRV loop, int factor_axis) {
  return transact(*impl_, [&] {
    const char* prim = "rfactor";
    StmtPath lp = impl_->loop_path(prim, loop);
    auto* lf = as<ForNode>(lp.leaf());
    std::string lsubject = impl_->loop_desc(loop);
    auto under = collect_blocks(lp.leaf());
    if (under.size() != 1) schedule_error(prim, lsubject, "the loop must contain exactly one block");
    const BlockRealizeNode* br = under[0];
    const Block& b = *br->block;
    std::string subject = "block '" + b.name + "'";
    ReductionParts red = match_reduction(prim, subject, b);
    Buffer y = red.store->buffer;
    if (factor_axis < 0 || factor_axis > static_cast<int>(y->shape.size()))
      schedule_error(prim, subject, "factor_axis " + std::to_string(factor_axis) + " out of range");
    StmtPath bp = *find_block(func_.body, b.name);
    std::vector<Expr> spatial_vals, reduce_vals;
    for (size_t i = 0; i < b.iter_vars.size(); ++i)
      (b.iter_vars[i].kind == IterKind::Spatial ? spatial_vals : reduce_vals).push_back(br->iter_values[i]);
    const ExprNode* lv = lf->loop_var.get();
    if (!any_uses(reduce_vals, lv) || any_uses(spatial_vals, lv))
      schedule_error(prim, lsubject, "the loop must drive only reduction iter vars");
    // The rf block's iteration domain comes from the loops; a predicate (an imperfect split)
    // would have to move into it, which a later compute_at could not preserve.
    if (br->predicate)
      schedule_error(prim, lsubject, "the block has a predicate (an imperfect split)");
    for (auto& idx : red.store->indices)
      if (!is_var(idx)) schedule_error(prim, subject, "the store indices must be iter vars");

    // rf block: spatial vars, the factored loop as a new spatial var, other reduction loops
    // as reduction vars.
    Block rf;
    rf.name = impl_->fresh_name(b.name + "_rf");
    std::vector<Expr> vals;
    VarMap iv_map;   // old spatial iter var -> rf iter var
    VarMap loop_map; // reduction-driving loop -> rf iter var
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      if (b.iter_vars[i].kind != IterKind::Spatial) continue;
      Expr nv = make_var(b.iter_vars[i].var->name);
      iv_map[b.iter_vars[i].var.get()] = nv;
      rf.iter_vars.push_back({nv, b.iter_vars[i].extent, IterKind::Spatial});
      vals.push_back(br->iter_values[i]);
    }
    Expr vr = make_var("v" + lf->loop_var->name);
    rf.iter_vars.push_back({vr, lf->extent, IterKind::Spatial});
    vals.push_back(lf->loop_var);
    loop_map[lv] = vr;
    for (auto* f : bp.loops()) {
      if (f->loop_var.get() == lv || !any_uses(reduce_vals, f->loop_var.get())) continue;
      if (any_uses(spatial_vals, f->loop_var.get()))
        schedule_error(prim, subject, "loop '" + f->loop_var->name + "' drives both spatial and reduction iter vars");
      Expr nv = make_var("v" + f->loop_var->name);
      rf.iter_vars.push_back({nv, f->extent, IterKind::Reduce});
      vals.push_back(f->loop_var);
      loop_map[f->loop_var.get()] = nv;
    }
    for (size_t i = 0; i < b.iter_vars.size(); ++i)
      if (b.iter_vars[i].kind == IterKind::Reduce)
        iv_map[b.iter_vars[i].var.get()] = substitute(br->iter_values[i], loop_map);
    std::vector<int64_t> rf_shape = y->shape;
    rf_shape.insert(rf_shape.begin() + factor_axis, lf->extent);
    Buffer yrf = make_buffer(impl_->fresh_name(y->name + "_rf"), y->dtype, rf_shape, y->scope == "global" ? "global" : y->scope);
    std::vector<Expr> rf_idx;
    for (auto& idx : red.store->indices) rf_idx.push_back(substitute(idx, iv_map));
    rf_idx.insert(rf_idx.begin() + factor_axis, vr);
    Expr rhs = substitute(red.rhs, iv_map);
    rf.init = make_store(yrf, rf_idx, red.identity);
    rf.body = make_store(yrf, rf_idx, combine(red.combiner, make_load(yrf, rf_idx), rhs));

    // Write-back block keeps the original name and combines the partial results.
    Block wb;
    wb.name = b.name;
    std::vector<Expr> wb_loops, wb_idx;
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      if (b.iter_vars[i].kind != IterKind::Spatial) continue;
      Expr nv = make_var(b.iter_vars[i].var->name);
      wb.iter_vars.push_back({nv, b.iter_vars[i].extent, IterKind::Spatial});
      wb_loops.push_back(make_var(b.iter_vars[i].var->name.size() > 1 && b.iter_vars[i].var->name[0] == 'v'
                                      ? b.iter_vars[i].var->name.substr(1)
                                      : b.iter_vars[i].var->name));
    }
    Expr vk = make_var("v" + lf->loop_var->name);
    wb.iter_vars.push_back({vk, lf->extent, IterKind::Reduce});
    wb_loops.push_back(make_var(lf->loop_var->name));
    VarMap wb_map;
    {
      size_t j = 0;
      for (size_t i = 0; i < b.iter_vars.size(); ++i)
        if (b.iter_vars[i].kind == IterKind::Spatial) wb_map[b.iter_vars[i].var.get()] = wb.iter_vars[j++].var;
    }
    std::vector<Expr> out_idx, part_idx;
    for (auto& idx : red.store->indices) out_idx.push_back(substitute(idx, wb_map));
    part_idx = out_idx;
    part_idx.insert(part_idx.begin() + factor_axis, vk);
    wb.init = make_store(y, out_idx, red.identity);
    wb.body = make_store(y, out_idx, combine(red.combiner, make_load(y, out_idx), make_load(yrf, part_idx)));
    Stmt wb_nest = make_block_realize(wb_loops, Expr(), wb);
    for (size_t i = wb.iter_vars.size(); i-- > 0;) wb_nest = make_for(wb_loops[i], wb.iter_vars[i].extent, wb_nest);

    std::vector<std::string> before = block_names_in_order(func_.body);
    Stmt root = replace_at(bp, make_block_realize(vals, br->predicate, rf));
    std::vector<Stmt> items =
        root->kind == StmtKind::Seq ? as<SeqNode>(root)->stmts : std::vector<Stmt>{root};
    size_t pos = 0;
    for (size_t i = 0; i < items.size(); ++i)
      if (find_block(items[i], rf.name)) pos = i;
    for (auto* other : collect_blocks(items[pos]))
      if (other->block->name != rf.name && block_reads_buffer(*other->block, y.get()))
        schedule_error(prim, subject, "'" + y->name + "' is read in the same loop nest");
    items.insert(items.begin() + static_cast<long>(pos) + 1, wb_nest);
    impl_->root() = make_seq(items);
    func_.buffers.push_back(yrf);
    // The original name now denotes the write-back; check dependencies by buffer use.
    std::replace(before.begin(), before.end(), b.name, rf.name);
    impl_->check_order_preserved(prim, subject, before);
    impl_->normalize();
    BlockRV out = impl_->new_block_rv(rf.name);
    impl_->record({prim, {Impl::ref(loop)}, {int64_t(factor_axis)}, {Impl::ref(out)}, std::nullopt});
    return out;
  });
}

} // namespace mt
