// KernelWriter: Virtual threads: the vthread loop unrolled or expanded into per-thread registers.
#include "writer.h"

namespace mt::gpu_codegen::writer {

void KernelWriter::vthread_loop(const P::Stmt& s, Accesses& pending, bool uniform) {
  vt_ = VThread{s->loop_var, s->extent, {}, false};
  int64_t words = 0; // 32-bit registers the per-thread arrays take, all virtual threads
  P::visit_stmts(s->body, [&](const P::Stmt& x) {
    // Shared arrays are the block's, at kernel scope, covering every virtual thread.
    if (x->kind == StmtKind::Allocate && x->buffer->scope != "shared") {
      vt_->inner_allocs.insert(x->buffer->id);
      words += x->buffer->num_elements() * std::max<int64_t>(1, x->buffer->dtype.bits / 32);
    }
    return true;
  });
  // The loops over the virtual threads are unrolled, as TVM injects virtual threads by
  // copying the statements, where their arrays fit in half the 255 registers a thread may
  // have: indexed by constants they stay in registers. As loops, nvcc kept a 64-float
  // accumulator in local memory: 16 of its loads and 24 stores among 512 FMAs of the 4096^3
  // f32 matmul's inner loop, none once unrolled. Larger arrays live in local memory either
  // way, and unrolled they spilled far more (586 loads among 2048 FMAs).
  vt_->unrolled = words * s->extent <= kVThreadRegisterWords;
  scope_vars_.insert(s->loop_var->var_id);
  if (!injectable(s->body)) {
    vt_.reset();
    vdepends_.clear();
    serial_loop(s, pending, uniform); // correct, only slower
    return;
  }
  stmt(s->body, pending, uniform);
  vt_.reset();
  vdepends_.clear();
  for (auto it = expanded_.begin(); it != expanded_.end();)
    it = expanded_.erase(it);
}

bool KernelWriter::injectable(const P::Stmt& body) {
  std::unordered_set<int64_t> v{vt_->var->var_id};
  bool ok = true;
  P::visit_stmts(body, [&](const P::Stmt& x) {
    if (x->kind != StmtKind::Store) return ok;
    if (!depends_on_vthread(x)) {
      if (reads_buffer(x->value, x->buffer->id)) ok = false;
      return ok;
    }
    if (vt_->inner_allocs.count(x->buffer->id)) return ok;
    bool indexed = false;
    for (const auto& i : x->indices)
      indexed = indexed || uses_any(i, v);
    if (!indexed) ok = false;
    return ok;
  });
  return ok;
}

bool KernelWriter::depends_on_vthread(const P::Stmt& s) {
  auto it = vdepends_.find(s.get());
  if (it != vdepends_.end()) return it->second;
  bool d = false;
  auto expr_uses = [&](const P::Expr& e) {
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind == ExprKind::Var && x->var_id == vt_->var->var_id) d = true;
      if (x->kind == ExprKind::Load && vt_->inner_allocs.count(x->buffer->id)) d = true;
    });
  };
  P::visit_stmts(s, [&](const P::Stmt& x) {
    if (x->kind == StmtKind::Store) {
      if (vt_->inner_allocs.count(x->buffer->id)) d = true;
      for (const auto& i : x->indices)
        expr_uses(i);
      expr_uses(x->value);
    } else if (x->kind == StmtKind::IfThenElse) {
      expr_uses(x->condition);
    }
    return !d;
  });
  vdepends_[s.get()] = d;
  return d;
}

bool KernelWriter::opens_once(const P::Stmt& s) {
  if (s->kind == StmtKind::Store) return false;
  if (s->kind == StmtKind::IfThenElse) return false;
  if (s->kind == StmtKind::For && s->for_kind == P::ForKind::ThreadBinding &&
      s->thread_tag.rfind("vthread", 0) == 0)
    return false;
  bool independent = false;
  P::visit_stmts(s, [&](const P::Stmt& x) {
    if (x->kind == StmtKind::Store && !depends_on_vthread(x)) independent = true;
    return !independent;
  });
  return independent;
}

} // namespace mt::gpu_codegen::writer
