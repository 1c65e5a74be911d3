// KernelWriter: Tensor-core operations (WMMA, mma.sync): the nests found as one operation, their
// fragments, and the fences an accumulator needs.
#include "writer.h"

namespace mt::gpu_codegen::writer {

void KernelWriter::accumulator_fences() {
  for (const auto& [id, info] : frag_info_) {
    if (info.unit != TensorUnit::Warpgroup || info.role != FragmentRole::Accumulator) continue;
    for (const TensorOp& op : tensor_ops_) {
      if (op.kind != TensorOpKind::Mma || op.frag.buffer->id != id) continue;
      const std::string r = fresh("mt_r");
      line(d_.unroll_pragma());
      line("for (int " + r + " = 0; " + r + " < " + std::to_string(info.count * info.cols / 2) +
           "; ++" + r + ") " + d_.register_fence(buffer_name(op.frag.buffer) + "[" + r + "]"));
      break;
    }
  }
}

void KernelWriter::find_tensor_ops() {
  std::vector<P::Stmt> loops;
  std::unordered_set<const P::StmtNode*> inside;
  P::visit_stmts(kernel_.body, [&](const P::Stmt& x) {
    if (x->kind == StmtKind::For && x->annotations.count(P::kTensorIntrinsicAnnotation)) {
      loops.push_back(x);
      P::visit_stmts(x, [&](const P::Stmt& y) {
        inside.insert(y.get());
        return true;
      });
      return false;
    }
    return true;
  });
  for (const auto& l : loops) {
    tensor_ops_.push_back(match_tensor_op(l));
    P::visit_stmts(l, [&](const P::Stmt& y) {
      if (y->kind == StmtKind::For) tensor_nest_vars_.insert(y->loop_var->var_id);
      return true;
    });
  }
  frag_info_ = fragment_infos(tensor_ops_);
  for (size_t i = 0; i < loops.size(); ++i)
    op_of_loop_[loops[i].get()] = i;
  // A fragment is opaque to the threads that hold it: only the operations touch it.
  auto loads_fragment = [](const P::Expr& e) {
    bool found = false;
    if (e)
      P::post_order_visit(e, [&](const P::Expr& x) {
        if (x->kind == ExprKind::Load && is_fragment_scope(x->buffer->scope)) found = true;
      });
    return found;
  };
  P::visit_stmts(kernel_.body, [&](const P::Stmt& x) {
    bool touches = loads_fragment(x->condition) || loads_fragment(x->value);
    for (const auto& i : x->indices)
      touches = touches || loads_fragment(i);
    if (x->kind == StmtKind::Store && is_fragment_scope(x->buffer->scope)) touches = true;
    if (touches && !inside.count(x.get()))
      throw UnsupportedError("`" + describe(x) +
                             "` touches a tensor-core fragment outside the fragment operations");
    return true;
  });
  if (tensor_ops_.empty()) return;
  for (const TensorOp& op : tensor_ops_)
    group_ops_ = group_ops_ || op.unit == TensorUnit::Warpgroup;
  const int64_t lanes = group_ops_ ? kWarpgroupThreads : 32;
  for (const TensorOp& op : tensor_ops_)
    if ((op.unit == TensorUnit::Warpgroup) != group_ops_)
      throw UnsupportedError("a kernel with both warp (wmma) and warpgroup (wgmma) operations");
  if (kernel_.dims.block[0] != lanes)
    throw UnsupportedError(std::string(group_ops_ ? "warpgroup operations need one warpgroup "
                                                    "along threadIdx.x (128 threads), not "
                                                  : "tensor-core operations need one warp "
                                                    "along threadIdx.x (32 threads), not ") +
                           std::to_string(kernel_.dims.block[0]));
  core_matrix_ = core_matrix_operands(tensor_ops_);
  if (d_.has_tensor_cores())
    for (const auto& [id, layout] : core_matrix_)
      fragment_memory_.insert(id);
  for (const TensorOp& op : tensor_ops_) {
    if (!op.mem.buffer) continue;
    const P::Buffer& m = op.mem.buffer;
    if (!global_ids_.count(m->id) && m->scope != "shared")
      throw UnsupportedError("a tensor-core fragment loaded from or stored to '" + m->name +
                             "' (scope " + m->scope + "), not device or shared memory");
    if (!memory_tile_aligned(op.mem))
      throw UnsupportedError("a tensor-core tile of '" + m->name +
                             "' that is not aligned to 16 elements");
    if (d_.has_tensor_cores() && m->scope == "shared") fragment_memory_.insert(m->id);
  }
}

void KernelWriter::fragments(const P::Stmt& alloc, Accesses& pending, bool uniform) {
  const P::Buffer& b = alloc->buffer;
  auto info = frag_info_.find(b->id);
  if (info == frag_info_.end())
    throw UnsupportedError("the fragment '" + b->name + "' is not used by any operation");
  if (vt_) throw UnsupportedError("tensor-core fragments under a vthread loop");
  line("{");
  ++indent_;
  if (info->second.unit == TensorUnit::Warpgroup)
    line(d_.group_accumulator_array(buffer_name(b), info->second.count * info->second.cols / 2));
  else
    line(d_.fragment_array(info->second.role, b->dtype, info->second.col_major, buffer_name(b),
                           info->second.count));
  stmt(alloc->body, pending, uniform);
  --indent_;
  line("}");
}

void KernelWriter::tensor_op(const P::Stmt& loop, Accesses& pending, bool uniform) {
  const TensorOp& op = tensor_ops_.at(op_of_loop_.at(loop.get()));
  // The warp's 32 lanes execute the operation together, with the same operands.
  if (!uniform || active_tags_.count("threadIdx.x") || vt_ || active_xr_)
    throw UnsupportedError(op.name + " under thread-dependent control flow, inside a loop "
                                     "bound to threadIdx.x, a vthread or a cross-thread reduction: "
                                     "a warp must execute it together");
  if (!d_.has_tensor_cores()) {
    in_tensor_op_ = true;
    serial_loop(loop, pending, uniform);
    in_tensor_op_ = false;
    return;
  }
  used_helpers_.insert(kTensorCores);
  used_helpers_.insert(kF16);
  if (op.unit == TensorUnit::Warpgroup) {
    group_op(op);
    pending.merge(accesses(loop));
    return;
  }
  auto frag = [&](const Tile& t) {
    return buffer_name(t.buffer) + "[" + bare(fragment_index(t)) + "]";
  };
  auto pointer = [&](const Tile& t) {
    return "&" + buffer_name(t.buffer) + "[" + row_major_index(t.buffer, t.base) + "]";
  };
  switch (op.kind) {
  case TensorOpKind::Fill:
    line(d_.fill_fragment(frag(op.frag), float_literal(op.fill, P::DType::f32())));
    break;
  case TensorOpKind::LoadA:
  case TensorOpKind::LoadB:
    line(d_.load_fragment(frag(op.frag), pointer(op.mem), op.frag.buffer->dtype,
                          memory_layout(op.mem).ld));
    break;
  case TensorOpKind::Mma:
    line(d_.mma(frag(op.frag), frag(op.a), frag(op.b)));
    break;
  case TensorOpKind::Store: {
    MemoryLayout l = memory_layout(op.mem);
    line(d_.store_fragment(pointer(op.mem), frag(op.frag), l.ld, l.col_major));
    break;
  }
  }
  pending.merge(accesses(loop));
}

} // namespace mt::gpu_codegen::writer
