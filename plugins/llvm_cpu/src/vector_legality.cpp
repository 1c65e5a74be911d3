#include "vector_legality.h"

#include <map>
#include <unordered_set>

#include "metatune/llvm_cpu/compiler.hpp"
#include "metatune/sdk/expr_equal.hpp"
#include "metatune/sdk/index_analysis.hpp"

namespace mt::llvm_cpu {

namespace P = mt::sdk::program;

namespace {

struct Access {
  P::Expr flat;
  bool is_store;
};

struct Collector {
  std::map<int64_t, std::vector<Access>> accesses;
  std::map<int64_t, const P::BufferNode*> buffers;
  std::unordered_set<int64_t> inner_vars;
  std::string blocker;

  void expr(const P::Expr& e) {
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind != P::ExprKind::Load) return;
      accesses[x->buffer->id].push_back({P::flat_index(*x->buffer, x->args), false});
      buffers[x->buffer->id] = x->buffer.get();
    });
  }

  void stmt(const P::Stmt& s) {
    if (!s || !blocker.empty()) return;
    switch (s->kind) {
    case P::StmtKind::For:
      inner_vars.insert(s->loop_var->var_id);
      stmt(s->body);
      break;
    case P::StmtKind::Seq:
      for (const auto& x : s->stmts)
        stmt(x);
      break;
    case P::StmtKind::Store:
      for (const auto& i : s->indices)
        expr(i);
      expr(s->value);
      accesses[s->buffer->id].push_back({P::flat_index(*s->buffer, s->indices), true});
      buffers[s->buffer->id] = s->buffer.get();
      break;
    case P::StmtKind::IfThenElse:
      expr(s->condition);
      stmt(s->then_case);
      stmt(s->else_case);
      break;
    case P::StmtKind::Allocate:
      blocker = "buffer '" + s->buffer->name + "' is allocated inside the loop";
      break;
    }
  }
};

} // namespace

VectorPlan plan_vector_loop(const P::StmtNode& loop) {
  const P::Expr& v = loop.loop_var;
  Collector c;
  c.stmt(loop.body);
  if (!c.blocker.empty()) return {false, c.blocker};
  for (const auto& [id, list] : c.accesses) {
    bool written = false, read = false;
    for (const auto& a : list)
      (a.is_store ? written : read) = true;
    if (!written) continue;
    const P::BufferNode& buf = *c.buffers[id];
    const P::Expr& pattern = list.front().flat;
    for (const auto& a : list)
      if (!P::expr_equal(a.flat, pattern))
        return {false, "buffer '" + buf.name + "' is accessed at different indices (" +
                           P::to_string(pattern) + " and " + P::to_string(a.flat) + ")"};
    for (int64_t inner : c.inner_vars)
      if (P::uses_var(pattern, inner))
        return {false, "buffer '" + buf.name +
                           "' is written at an index that depends on a loop "
                           "inside the vectorized loop"};
    auto coef = P::affine_coefficient(pattern, v->var_id);
    if (coef && *coef == 0 && read)
      throw CodegenError("vectorized loop '" + v->name + "' (extent " +
                         std::to_string(loop.extent) + "): buffer '" + buf.name +
                         "' is read and written at index " + P::to_string(pattern) +
                         ", which does not depend on '" + v->name +
                         "': a reduction over the vector lanes cannot be vectorized");
    if (!coef && read)
      return {false, "buffer '" + buf.name + "' is read and written at index " +
                         P::to_string(pattern) + ", not provably distinct per lane"};
  }
  return {};
}

} // namespace mt::llvm_cpu
