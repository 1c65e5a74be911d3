// KernelWriter: Statements as source text: the dispatch over statement kinds, stores, and their
// lines.
#include "writer.h"

namespace mt::gpu_codegen::writer {

void KernelWriter::line(const std::string& s) {
  body_ << std::string(static_cast<size_t>(indent_) * 2, ' ') << s << "\n";
}

void KernelWriter::seq(const std::vector<P::Stmt>& items, Accesses& pending, bool uniform) {
  for (const auto& c : items) {
    Accesses a = accesses(c);
    if (conflicts(pending, a)) barrier(pending, uniform, "before `" + describe(c) + "`");
    stmt(c, pending, uniform);
  }
}

void KernelWriter::stmt(const P::Stmt& s, Accesses& pending, bool uniform) {
  if (!s) return;
  // Under a vthread loop: what does not depend on the virtual thread is written once, a
  // container of both kinds is opened once, and the rest runs in a loop over the virtual
  // threads at the innermost place it can (see vthread_loop).
  if (vt_ && !in_vloop_ && depends_on_vthread(s) && !opens_once(s)) {
    in_vloop_ = true;
    // Kept alive: the access cache is keyed by node address. Unrolled where the virtual
    // threads' arrays fit in registers (vthread_loop).
    synthetic_.push_back(P::make_for(vt_->var, vt_->extent, s,
                                     vt_->unrolled ? P::ForKind::Unrolled : P::ForKind::Serial));
    serial_loop(synthetic_.back(), pending, uniform);
    in_vloop_ = false;
    return;
  }
  switch (s->kind) {
  case StmtKind::Seq:
    seq(s->stmts, pending, uniform);
    return;
  case StmtKind::Store:
    store(s, pending);
    return;
  case StmtKind::IfThenElse: {
    bool stays = uniform && !depends_on_thread(s->condition);
    line("if (" + bare(s->condition) + ") {");
    Accesses inner = stays ? pending : Accesses{};
    ++indent_;
    stmt(s->then_case, inner, stays);
    --indent_;
    if (s->else_case) {
      line("} else {");
      Accesses other = stays ? pending : Accesses{};
      ++indent_;
      stmt(s->else_case, other, stays);
      --indent_;
      inner.merge(other);
    }
    line("}");
    if (stays)
      pending = inner;
    else
      pending.merge(accesses(s));
    return;
  }
  case StmtKind::Allocate: {
    const P::Buffer& b = s->buffer;
    if (b->scope == "shared") {
      stmt(s->body, pending, uniform);
      return;
    }
    if (is_fragment_scope(b->scope) && d_.has_tensor_cores()) {
      fragments(s, pending, uniform);
      return;
    }
    if (b->size_bytes() > 64 * 1024)
      throw UnsupportedError("a per-thread array of " + std::to_string(b->size_bytes()) +
                             " bytes ('" + b->name + "', scope " + b->scope + ")");
    check_private_to_threads(s);
    // Allocated under a vthread loop but opened once: one copy per virtual thread.
    int64_t copies = 1;
    if (vt_ && !in_vloop_ && vt_->inner_allocs.count(b->id)) {
      copies = vt_->extent;
      expanded_[b->id] = b->num_elements();
    }
    line("{");
    ++indent_;
    line(type_of(b->dtype) + " " + buffer_name(b) + "[" +
         std::to_string(b->num_elements() * copies) + "];");
    stmt(s->body, pending, uniform);
    --indent_;
    line("}");
    return;
  }
  case StmtKind::For:
    if (s->annotations.count(P::kTensorIntrinsicAnnotation)) {
      tensor_op(s, pending, uniform);
      return;
    }
    if (auto tma = tma_copies_.find(s.get()); tma != tma_copies_.end()) {
      tma_copy(s, tma->second, pending);
      return;
    }
    // The producer warpgroup fetches the prologue's tiles.
    if (in_consumer_ && s.get() == producer_->prologue) return;
    if (s->annotations.count(P::kSoftwarePipelineAsyncCopy) && !in_async_) {
      in_async_ = true;
      stmt_for(s, pending, uniform);
      in_async_ = false;
      return;
    }
    stmt_for(s, pending, uniform);
    return;
  }
}

void KernelWriter::stmt_for(const P::Stmt& s, Accesses& pending, bool uniform) {
  if (s->for_kind == P::ForKind::ThreadBinding && s->thread_tag.rfind("vthread", 0) == 0 && !vt_ &&
      s->extent > 1) {
    vthread_loop(s, pending, uniform);
    return;
  }
  if (s->for_kind == P::ForKind::ThreadBinding && s->thread_tag.rfind("vthread", 0) != 0)
    thread_loop(s, pending, uniform);
  else
    serial_loop(s, pending, uniform);
}

void KernelWriter::store(const P::Stmt& s, Accesses& pending) {
  if (active_xr_) {
    if (s == active_xr_->update) {
      auto u = reduction_update(s);
      line(active_xr_->red + " = " +
           combine(active_xr_->combiner, s->buffer->dtype, active_xr_->red, expr(u->operand)) +
           ";");
      line(active_xr_->flags + " |= 2;");
      return;
    }
    for (const auto& init : active_xr_->inits)
      if (s == init) {
        line(active_xr_->flags + " |= 1;");
        return;
      }
  }
  check_runs_once_per_element(s);
  if (const std::string src = half_copy_source(s); !src.empty())
    line(buffer_name(s->buffer) + "[" + flat_index(s->buffer, s->indices) + "] = " + src + ";");
  else
    line(write_element(s->buffer, flat_index(s->buffer, s->indices), bare(s->value)) + ";");
  pending.merge(accesses(s));
}

std::string KernelWriter::half_copy_source(const P::Stmt& s) {
  const P::Expr& v = s->value;
  if (v->kind != ExprKind::Load || !is_half(s->buffer->dtype) ||
      v->buffer->dtype != s->buffer->dtype || !d_.assigns_half(s->buffer->dtype) ||
      !held_in_own_type(s->buffer) || !held_in_own_type(v->buffer) ||
      storage_type(s->buffer) != storage_type(v->buffer))
    return {};
  return buffer_name(v->buffer) + "[" + flat_index(v->buffer, v->args) + "]";
}

} // namespace mt::gpu_codegen::writer
