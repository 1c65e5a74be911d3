#include "program_walk.h"

#include <memory>

namespace mt::llvm_cpu {

namespace P = sdk::program;

const P::StmtNode* only_stmt(const P::Stmt& s) {
  const P::StmtNode* st = s.get();
  while (st && st->kind == P::StmtKind::Seq && st->stmts.size() == 1)
    st = st->stmts[0].get();
  return st;
}

P::Stmt map_stmts(const P::Stmt& s, const std::function<P::Expr(const P::Expr&)>& expr,
                  const std::function<void(const P::StmtNode&, P::StmtNode&)>& adjust) {
  if (!s) return s;
  auto n = std::make_shared<P::StmtNode>(*s);
  for (P::Expr& i : n->indices)
    i = expr(i);
  if (n->value) n->value = expr(n->value);
  if (n->condition) n->condition = expr(n->condition);
  n->body = map_stmts(n->body, expr, adjust);
  for (P::Stmt& x : n->stmts)
    x = map_stmts(x, expr, adjust);
  n->then_case = map_stmts(n->then_case, expr, adjust);
  n->else_case = map_stmts(n->else_case, expr, adjust);
  if (adjust) adjust(*s, *n);
  return n;
}

} // namespace mt::llvm_cpu
