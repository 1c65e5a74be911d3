#include "core/lower/lower.h"

#include <functional>
#include <stdexcept>
#include <unordered_set>

#include "core/ir/arith.h"
#include "core/lower/software_pipeline.h"
#include "core/lower/storage_align.h"

namespace mt {

// After simplification, guards such as the init condition of a reduction over a single value
// become constants; the branch they select replaces them.
Stmt fold_constant_branches(const Stmt& body) {
  return transform_stmts(body, [](const Stmt& s) -> Stmt {
    if (s->kind != StmtKind::IfThenElse) return s;
    auto* n = as<IfThenElseNode>(s);
    int64_t v;
    if (!is_const_int(n->condition, &v)) return s;
    if (v != 0) return n->then_case;
    return n->else_case ? n->else_case : make_seq({});
  });
}

namespace {

// Every buffer the body touches needs storage: a parameter or an intermediate.
void check_buffers_declared(const Function& f) {
  std::unordered_set<const BufferNode*> declared;
  for (const Buffer& b : f.params)
    declared.insert(b.get());
  for (const Buffer& b : f.buffers)
    declared.insert(b.get());
  auto check = [&](const Buffer& b, const char* access) {
    if (!declared.count(b.get()))
      throw std::invalid_argument("lower(" + f.name + "): " + access + " buffer " + b->name +
                                  ", which is neither a parameter nor an intermediate buffer");
  };
  auto check_expr = [&](const Expr& e) {
    post_order_visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load) check(x->buffer, "reads");
    });
  };
  std::function<void(const Stmt&)> visit = [&](const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case StmtKind::Store: {
      auto* n = as<StoreNode>(s);
      check(n->buffer, "writes");
      for (const Expr& i : n->indices)
        check_expr(i);
      check_expr(n->value);
      return;
    }
    case StmtKind::IfThenElse:
      check_expr(as<IfThenElseNode>(s)->condition);
      break;
    case StmtKind::Allocate:
      declared.insert(as<AllocateNode>(s)->buffer.get());
      break;
    default:
      break;
    }
    for (const Stmt& c : children(s))
      visit(c);
  };
  visit(f.body);
}

} // namespace

Function lower(const Function& f, const LowerOptions& options) {
  if (f.lowered) return f;
  if (!f.body) throw std::invalid_argument("lower(" + f.name + "): function has no body");
  Function out;
  out.name = f.name;
  out.params = f.params;
  const StorageAligns aligns = collect_storage_aligns(f.body);
  Stmt body = lower_blocks(f.body);
  {
    Function blockless = f;
    blockless.body = body;
    check_buffers_declared(blockless);
  }
  body = place_allocations(body, f.buffers);
  body = compact_buffers(body, aligns);
  body = software_pipeline(body);
  body = simplify(body);
  out.body = fold_constant_branches(body);
  if (options.auto_unroll && out.body && !auto_unroll_disabled_by_environment())
    out.body = auto_unroll(out.body);
  if (options.partition_loops && out.body) out.body = partition_loops(out.body);
  if (!out.body) out.body = make_seq({});
  out.lowered = true;
  return out;
}

} // namespace mt
