// KernelWriter: Loops bound to threads: the guards of thread extents under the launch's, and the
// checks that a per-thread array and a store stay right when every thread runs them.
#include "writer.h"

namespace mt::gpu_codegen::writer {

bool KernelWriter::reduces_across_threads_inside(const P::Stmt& serial) {
  const P::Stmt& t = serial->body;
  if (!t || t->kind != StmtKind::For || t->for_kind != P::ForKind::ThreadBinding) return false;
  bool is_block = false;
  int dim = 0;
  if (!parse_thread_tag(t->thread_tag, &is_block, &dim) || is_block ||
      active_tags_.count(t->thread_tag) || kernel_.dims.block[dim] <= 1)
    return false;
  std::unordered_set<int64_t> outside = scope_vars_;
  std::optional<CrossThreadReduction> xr;
  try {
    xr = find_shared_target_stores(t, false, private_, outside);
  } catch (const UnsupportedError&) {
    return false; // said again, with the reason, when the loop is written as it is
  }
  if (!xr) return false;
  std::unordered_set<int64_t> serial_var{serial->loop_var->var_id};
  for (const auto& i : xr->update->indices)
    if (uses_any(i, serial_var)) return false;
  return !xr->init_value || !uses_any(xr->init_value, serial_var);
}

void KernelWriter::thread_loop(const P::Stmt& s, Accesses& pending, bool uniform,
                               const P::Stmt& around) {
  bool is_block = false;
  int dim = 0;
  parse_thread_tag(s->thread_tag, &is_block, &dim);
  int64_t launched = is_block ? kernel_.dims.grid[dim] : kernel_.dims.block[dim];
  bool outermost = !active_tags_.count(s->thread_tag);
  if (!outermost) {
    // A loop nested under one of the same tag shares its index: right only when it covers
    // no more than the outer one and does not depend on the outer one's variable (the
    // cooperative fetch under the compute's threadIdx.x loop).
    auto [outer_var, outer_extent] = active_tags_.at(s->thread_tag);
    if (s->extent > outer_extent || uses_var_anywhere(s->body, outer_var))
      throw UnsupportedError("a loop bound to '" + s->thread_tag +
                             "' nested under another (extent " + std::to_string(s->extent) +
                             " under " + std::to_string(outer_extent) +
                             ") that uses the outer one's variable or outgrows it");
  }
  std::optional<CrossThreadReduction> xr;
  if (outermost && launched > 1) xr = find_shared_target_stores(s, is_block, private_, scope_vars_);

  std::string v = var_name(s->loop_var);
  line("{");
  ++indent_;
  // A dimension launched once has index 0: said as a constant, so that what it indexes
  // folds (a warpgroup's accumulator registers must be indexed by constants).
  line("const " + idx_ + " " + v + " = " +
       (launched == 1
            ? std::string("0")
            : "(" + idx_ + ")" + (is_block ? d_.block_index(dim) : d_.thread_index(dim))) +
       ";");
  if (!is_block) thread_vars_.insert(s->loop_var->var_id);
  scope_vars_.insert(s->loop_var->var_id);
  bool inserted =
      active_tags_.emplace(s->thread_tag, std::make_pair(s->loop_var->var_id, s->extent)).second;
  if (xr) {
    in_registers_.insert(xr->update.get());
    for (const auto& init : xr->inits)
      in_registers_.insert(init.get());
    access_cache_.clear();
    if (active_xr_)
      throw UnsupportedError("a reduction across '" + s->thread_tag +
                             "' inside a reduction across other threads");
    if (!uniform)
      throw UnsupportedError("a reduction across " + s->thread_tag +
                             " under divergent control flow");
    xr->red = fresh("mt_red");
    xr->flags = fresh("mt_redflags");
    const P::Buffer& target = buffer_of(xr->update);
    line(type_of(target->dtype) + " " + xr->red + " = " + identity(xr->combiner, target->dtype) +
         ";");
    line("int " + xr->flags + " = 0;");
    active_xr_ = &*xr;
  }
  bool guard = s->extent < launched;
  bool inner_uniform = uniform && !(guard && !is_block);
  if (guard) {
    line("if (" + v + " < " + std::to_string(s->extent) + ") {");
    ++indent_;
  }
  Accesses inner = guard && !inner_uniform ? Accesses{} : pending;
  if (around) {
    std::string u = var_name(around->loop_var);
    scope_vars_.insert(around->loop_var->var_id);
    if (around->for_kind == P::ForKind::Unrolled ||
        around->annotations.count(P::kUnrollHintAnnotation))
      line(d_.unroll_pragma());
    line("for (" + idx_ + " " + u + " = 0; " + u + " < " + std::to_string(around->extent) + "; ++" +
         u + ") {");
    ++indent_;
    // Each thread only adds to its own partial here: nothing is handed between threads.
    Accesses none;
    stmt(s->body, none, false);
    --indent_;
    line("}");
  } else {
    stmt(s->body, inner, inner_uniform);
  }
  if (guard) {
    --indent_;
    line("}");
  }
  if (xr) {
    active_xr_ = nullptr;
    reduction_epilogue(*xr, v, dim);
    xthread_targets_[s.get()] = xr->buffer_id;
    access_cache_.clear();
    inner = Accesses{};
    inner.writes[xr->buffer_id].insert(kAnyThreadKey);
  }
  if (inserted) active_tags_.erase(s->thread_tag);
  --indent_;
  line("}");
  if (guard && !inner_uniform)
    pending.merge(accesses(s));
  else
    pending = inner;
}

void KernelWriter::check_private_to_threads(const P::Stmt& alloc) {
  static const char* tags[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  const int64_t id = alloc->buffer->id;
  for (int d = 0; d < 3; ++d) {
    if (kernel_.dims.block[d] <= 1 || active_tags_.count(tags[d])) continue;
    // Under a loop of that dimension, is the array indexed by it?
    bool handoff = false;
    std::function<void(const P::Stmt&, bool)> walk = [&](const P::Stmt& x, bool under) {
      if (!x || handoff) return;
      if (x->kind == StmtKind::For) {
        bool bound = x->for_kind == P::ForKind::ThreadBinding && x->thread_tag == tags[d];
        walk(x->body, under || bound);
        return;
      }
      auto indexed_by_thread = [&](const std::vector<P::Expr>& indices) {
        for (const auto& i : indices)
          if (uses_any(i, thread_vars_by_dim_[static_cast<size_t>(d)])) return true;
        return false;
      };
      auto loads = [&](const P::Expr& e) {
        if (e)
          P::post_order_visit(e, [&](const P::Expr& l) {
            if (l->kind == ExprKind::Load && l->buffer->id == id && under &&
                indexed_by_thread(l->args))
              handoff = true;
          });
      };
      if (x->kind == StmtKind::Store) {
        if (x->buffer->id == id && under && indexed_by_thread(x->indices)) handoff = true;
        for (const auto& i : x->indices)
          loads(i);
        loads(x->value);
      } else if (x->kind == StmtKind::IfThenElse) {
        loads(x->condition);
      }
      switch (x->kind) {
      case StmtKind::Seq:
        for (const auto& c : x->stmts)
          walk(c, under);
        break;
      case StmtKind::IfThenElse:
        walk(x->then_case, under);
        walk(x->else_case, under);
        break;
      case StmtKind::Allocate:
        walk(x->body, under);
        break;
      default:
        break;
      }
    };
    walk(alloc->body, false);
    if (handoff)
      throw UnsupportedError("the per-thread array '" + alloc->buffer->name +
                             "' is allocated outside the loops bound to " + tags[d] +
                             " and indexed by them: its threads would share it");
  }
}

void KernelWriter::check_runs_once_per_element(const P::Stmt& s) {
  // A warp-wide operation emulated: every lane computes the whole tile into its own copy of
  // the fragment, and the lanes store the same values.
  if (in_tensor_op_) return;
  static const char* tags[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (int d = 0; d < 3; ++d) {
    if (kernel_.dims.block[d] <= 1 || active_tags_.count(tags[d])) continue;
    bool reads_private = false;
    P::post_order_visit(s->value, [&](const P::Expr& x) {
      if (x->kind == ExprKind::Load && private_.count(x->buffer->id)) reads_private = true;
    });
    if (reads_buffer(s->value, s->buffer->id) || reads_private)
      throw UnsupportedError("`" + describe(s) + "` is outside every loop bound to " + tags[d] +
                             ": each of its " + std::to_string(kernel_.dims.block[d]) +
                             " threads would run it");
  }
}

} // namespace mt::gpu_codegen::writer
