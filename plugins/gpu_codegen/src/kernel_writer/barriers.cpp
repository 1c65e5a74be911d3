// KernelWriter: Which shared and global accesses a statement makes, and the barriers between
// statements whose accesses conflict across threads.
#include "writer.h"

namespace mt::gpu_codegen::writer {

bool KernelWriter::tells_threads_apart(const std::vector<P::Expr>& indices) const {
  // A tensor-core operation's access is the warp's: its 32 lanes are one agent, in order,
  // so threadIdx.x need not tell them apart (every lane of the emulation writes the same).
  bool warp_op = false;
  for (const auto& i : indices)
    warp_op = warp_op || uses_any(i, tensor_nest_vars_);
  for (int d = 0; d < 3; ++d) {
    if (kernel_.dims.block[d] <= 1 || (d == 0 && warp_op)) continue;
    bool uses = false;
    for (const auto& i : indices)
      uses = uses || uses_any(i, thread_vars_by_dim_[static_cast<size_t>(d)]);
    if (!uses) return false;
  }
  return true;
}

Accesses KernelWriter::accesses(const P::Stmt& s) {
  auto it = access_cache_.find(s.get());
  if (it != access_cache_.end()) return it->second;
  Accesses a = accesses_of(
      s, [this](const P::Buffer& b) { return visible(b); },
      [this](const std::vector<P::Expr>& indices) { return tells_threads_apart(indices); },
      [this](const P::Stmt& st) { return in_registers_.count(st.get()) > 0; });
  // A cross-thread reduction's result is written by one thread for all of them.
  P::visit_stmts(s, [&](const P::Stmt& x) {
    if (x->kind == StmtKind::For && x->for_kind == P::ForKind::ThreadBinding) {
      auto r = xthread_targets_.find(x.get());
      if (r != xthread_targets_.end()) a.writes[r->second].insert(kAnyThreadKey);
    }
    return true;
  });
  access_cache_[s.get()] = a;
  return a;
}

void KernelWriter::barrier(Accesses& pending, bool uniform, const std::string& why,
                           bool fence_after) {
  if (!uniform)
    throw UnsupportedError("threads hand data to each other (" + why +
                           ") under divergent control flow, where no barrier can be placed");
  group_mma_quiesce();
  // The consumers alone: the producer warpgroup never reaches their barriers.
  line(in_consumer_ ? d_.named_barrier(kConsumerBarrier, kernel_.dims.threads_per_block())
                    : d_.barrier());
  if (fence_after) group_mma_fence();
  pending = Accesses{};
}

std::string KernelWriter::describe(const P::Stmt& s) {
  std::string t = P::to_string(s);
  size_t nl = t.find('\n');
  return nl == std::string::npos ? t : t.substr(0, nl);
}

bool KernelWriter::depends_on_thread(const P::Expr& e) const {
  bool r = false;
  P::post_order_visit(e, [&](const P::Expr& x) {
    if (x->kind == ExprKind::Var && thread_vars_.count(x->var_id)) r = true;
    if (x->kind == ExprKind::Load) r = true; // data may differ between threads
  });
  return r;
}

} // namespace mt::gpu_codegen::writer
