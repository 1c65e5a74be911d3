// Lowering pass 1: replaces every BlockRealize by its body over the bound iter values.
#include "core/lower/lower.h"
#include "core/support/check.h"

#include <stdexcept>

namespace mt {

namespace {

Stmt lower_realize(const BlockRealizeNode* n) {
  const Block& b = *n->block;
  VarMap vmap;
  for (size_t i = 0; i < b.iter_vars.size(); ++i)
    vmap[b.iter_vars[i].var.get()] = n->iter_values[i];

  Stmt body = substitute(lower_blocks(b.body), vmap);
  if (b.init) {
    // The init runs at the first point of the reduction domain of each spatial point.
    Expr first;
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      if (b.iter_vars[i].kind != IterKind::Reduce) continue;
      Expr is_zero = make_binary(ExprKind::EQ, n->iter_values[i], int_imm(0));
      first = first ? make_binary(ExprKind::And, first, is_zero) : is_zero;
    }
    Stmt init = substitute(lower_blocks(b.init), vmap);
    body = make_seq({first ? make_if(first, init) : init, body});
  }
  if (n->predicate) body = make_if(substitute(n->predicate, vmap), body);
  return body;
}

} // namespace

Stmt lower_blocks(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
  case StmtKind::For:
  case StmtKind::Allocate: {
    const Stmt& body = s->kind == StmtKind::For ? as<ForNode>(s)->body : as<AllocateNode>(s)->body;
    Stmt nb = lower_blocks(body);
    return nb == body ? s : with_body(s, nb);
  }
  case StmtKind::Seq: {
    std::vector<Stmt> items;
    bool changed = false;
    for (const Stmt& c : as<SeqNode>(s)->stmts) {
      items.push_back(lower_blocks(c));
      changed = changed || items.back() != c;
    }
    return changed ? make_seq(std::move(items)) : s;
  }
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(s);
    Stmt t = lower_blocks(n->then_case), e = lower_blocks(n->else_case);
    return t == n->then_case && e == n->else_case ? s : make_if(n->condition, t, e);
  }
  case StmtKind::Store:
    return s;
  case StmtKind::BlockRealize:
    return lower_realize(as<BlockRealizeNode>(s));
  }
  MT_ICHECK(false, "lower_blocks: statement kind ", static_cast<int>(s->kind),
            " is not in the list");
  return s;
}

} // namespace mt
