// KernelWriter: The producer warpgroup (warp specialisation): one warpgroup issues the TMA copies,
// the others wait for tiles and multiply (producer_warpgroup.h plans it).
#include "writer.h"

namespace mt::gpu_codegen::writer {

void KernelWriter::find_producer() {
  bool asked = false;
  for (const TensorOp& op : tensor_ops_)
    asked = asked || (op.kind == TensorOpKind::Mma && op.producer);
  if (!asked || !d_.has_tma()) return;
  const int64_t* b = kernel_.dims.block;
  if (tma_copies_.empty() || !tma_writes_every_operand_) {
    producer_why_ = "not every operand tile is a TMA copy";
    return;
  }
  if (b[0] != kWarpgroupThreads || b[2] != 1 ||
      (b[1] + 1) * kWarpgroupThreads > kMaxSpecialisedThreads) {
    producer_why_ = "the block is not warpgroups along threadIdx.y with room for one more";
    return;
  }
  std::string why;
  auto plan = plan_producer(
      kernel_.body,
      [&](const P::StmtNode* n) -> const TmaCopy* {
        auto it = tma_copies_.find(n);
        return it == tma_copies_.end() ? nullptr : &it->second;
      },
      &why);
  if (plan && plan->stages + plan->spare != tma_slots_) why = "the slots are not the stages'";
  if (!plan || !why.empty()) {
    producer_why_ = why;
    return;
  }
  producer_ = plan;
  empty_bar_ = fresh("mt_tma_empty");
  used_helpers_.insert(kTmaProducer);
}

void KernelWriter::warp_specialised(Accesses& pending) {
  const int64_t consumers = kernel_.dims.block[1];
  const bool give = gives_registers();
  line("if (" + d_.thread_index(1) + " == " + std::to_string(consumers) + ") { // producer");
  ++indent_;
  if (give) line(d_.set_max_registers(false, kProducerRegisters));
  line("if (" + d_.thread_index(0) + " == 0) {");
  ++indent_;
  in_producer_ = true;
  producer_stmt(kernel_.body);
  in_producer_ = false;
  --indent_;
  line("}");
  --indent_;
  line("} else { // consumers");
  ++indent_;
  if (give) {
    // What the producer gave back, shared among the consumers, in steps of 8.
    const int64_t regs = (kRegisterFile - kWarpgroupThreads * kProducerRegisters) /
                         (consumers * kWarpgroupThreads) / 8 * 8;
    line(d_.set_max_registers(true, std::min<int64_t>(regs, kMaxThreadRegisters)));
  }
  in_consumer_ = true;
  stmt(kernel_.body, pending, true);
  in_consumer_ = false;
  --indent_;
  line("}");
}

void KernelWriter::producer_stmt(const P::Stmt& s) {
  if (!s || !contains_tma(s)) return;
  if (auto tma = tma_copies_.find(s.get()); tma != tma_copies_.end()) {
    Accesses none;
    tma_copy(s, tma->second, none);
    return;
  }
  switch (s->kind) {
  case StmtKind::Seq:
    for (const auto& c : s->stmts)
      producer_stmt(c);
    return;
  case StmtKind::Allocate:
    producer_stmt(s->body);
    return;
  case StmtKind::IfThenElse:
    line("if (" + bare(s->condition) + ") {");
    ++indent_;
    producer_stmt(s->then_case);
    --indent_;
    if (s->else_case) {
      line("} else {");
      ++indent_;
      producer_stmt(s->else_case);
      --indent_;
    }
    line("}");
    return;
  case StmtKind::For:
    producer_loop(s);
    return;
  default:
    throw UnsupportedError("the producer warpgroup reached a statement the plan excludes");
  }
}

bool KernelWriter::producer_reads(const P::Stmt& s, int64_t var) const {
  if (!s || !contains_tma(s)) return false;
  if (tma_copies_.count(s.get())) return uses_var_anywhere(s, var);
  if (s->kind == StmtKind::IfThenElse && P::uses_var(s->condition, var)) return true;
  for (const auto& c : s->stmts)
    if (producer_reads(c, var)) return true;
  return producer_reads(s->then_case, var) || producer_reads(s->else_case, var) ||
         producer_reads(s->body, var);
}

void KernelWriter::producer_loop(const P::Stmt& s) {
  const std::string v = var_name(s->loop_var);
  scope_vars_.insert(s->loop_var->var_id);
  line("{");
  ++indent_;
  bool is_block = false;
  int dim = 0;
  const bool bound =
      s->for_kind == P::ForKind::ThreadBinding && parse_thread_tag(s->thread_tag, &is_block, &dim);
  const bool looped = !bound && s->extent > 1;
  // NVRTC warns of a variable never read: the consumers' thread indices mostly are not here.
  // (The pipelined loop's variable numbers the tiles of the wait written below.)
  const bool used = s.get() == producer_->pipeline || producer_reads(s->body, s->loop_var->var_id);
  bool guard = false;
  if (bound && is_block) {
    const int64_t launched = kernel_.dims.grid[dim];
    // The consumers of a block past the loop's end skip it: so must its producer.
    guard = s->extent < launched;
    if (used || guard)
      line("const " + idx_ + " " + v + " = " +
           (launched == 1 ? std::string("0") : "(" + idx_ + ")" + d_.block_index(dim)) + ";");
    if (guard) {
      line("if (" + v + " < " + std::to_string(s->extent) + ") {");
      ++indent_;
    }
  } else if (!looped) {
    if (used) line("const " + idx_ + " " + v + " = 0;");
  } else {
    line("for (" + idx_ + " " + v + " = 0; " + v + " < " + std::to_string(s->extent) + "; ++" + v +
         ") {");
    ++indent_;
  }
  if (s.get() == producer_->pipeline) {
    // Iteration k fetches tile k + S - 1 into its slot (software_pipeline.h): the consumers
    // handed that slot back after the tile `slots` before it (the wait passes at once on a
    // slot's first use, whose earlier phase counts as complete).
    const int64_t ahead = producer_->stages - 1;
    const std::string tile = "(" + v + " + " + std::to_string(ahead) + ")";
    const std::string slots = std::to_string(tma_slots_);
    line("if (" + v + " < " + std::to_string(s->extent - ahead) + ") " +
         d_.tma_producer_wait("&" + empty_bar_ + "[" + tile + " % " + slots + "]",
                              "(unsigned)(((" + tile + " / " + slots + ") % 2) ^ 1)") +
         ";");
  }
  producer_stmt(s->body);
  if (guard || looped) {
    --indent_;
    line("}");
  }
  --indent_;
  line("}");
}

void KernelWriter::consumer_body(const std::vector<P::Stmt>& items, Accesses& pending,
                                 const std::string& var) {
  const std::string slots = std::to_string(tma_slots_);
  line(d_.tma_wait("&" + tma_bar_ + "[" + var + " % " + slots + "]",
                   "(unsigned)((" + var + " / " + slots + ") % 2)") +
       ";");
  // The consumers read nothing in shared memory but the tiles the mbarriers order.
  pending = Accesses{};
  group_fenced_ = false;
  if (group_ops_ && d_.has_tensor_cores()) accumulator_fences();
  group_mma_fence();
  seq(std::vector<P::Stmt>(items.begin() + 1, items.end()), pending, true);
  commit_group_mmas();
  const int64_t spare = producer_->spare;
  line(d_.group_mma_wait(spare));
  // One thread a warpgroup: a wgmma group is the warpgroup's, complete for all of its threads
  // once the wait returns in one (CUTLASS's consumer release signals likewise), and one
  // arrival costs an atomic where 128 would cost 128.
  const std::string done = spare ? "(" + var + " - " + std::to_string(spare) + ")" : var;
  const std::string first = d_.thread_index(0) + " == 0";
  line("if (" + (spare ? var + " >= " + std::to_string(spare) + " && " : std::string()) + first +
       ") " + d_.tma_release("&" + empty_bar_ + "[" + done + " % " + slots + "]") + ";");
}

} // namespace mt::gpu_codegen::writer
