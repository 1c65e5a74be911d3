#include "core_to_program.h"

#include <stdexcept>
#include <unordered_map>

namespace mt::llvm_cpu::test {

namespace P = mt::sdk::program;

namespace {

class Converter {
public:
  P::DType dtype(DType t) { return P::DType{static_cast<P::DTypeKind>(t.kind), t.bits}; }

  P::Buffer buffer(const Buffer& b) {
    auto it = buffers_.find(b.get());
    if (it != buffers_.end()) return it->second;
    auto nb = P::make_buffer(b->name, dtype(b->dtype), b->shape, b->scope, next_id_++);
    buffers_[b.get()] = nb;
    return nb;
  }

  P::Expr expr(const Expr& e) {
    if (!e) return {};
    auto n = std::make_shared<P::ExprNode>();
    n->kind = static_cast<P::ExprKind>(e->kind);
    n->dtype = dtype(e->dtype);
    n->int_value = e->int_value;
    n->float_value = e->float_value;
    n->fn = static_cast<P::MathFn>(e->fn);
    if (e->kind == ExprKind::Var) {
      auto it = vars_.find(e.get());
      if (it == vars_.end()) it = vars_.emplace(e.get(), next_id_++).first;
      n->var_id = it->second;
      n->name = e->name;
    }
    if (e->kind == ExprKind::Load) n->buffer = buffer(e->buffer);
    for (const auto& a : e->args)
      n->args.push_back(expr(a));
    return P::Expr(n);
  }

  P::Stmt stmt(const Stmt& s) {
    if (!s) return nullptr;
    auto n = std::make_shared<P::StmtNode>();
    switch (s->kind) {
    case StmtKind::For: {
      const auto* f = as<ForNode>(s);
      n->kind = P::StmtKind::For;
      n->loop_var = expr(f->loop_var);
      n->extent = f->extent;
      n->for_kind = static_cast<P::ForKind>(f->for_kind);
      n->thread_tag = f->thread_tag;
      for (const auto& [k, v] : f->annotations)
        n->annotations[k] = v;
      n->body = stmt(f->body);
      break;
    }
    case StmtKind::Seq:
      n->kind = P::StmtKind::Seq;
      for (const auto& x : as<SeqNode>(s)->stmts)
        n->stmts.push_back(stmt(x));
      break;
    case StmtKind::Store: {
      const auto* st = as<StoreNode>(s);
      n->kind = P::StmtKind::Store;
      n->buffer = buffer(st->buffer);
      for (const auto& i : st->indices)
        n->indices.push_back(expr(i));
      n->value = expr(st->value);
      break;
    }
    case StmtKind::IfThenElse: {
      const auto* in = as<IfThenElseNode>(s);
      n->kind = P::StmtKind::IfThenElse;
      n->condition = expr(in->condition);
      n->then_case = stmt(in->then_case);
      n->else_case = stmt(in->else_case);
      break;
    }
    case StmtKind::Allocate: {
      const auto* a = as<AllocateNode>(s);
      n->kind = P::StmtKind::Allocate;
      n->buffer = buffer(a->buffer);
      n->body = stmt(a->body);
      break;
    }
    case StmtKind::BlockRealize:
      throw std::invalid_argument("core_to_program: the function is not lowered (has a block)");
    }
    return n;
  }

private:
  std::unordered_map<const ExprNode*, int64_t> vars_;
  std::unordered_map<const BufferNode*, P::Buffer> buffers_;
  int64_t next_id_ = 1;
};

} // namespace

P::Program core_to_program(const Function& f) {
  if (!f.lowered) throw std::invalid_argument("core_to_program: '" + f.name + "' is not lowered");
  Converter c;
  P::Program p;
  p.name = f.name;
  for (const auto& b : f.params)
    p.params.push_back(c.buffer(b));
  p.body = c.stmt(f.body);
  // Intermediates that lowering left without an Allocate get storage for the whole call, as
  // the interpreter gives them (the plugin does the same).
  return P::with_free_buffers_allocated(std::move(p));
}

} // namespace mt::llvm_cpu::test
