// KernelWriter: TMA copies (sm_90): the tensor maps, the slots' mbarriers, and the copy issued by
// one thread (or emulated by the block where the dialect has no TMA).
#include "writer.h"

namespace mt::gpu_codegen::writer {

void KernelWriter::find_tma() {
  std::set<int64_t> wanted;
  for (const TensorOp& op : tensor_ops_)
    if (op.kind == TensorOpKind::Mma && op.tma)
      for (const Tile* t : {&op.a, &op.b})
        if (core_matrix_layout(t->buffer) == CoreMatrixLayout::Swizzle128)
          wanted.insert(t->buffer->id);
  if (wanted.empty()) return;
  std::map<int64_t, std::vector<std::pair<const P::StmtNode*, TmaCopy>>> copies;
  std::set<int64_t> refused;
  bool nested = false;
  int pipelines = 0;
  std::function<void(const P::Stmt&, int)> walk = [&](const P::Stmt& x, int serial) {
    if (!x) return;
    if (x->kind == StmtKind::For) {
      const bool pipeline = x->annotations.count(P::kSoftwarePipelineStages) ||
                            x->annotations.count(P::kSoftwarePipelinePrologue);
      if (pipeline && serial > 0) nested = true;
      if (x->annotations.count(P::kSoftwarePipelineStages)) ++pipelines;
      if (x->annotations.count(P::kSoftwarePipelineAsyncCopy)) {
        P::Stmt store;
        P::visit_stmts(x, [&](const P::Stmt& y) {
          if (!store && y->kind == StmtKind::Store) store = y;
          return !store;
        });
        if (store && wanted.count(store->buffer->id)) {
          std::string why;
          if (auto c = match_tma_copy(x, &why))
            copies[store->buffer->id].emplace_back(x.get(), std::move(*c));
          else
            refused.insert(store->buffer->id);
        }
        return;
      }
      const bool counts = !pipeline && x->for_kind != P::ForKind::ThreadBinding && x->extent > 1;
      walk(x->body, serial + (counts ? 1 : 0));
      return;
    }
    for (const auto& c : x->stmts)
      walk(c, serial);
    walk(x->then_case, serial);
    walk(x->else_case, serial);
    if (x->kind == StmtKind::Allocate) walk(x->body, serial);
  };
  walk(kernel_.body, 0);
  // One pipeline a kernel: the barriers' phases and arrivals are its own.
  if (nested || pipelines != 1) return;
  int64_t slots = 0;
  for (const auto& [id, list] : copies) {
    // One fetch in the prologue, one in the pipelined loop.
    if (refused.count(id) || list.size() != 2) return;
    for (const auto& [node, c] : list) {
      if (slots && slots != c.shared->shape[0]) return;
      slots = c.shared->shape[0];
    }
  }
  std::map<int64_t, TensorMap> maps;
  for (const auto& [id, list] : copies)
    for (const auto& [node, c] : list) {
      TensorMap m = tensor_map(c);
      auto [it, fresh_map] = maps.emplace(c.global->id, m);
      if (!fresh_map && (it->second.spec.box != m.spec.box)) return;
    }
  for (auto& [id, list] : copies)
    for (auto& [node, c] : list)
      tma_copies_.emplace(node, std::move(c));
  tma_slots_ = slots;
  tma_arrivals_ = static_cast<int64_t>(copies.size());
  tma_writes_every_operand_ = d_.has_tma();
  for (const auto& [id, layout] : core_matrix_)
    tma_writes_every_operand_ = tma_writes_every_operand_ && copies.count(id) > 0;
  tma_bar_ = fresh("mt_tma_bar");
  if (copies.empty()) return;
  if (d_.has_tma()) {
    tensor_maps_ = std::move(maps);
    used_helpers_.insert(kTma);
    for (const auto& [id, map] : tensor_maps_)
      used_helpers_.insert(kTmaOfRank + std::to_string(map.spec.dims.size()));
  }
}

bool KernelWriter::contains_tma(const P::Stmt& s) const {
  bool found = false;
  P::visit_stmts(s, [&](const P::Stmt& x) {
    found = found || tma_copies_.count(x.get()) > 0;
    return !found;
  });
  return found;
}

KernelWriter::TensorMap KernelWriter::tensor_map(const TmaCopy& c) {
  TensorMap m;
  m.name = "mt_tmap_" + buffer_name(c.global);
  const P::BufferNode& g = *c.global;
  for (size_t i = 0; i < plan_.buffers.size(); ++i)
    if (plan_.buffers[i]->id == g.id) m.spec.buffer = i;
  m.spec.bf16 = g.dtype.kind == P::DTypeKind::BFloat;
  const size_t rank = g.shape.size();
  uint64_t stride = static_cast<uint64_t>(g.dtype.bits / 8);
  for (size_t k = 0; k < rank; ++k) {
    const size_t d = rank - 1 - k; // innermost first
    m.spec.dims.push_back(static_cast<uint64_t>(g.shape[d]));
    if (k) m.spec.strides_bytes.push_back(stride);
    stride *= static_cast<uint64_t>(g.shape[d]);
    m.spec.box.push_back(k == 0                             ? uint32_t{kTmaBoxCols}
                         : static_cast<int>(d) == c.row_dim ? static_cast<uint32_t>(c.rows)
                                                            : 1u);
  }
  return m;
}

void KernelWriter::init_tma_barriers() {
  if (tma_copies_.empty() || !d_.has_tma()) return;
  const std::string leader = leader_condition();
  if (!leader.empty()) line("if (" + leader + ") {");
  ++indent_;
  for (int64_t i = 0; i < tma_slots_; ++i)
    line(d_.tma_barrier_init("&" + tma_bar_ + "[" + std::to_string(i) + "]", tma_arrivals_) + ";");
  // Each consumer warpgroup hands each slot back (warp specialisation).
  if (producer_)
    for (int64_t i = 0; i < tma_slots_; ++i)
      line(d_.tma_barrier_init("&" + empty_bar_ + "[" + std::to_string(i) + "]",
                               kernel_.dims.block[1]) +
           ";");
  line(d_.tma_barrier_init_fence() + ";");
  --indent_;
  if (!leader.empty()) line("}");
  line(d_.barrier());
}

std::string KernelWriter::leader_condition() const {
  std::string out;
  for (int d = 0; d < 3; ++d)
    if (kernel_.dims.block[d] > 1)
      out += (out.empty() ? "" : " && ") + d_.thread_index(d) + " == 0";
  return out;
}

void KernelWriter::tma_copy(const P::Stmt& loop, const TmaCopy& c, Accesses& pending) {
  const bool hw = d_.has_tma();
  line(std::string("{ // ") + (hw ? "TMA" : "TMA emulated") + ": " + buffer_name(c.global) +
       " -> " + buffer_name(c.shared) + ", " + std::to_string(c.boxes.size()) + " box(es) of " +
       std::to_string(c.rows) + " x " + std::to_string(kTmaBoxCols));
  ++indent_;
  const std::string leader = leader_condition();
  // The producer warpgroup runs its copies in one thread already.
  const bool guarded = hw && !leader.empty() && !in_producer_;
  if (guarded) {
    line("if (" + leader + ") {");
    ++indent_;
  }
  for (size_t j = 0; j < c.boxes.size(); ++j) {
    line("{");
    ++indent_;
    // The nest's variables at the box's first element: its indices are then the box's.
    for (const auto& v : c.vars)
      line("const " + idx_ + " " + var_name(v) + " = " +
           std::to_string(c.boxes[j].first.at(v->var_id)) + ";");
    if (hw)
      issue_tma_box(c, j == 0);
    else
      emulate_tma_box(c);
    --indent_;
    line("}");
  }
  if (guarded) {
    --indent_;
    line("}");
  }
  --indent_;
  line("}");
  pending.merge(accesses(loop));
}

void KernelWriter::issue_tma_box(const TmaCopy& c, bool expect) {
  const std::vector<P::Expr>& gi = c.store->value->args;
  const std::string bar = "&" + tma_bar_ + "[" + bare(c.store->indices[0]) + "]";
  if (expect) line(d_.tma_expect(bar, c.bytes()) + ";");
  std::vector<std::string> coords;
  for (size_t k = gi.size(); k-- > 0;) // innermost first
    coords.push_back("(int)(" + bare(gi[k]) + ")");
  line(d_.tma_load("&" + buffer_name(c.shared) + "[" + flat_index(c.shared, c.store->indices) + "]",
                   tensor_maps_.at(c.global->id).name, coords, bar) +
       ";");
}

void KernelWriter::emulate_tma_box(const TmaCopy& c) {
  const std::vector<P::Expr>& gi = c.store->value->args;
  const size_t rank = gi.size();
  std::string tid;
  int64_t below = 1;
  for (int d = 0; d < 3; ++d) {
    if (kernel_.dims.block[d] <= 1) continue;
    tid += (tid.empty() ? "" : " + ") + std::string("(") + idx_ + ")" + d_.thread_index(d) +
           (below > 1 ? " * " + std::to_string(below) : "");
    below *= kernel_.dims.block[d];
  }
  if (tid.empty()) tid = "0";
  const std::string e = fresh("mt_e"), r = fresh("mt_r"), col = fresh("mt_c");
  const std::string cols = std::to_string(kTmaBoxCols);
  line("for (" + idx_ + " " + e + " = " + tid + "; " + e + " < " +
       std::to_string(c.rows * kTmaBoxCols) + "; " + e +
       " += " + std::to_string(kernel_.dims.threads_per_block()) + ") {");
  ++indent_;
  line("const " + idx_ + " " + r + " = " + e + " / " + cols + ", " + col + " = " + e + " % " +
       cols + ";");
  std::string g;
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    const std::string step = d == rank - 1                      ? " + " + col
                             : static_cast<int>(d) == c.row_dim ? " + " + r
                                                                : std::string();
    g = "(" + expr(gi[d]) + step + ")" + (stride > 1 ? " * " + std::to_string(stride) : "") +
        (g.empty() ? "" : " + ") + g;
    stride *= c.global->shape[d];
  }
  const std::string s = "(" + flat_index(c.shared, c.store->indices) + ") + " + r + " * " + cols +
                        " + (((" + col + " / 8) ^ (" + r + " % 8)) * 8) + " + col + " % 8";
  line(write_element(c.shared, s, read_element(c.global, g)) + ";");
  --indent_;
  line("}");
}

} // namespace mt::gpu_codegen::writer
