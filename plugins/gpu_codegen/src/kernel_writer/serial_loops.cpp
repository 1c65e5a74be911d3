// KernelWriter: Serial loops: plain, unrolled, vectorised copies, and software-pipelined loops (one
// barrier an iteration, asynchronous copies where the dialect has them).
#include "writer.h"

namespace mt::gpu_codegen::writer {

bool KernelWriter::vector_copy(const P::Stmt& loop, Accesses& pending) {
  auto vc = match_vector_copy(loop, [this](const P::Buffer& b, const std::vector<P::Expr>& i) {
    auto layout = core_matrix_layout(b);
    return layout ? core_matrix_offset(*b, i, *layout) : P::flat_index(*b, i);
  });
  if (!vc || active_xr_ || in_tensor_op_) return false;
  const P::Buffer& dst = vc->store->buffer;
  const P::Buffer& src = vc->store->value->buffer;
  for (const P::Buffer& b : {dst, src}) {
    if (!visible(b) || expanded_.count(b->id)) return false;
    // f16 and bf16 held in float (type_of, not held_in_own_type): not a plain copy.
    if (is_half(b->dtype) && !held_in_own_type(b)) return false;
  }
  std::string to = "&" + buffer_name(dst) + "[" + flat_index(dst, vc->store->indices) + "]";
  std::string from = "&" + buffer_name(src) + "[" + flat_index(src, vc->store->value->args) + "]";
  // A pipelined fetch from device memory into a shared tile: issued, not waited for (the
  // pipelined loop waits for it before its barrier).
  std::string move;
  if (in_async_ && dst->scope == "shared" && global_ids_.count(src->id)) {
    move = d_.async_copy(vc->bytes, to, from);
    if (!move.empty()) used_helpers_.insert(kAsyncCopyOf + std::to_string(vc->bytes));
  }
  if (move.empty())
    move = d_.vector_move(vc->bytes, to, dst->scope == "shared", from, src->scope == "shared");
  if (move.empty()) return false;
  check_runs_once_per_element(vc->store);
  line("{");
  ++indent_;
  line("const " + idx_ + " " + var_name(loop->loop_var) + " = 0; // " + std::to_string(vc->lanes) +
       " lanes in one move");
  line(move + ";");
  --indent_;
  line("}");
  pending.merge(accesses(loop));
  return true;
}

void KernelWriter::serial_loop(const P::Stmt& s, Accesses& pending, bool uniform) {
  if (s->for_kind == P::ForKind::Vectorized && vector_copy(s, pending)) return;
  if (uniform && reduces_across_threads_inside(s)) {
    thread_loop(s->body, pending, uniform, s);
    return;
  }
  std::string v = var_name(s->loop_var);
  scope_vars_.insert(s->loop_var->var_id);
  const bool prologue = s->annotations.count(P::kSoftwarePipelinePrologue) > 0;
  const int64_t stages = pipeline_stages(s);
  if (s->extent == 1) {
    line("{");
    ++indent_;
    line("const " + idx_ + " " + v + " = 0;");
    stmt(s->body, pending, uniform);
    if (prologue) async_line(d_.async_commit());
    --indent_;
    line("}");
    return;
  }
  if (s->for_kind == P::ForKind::Unrolled || s->annotations.count(P::kUnrollHintAnnotation))
    line(d_.unroll_pragma());
  line("for (" + idx_ + " " + v + " = 0; " + v + " < " + std::to_string(s->extent) + "; ++" + v +
       ") {");
  ++indent_;
  Accesses body = accesses(s->body);
  // The next iteration overwrites what this one read, or reads what it wrote: a barrier at
  // the top of every iteration (at the top rather than the bottom: PoCL 3.1 fails an
  // assertion on a barrier right before the back edge of an unrolled nest). A pipelined
  // loop always has one: its fetch ahead refills the slot the previous iteration read.
  bool carried = conflicts(body, body) || stages > 1;
  if (carried && !uniform)
    throw UnsupportedError("the iterations of `" + v +
                           "` hand data to each other's threads "
                           "under divergent control flow, where no barrier can be placed");
  Accesses inner = pending;
  // Spare slots (software_pipeline.h): the warpgroup products of the last `spare` iterations
  // (one commit group each) may still be reading their slots at this loop's barriers.
  const int64_t outer_depth = group_wait_depth_;
  if (stages > 1 && group_ops_) group_wait_depth_ = spare_slots(s);
  if (stages > 1) {
    pipelined_body(s->body, stages, inner, uniform, v);
  } else {
    if (carried) barrier(inner, uniform, "between iterations of `" + v + "`");
    stmt(s->body, inner, uniform);
  }
  // The products issued in an iteration form one group, which the next iteration's barrier
  // waits for (or leaves running, with spare slots).
  if (carried) commit_group_mmas();
  group_wait_depth_ = outer_depth;
  if (prologue) async_line(d_.async_commit());
  --indent_;
  line("}");
  if (carried) {
    pending = body;
  } else {
    pending.merge(inner);
    pending.merge(body);
  }
}

int64_t KernelWriter::spare_slots(const P::Stmt& loop) {
  auto it = loop->annotations.find(P::kSoftwarePipelineSpareSlots);
  if (it == loop->annotations.end()) return 0;
  const auto* n = std::get_if<int64_t>(&it->second);
  return n ? *n : 0;
}

int64_t KernelWriter::pipeline_stages(const P::Stmt& loop) {
  auto it = loop->annotations.find(P::kSoftwarePipelineStages);
  if (it == loop->annotations.end()) return 0;
  const auto* n = std::get_if<int64_t>(&it->second);
  return n ? *n : 0;
}

void KernelWriter::async_line(const std::string& text) {
  if (text.empty()) return;
  used_helpers_.insert(kAsyncCopies);
  line(text + ";");
}

void KernelWriter::pipelined_body(const P::Stmt& body, int64_t stages, Accesses& pending,
                                  bool uniform, const std::string& var) {
  std::vector<P::Stmt> items =
      body->kind == StmtKind::Seq ? body->stmts : std::vector<P::Stmt>{body};
  if (in_consumer_) {
    consumer_body(items, pending, var);
    return;
  }
  async_line(d_.async_wait(stages - 2));
  if (!tma_copies_.empty() && d_.has_tma()) {
    // This iteration's tile is the (var / slots)-th its slot's barrier counts.
    const std::string slots = std::to_string(tma_slots_);
    line(d_.tma_wait("&" + tma_bar_ + "[" + var + " % " + slots + "]",
                     "(unsigned)((" + var + " / " + slots + ") % 2)") +
         ";");
  }
  barrier(pending, uniform, "between iterations of pipelined `" + var + "`", false);
  group_fenced_ = false;
  Accesses fetch;
  stmt(items[0], fetch, uniform);
  async_line(d_.async_commit());
  if (!tma_copies_.empty() && group_ops_ && d_.has_tensor_cores()) accumulator_fences();
  group_mma_fence();
  seq(std::vector<P::Stmt>(items.begin() + 1, items.end()), pending, uniform);
}

} // namespace mt::gpu_codegen::writer
