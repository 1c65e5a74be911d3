// Loop primitives: split, fuse, reorder, and the loop-kind / annotation primitives.
#include <algorithm>
#include <set>

#include "core/schedule/schedule_impl.h"
#include "core/schedule/transaction.h"

namespace mt {

namespace {

// Loop var appears in a reduction binding of some block under `s`, or (for a data-parallel
// check) a block under `s` does not depend on it while writing.
std::string data_parallel_violation(const Stmt& s, const ExprNode* var) {
  std::string why;
  visit_stmts(s, [&](const Stmt& x) {
    if (!why.empty()) return false;
    if (x->kind != StmtKind::BlockRealize) return true;
    auto* br = as<BlockRealizeNode>(x);
    for (size_t i = 0; i < br->iter_values.size(); ++i)
      if (br->block->iter_vars[i].kind == IterKind::Reduce && uses_var(br->iter_values[i], var))
        why = "it is bound to reduction iter var '" + br->block->iter_vars[i].var->name +
              "' of block '" + br->block->name + "'";
    return true;
  });
  return why;
}

void set_kind(Schedule::Impl& impl, const char* prim, LoopRV loop, ForKind kind,
              const std::string& tag) {
  StmtPath p = impl.loop_path(prim, loop);
  auto* f = as<ForNode>(p.leaf());
  if (kind == ForKind::Parallel || kind == ForKind::Vectorized) {
    std::string why = data_parallel_violation(p.leaf(), f->loop_var.get());
    if (!why.empty())
      schedule_error(prim, impl.loop_desc(loop), "the loop is not data parallel: " + why);
  }
  if (f->for_kind == ForKind::ThreadBinding && kind != ForKind::ThreadBinding)
    schedule_error(prim, impl.loop_desc(loop), "the loop is already bound to " + f->thread_tag);
  impl.root() = replace_at(p, with_for_kind(p.leaf(), kind, tag));
}

} // namespace

std::vector<LoopRV> Schedule::split(LoopRV loop, const std::vector<Factor>& factors) {
  return transact(*impl_, [&] {
    const char* prim = "split";
    StmtPath p = impl_->loop_path(prim, loop);
    auto* f = as<ForNode>(p.leaf());
    std::string subject = impl_->loop_desc(loop);
    if (factors.size() < 2) schedule_error(prim, subject, "needs at least two factors");
    std::vector<int64_t> vals;
    int infer = -1;
    int64_t known = 1;
    Instruction inst{prim, {Impl::ref(loop)}, {}, {}, std::nullopt};
    for (size_t i = 0; i < factors.size(); ++i) {
      int64_t v;
      if (std::holds_alternative<ExprRV>(factors[i])) {
        v = impl_->value(prim, std::get<ExprRV>(factors[i]));
        inst.inputs.push_back(Impl::ref(std::get<ExprRV>(factors[i])));
      } else {
        v = std::get<int64_t>(factors[i]);
        inst.inputs.push_back(v);
      }
      if (v == -1) {
        if (infer >= 0) schedule_error(prim, subject, "at most one factor may be inferred (-1)");
        infer = static_cast<int>(i);
      } else if (v < 1) {
        schedule_error(prim, subject, "factor " + std::to_string(v) + " is not positive");
      } else {
        known *= v;
      }
      vals.push_back(v);
    }
    if (infer >= 0) vals[infer] = (f->extent + known - 1) / known;
    int64_t prod = 1;
    for (int64_t v : vals) prod *= v;
    if (prod < f->extent)
      schedule_error(prim, subject,
                     "factors multiply to " + std::to_string(prod) + ", less than the extent " +
                         std::to_string(f->extent));
    if (f->for_kind == ForKind::ThreadBinding)
      schedule_error(prim, subject, "cannot split a thread-bound loop");
    // New loops outermost first; the old var becomes ((l0*f1 + l1)*f2 + l2)...
    std::vector<Expr> vars;
    Expr combined;
    for (size_t i = 0; i < vals.size(); ++i) {
      vars.push_back(make_var(f->loop_var->name + "_" + std::to_string(i)));
      combined = i == 0 ? vars[0] : combined * vals[i] + vars[i];
    }
    VarMap vmap{{f->loop_var.get(), combined}};
    Stmt body = substitute(f->body, vmap);
    if (prod > f->extent) {
      // Guard every block instance below with the original bound.
      Expr guard = combined < int_imm(f->extent);
      body = transform_stmts(body, [&](const Stmt& x) -> Stmt {
        if (x->kind != StmtKind::BlockRealize) return x;
        auto n = std::make_shared<BlockRealizeNode>(*as<BlockRealizeNode>(x));
        n->predicate = n->predicate ? (guard && n->predicate) : guard;
        return n;
      });
    }
    for (size_t i = vals.size(); i-- > 0;) body = make_for(vars[i], vals[i], body);
    impl_->root() = replace_at(p, body);
    impl_->normalize();
    std::vector<LoopRV> out;
    for (auto& v : vars) {
      out.push_back(impl_->new_loop_rv(v));
      inst.outputs.push_back(Impl::ref(out.back()));
    }
    impl_->record(std::move(inst));
    return out;
  });
}

LoopRV Schedule::fuse(const std::vector<LoopRV>& loops) {
  return transact(*impl_, [&] {
    const char* prim = "fuse";
    if (loops.empty()) schedule_error(prim, "", "needs at least one loop");
    Instruction inst{prim, {}, {}, {}, std::nullopt};
    for (auto& l : loops) inst.inputs.push_back(Impl::ref(l));
    StmtPath p = impl_->loop_path(prim, loops[0]);
    std::vector<const ForNode*> fs{as<ForNode>(p.leaf())};
    Stmt cur = p.leaf();
    for (size_t i = 1; i < loops.size(); ++i) {
      const Expr& v = impl_->loop_var(prim, loops[i]);
      Stmt body = as<ForNode>(cur)->body;
      if (body->kind != StmtKind::For || as<ForNode>(body)->loop_var.get() != v.get())
        schedule_error(prim, impl_->loop_desc(loops[i]),
                       "must be the only child of " + impl_->loop_desc(loops[i - 1]));
      cur = body;
      fs.push_back(as<ForNode>(cur));
    }
    int64_t total = 1;
    std::string name;
    for (auto* f : fs) {
      if (f->for_kind == ForKind::ThreadBinding)
        schedule_error(prim, "loop '" + f->loop_var->name + "'", "cannot fuse thread-bound loops");
      total *= f->extent;
      name += (name.empty() ? "" : "_") + f->loop_var->name;
    }
    // A loop driving both spatial and reduction iter vars of a block would break the rule that
    // a reduction's first iteration (all reduction vars 0) comes first for each output.
    visit_stmts(fs.back()->body, [&](const Stmt& x) {
      if (x->kind != StmtKind::BlockRealize) return true;
      auto* br = as<BlockRealizeNode>(x);
      bool spatial = false, reduce = false;
      for (auto* f : fs)
        for (size_t i = 0; i < br->iter_values.size(); ++i)
          if (uses_var(br->iter_values[i], f->loop_var.get()))
            (br->block->iter_vars[i].kind == IterKind::Spatial ? spatial : reduce) = true;
      if (spatial && reduce)
        schedule_error(prim, "block '" + br->block->name + "'",
                       "cannot fuse loops that drive both spatial and reduction iter vars");
      return true;
    });
    Expr fused = make_var(name + "_fused");
    VarMap vmap;
    int64_t inner = 1;
    for (size_t i = fs.size(); i-- > 0;) {
      Expr e = inner == 1 ? fused : floordiv(fused, int_imm(inner));
      if (i > 0) e = floormod(e, int_imm(fs[i]->extent));
      vmap[fs[i]->loop_var.get()] = e;
      inner *= fs[i]->extent;
    }
    Stmt body = substitute(fs.back()->body, vmap);
    impl_->root() = replace_at(p, make_for(fused, total, body));
    impl_->normalize();
    LoopRV out = impl_->new_loop_rv(fused);
    inst.outputs.push_back(Impl::ref(out));
    impl_->record(std::move(inst));
    return out;
  });
}

void Schedule::reorder(const std::vector<LoopRV>& order) {
  transact(*impl_, [&] {
    const char* prim = "reorder";
    Instruction inst{prim, {}, {}, {}, std::nullopt};
    for (auto& l : order) inst.inputs.push_back(Impl::ref(l));
    if (order.size() < 2) {
      impl_->record(std::move(inst));
      return 0;
    }
    std::set<const ExprNode*> wanted;
    for (auto& l : order) {
      impl_->loop_path(prim, l);
      if (!wanted.insert(impl_->loop_var(prim, l).get()).second)
        schedule_error(prim, impl_->loop_desc(l), "a loop appears twice");
    }
    // Find the outermost of the loops: the one whose path contains no other of them.
    std::optional<StmtPath> top;
    for (auto& l : order) {
      StmtPath p = impl_->loop_path(prim, l);
      bool outermost = true;
      for (auto* f : p.loops()) outermost = outermost && !wanted.count(f->loop_var.get());
      if (outermost) {
        if (top) schedule_error(prim, impl_->loop_desc(l), "the loops are not in one loop nest");
        top = p;
      }
    }
    // Walk down the single-child chain from the outermost until all are found.
    std::vector<const ForNode*> chain;
    Stmt cur = top->leaf();
    size_t found = 0;
    while (true) {
      if (cur->kind != StmtKind::For)
        schedule_error(prim, "", "the loops are not nested in a single chain without branches");
      auto* f = as<ForNode>(cur);
      chain.push_back(f);
      if (wanted.count(f->loop_var.get())) ++found;
      if (found == wanted.size()) break;
      cur = f->body;
    }
    // Positions in the chain holding one of the loops get them in the requested order.
    std::vector<const ForNode*> permuted = chain;
    size_t k = 0;
    for (auto& slot : permuted) {
      if (!wanted.count(slot->loop_var.get())) continue;
      const ExprNode* v = impl_->loop_var(prim, order[k++]).get();
      for (auto* f : chain)
        if (f->loop_var.get() == v) slot = f;
    }
    Stmt body = chain.back()->body;
    for (size_t i = permuted.size(); i-- > 0;) {
      auto n = std::make_shared<ForNode>(*permuted[i]);
      n->body = body;
      body = n;
    }
    impl_->root() = replace_at(*top, body);
    impl_->record(std::move(inst));
    return 0;
  });
}

void Schedule::parallel(LoopRV loop) {
  transact(*impl_, [&] {
    set_kind(*impl_, "parallel", loop, ForKind::Parallel, "");
    impl_->record({"parallel", {Impl::ref(loop)}, {}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::vectorize(LoopRV loop) {
  transact(*impl_, [&] {
    set_kind(*impl_, "vectorize", loop, ForKind::Vectorized, "");
    impl_->record({"vectorize", {Impl::ref(loop)}, {}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::unroll(LoopRV loop) {
  transact(*impl_, [&] {
    set_kind(*impl_, "unroll", loop, ForKind::Unrolled, "");
    impl_->record({"unroll", {Impl::ref(loop)}, {}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::bind(LoopRV loop, const std::string& thread_axis) {
  transact(*impl_, [&] {
    static const std::set<std::string> axes = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                               "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                               "vthread"};
    if (!axes.count(thread_axis))
      schedule_error("bind", impl_->loop_desc(loop), "unknown thread axis '" + thread_axis + "'");
    StmtPath p = impl_->loop_path("bind", loop);
    if (as<ForNode>(p.leaf())->for_kind != ForKind::Serial)
      schedule_error("bind", impl_->loop_desc(loop), "only a serial loop can be bound");
    set_kind(*impl_, "bind", loop, ForKind::ThreadBinding, thread_axis);
    impl_->record({"bind", {Impl::ref(loop)}, {thread_axis}, {}, std::nullopt});
    return 0;
  });
}

namespace {
InstAttr to_attr(const AnnValue& v) {
  if (std::holds_alternative<int64_t>(v)) return std::get<int64_t>(v);
  return std::get<std::string>(v);
}

void annotate_loop(Schedule::Impl& impl, const char* prim, LoopRV loop, const std::string& key,
                   const std::optional<AnnValue>& value) {
  StmtPath p = impl.loop_path(prim, loop);
  Annotations ann = as<ForNode>(p.leaf())->annotations;
  if (value) ann[key] = *value;
  else ann.erase(key);
  impl.root() = replace_at(p, with_annotations(p.leaf(), ann));
}

void annotate_block(Schedule::Impl& impl, const char* prim, BlockRV block, const std::string& key,
                    const std::optional<AnnValue>& value) {
  StmtPath p = impl.block_path(prim, block);
  auto* br = as<BlockRealizeNode>(p.leaf());
  Block b = *br->block;
  if (value) b.annotations[key] = *value;
  else b.annotations.erase(key);
  impl.root() = replace_at(p, make_block_realize(br->iter_values, br->predicate, std::move(b)));
}
} // namespace

void Schedule::annotate(LoopRV loop, const std::string& key, const AnnValue& value) {
  transact(*impl_, [&] {
    annotate_loop(*impl_, "annotate", loop, key, value);
    impl_->record({"annotate", {Impl::ref(loop), std::monostate{}}, {key, to_attr(value)}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::annotate(BlockRV block, const std::string& key, const AnnValue& value) {
  transact(*impl_, [&] {
    annotate_block(*impl_, "annotate", block, key, value);
    impl_->record({"annotate", {Impl::ref(block), std::monostate{}}, {key, to_attr(value)}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::annotate(LoopRV loop, const std::string& key, ExprRV value) {
  transact(*impl_, [&] {
    annotate_loop(*impl_, "annotate", loop, key, AnnValue(impl_->value("annotate", value)));
    impl_->record({"annotate", {Impl::ref(loop), Impl::ref(value)}, {key}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::annotate(BlockRV block, const std::string& key, ExprRV value) {
  transact(*impl_, [&] {
    annotate_block(*impl_, "annotate", block, key, AnnValue(impl_->value("annotate", value)));
    impl_->record({"annotate", {Impl::ref(block), Impl::ref(value)}, {key}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::unannotate(LoopRV loop, const std::string& key) {
  transact(*impl_, [&] {
    annotate_loop(*impl_, "unannotate", loop, key, std::nullopt);
    impl_->record({"unannotate", {Impl::ref(loop)}, {key}, {}, std::nullopt});
    return 0;
  });
}

void Schedule::unannotate(BlockRV block, const std::string& key) {
  transact(*impl_, [&] {
    annotate_block(*impl_, "unannotate", block, key, std::nullopt);
    impl_->record({"unannotate", {Impl::ref(block)}, {key}, {}, std::nullopt});
    return 0;
  });
}

} // namespace mt
