// KernelWriter: Warpgroup MMA (wgmma, sm_90a): the operation over shared-memory tiles, its fences,
// commit groups and waits.
#include "writer.h"

namespace mt::gpu_codegen::writer {

void KernelWriter::group_mma_fence() {
  if (!group_ops_ || !d_.has_tensor_cores()) return;
  line(d_.group_mma_fence());
  group_fenced_ = true;
}

void KernelWriter::commit_group_mmas() {
  if (!group_uncommitted_) return;
  line(d_.group_mma_commit());
  group_uncommitted_ = false;
}

void KernelWriter::group_mma_quiesce() {
  if (!group_ops_ || !d_.has_tensor_cores()) return;
  commit_group_mmas();
  line(d_.group_mma_wait(group_wait_depth_));
  // Where TMA writes every tile wgmma reads, both are the asynchronous proxy's, ordered by
  // the mbarriers: no thread's own write needs making visible to it.
  if (!tma_writes_every_operand_) line(d_.async_proxy_fence());
}

void KernelWriter::group_op(const TensorOp& op) {
  used_helpers_.insert(kGroupMma);
  const int64_t per_tile = op.cols / 2;
  // The accumulator tile's first register, a constant once the tiles' loops are unrolled.
  auto first_register = [&](const Tile& t) {
    return "(" + bare(group_tile_index(t, op.cols)) + ") * " + std::to_string(per_tile);
  };
  const std::string acc = buffer_name(op.frag.buffer);
  switch (op.kind) {
  case TensorOpKind::Fill: {
    std::string r = fresh("mt_r");
    line(d_.unroll_pragma());
    line("for (int " + r + " = 0; " + r + " < " + std::to_string(per_tile) + "; ++" + r + ") " +
         acc + "[" + first_register(op.frag) + " + " + r +
         "] = " + float_literal(op.fill, P::DType::f32()) + ";");
    group_fenced_ = false;
    break;
  }
  case TensorOpKind::Mma: {
    auto descriptor = [&](const Tile& t, bool is_a, bool* transposed) {
      GroupOperand g = group_operand(t, is_a, core_matrix_.at(t.buffer->id));
      *transposed = !g.k_major;
      return d_.group_mma_descriptor("&" + buffer_name(t.buffer) + "[" +
                                         row_major_index(t.buffer, t.base) + "]",
                                     g.lbo_bytes, g.sbo_bytes, g.swizzle128);
    };
    bool trans_a = false, trans_b = false;
    std::string da = descriptor(op.a, true, &trans_a), db = descriptor(op.b, false, &trans_b);
    if (!group_fenced_) line(d_.group_mma_fence());
    group_fenced_ = true;
    line(d_.group_mma(acc, first_register(op.frag), op.cols, da, db, trans_a, trans_b,
                      op.a.buffer->dtype));
    group_uncommitted_ = true;
    break;
  }
  case TensorOpKind::Store: {
    commit_group_mmas();
    line(d_.group_mma_wait(0) + " // the accumulator is read next");
    group_fenced_ = false;
    {
      std::string r = fresh("mt_r");
      line(d_.unroll_pragma());
      line("for (int " + r + " = 0; " + r + " < " + std::to_string(per_tile) + "; ++" + r + ") " +
           d_.register_fence(acc + "[" + first_register(op.frag) + " + " + r + "]"));
    }
    MemoryLayout l = memory_layout(op.mem);
    const std::string base =
        "&" + buffer_name(op.mem.buffer) + "[" + row_major_index(op.mem.buffer, op.mem.base) + "]";
    std::string p = fresh("mt_c"), w = fresh("mt_w"), ln = fresh("mt_l"), j = fresh("mt_j");
    std::string row = fresh("mt_row"), col = fresh("mt_col");
    line("{");
    ++indent_;
    line(d_.type_name(op.mem.buffer->dtype) + "* " + p + " = " + base + ";");
    line("const int " + w + " = (int)" + d_.thread_index(0) + " / 32, " + ln + " = (int)" +
         d_.thread_index(0) + " % 32;");
    line(d_.unroll_pragma());
    line("for (int " + j + " = 0; " + j + " < " + std::to_string(op.cols / 8) + "; ++" + j + ") {");
    ++indent_;
    line("const int " + row + " = 16 * " + w + " + " + ln + " / 4, " + col + " = 8 * " + j +
         " + (" + ln + " % 4) * 2;");
    const std::string ld = std::to_string(l.ld);
    auto at = [&](const std::string& r, const std::string& c) {
      return l.col_major ? p + "[(" + r + ") + (" + c + ") * " + ld + "]"
                         : p + "[(" + r + ") * " + ld + " + (" + c + ")]";
    };
    const std::string reg = acc + "[" + first_register(op.frag) + " + 4 * " + j + " + ";
    // A thread's two neighbouring columns as one 8-byte store where they are 8-byte aligned:
    // an f32 row-major tile starting at a multiple of 16 elements, with rows of whole 16
    // bytes (memory_tile_aligned), and an even column.
    const std::string pair0 =
        !l.col_major && memory_tile_aligned(op.mem) && op.mem.buffer->dtype == P::DType::f32()
            ? d_.f32_pair_store("&" + at(row, col), reg + "0]", reg + "1]")
            : std::string();
    if (!pair0.empty()) {
      line(pair0 + ";");
      line(d_.f32_pair_store("&" + at(row + " + 8", col), reg + "2]", reg + "3]") + ";");
    } else {
      line(at(row, col) + " = " + reg + "0];");
      line(at(row, col + " + 1") + " = " + reg + "1];");
      line(at(row + " + 8", col) + " = " + reg + "2];");
      line(at(row + " + 8", col + " + 1") + " = " + reg + "3];");
    }
    --indent_;
    line("}");
    --indent_;
    line("}");
    break;
  }
  default:
    throw UnsupportedError(op.name + ": not a warpgroup operation");
  }
}

P::Expr KernelWriter::group_tile_index(const Tile& t, int64_t cols) {
  const auto& shape = t.buffer->shape;
  P::Expr flat = P::int_imm(0);
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool rows = static_cast<int>(d) == t.row_dim, columns = static_cast<int>(d) == t.col_dim;
    const int64_t unit = rows ? kGroupRows : columns ? cols : 1;
    if (shape[d] % unit != 0)
      throw UnsupportedError("the accumulator '" + t.buffer->name + "' is not a grid of 64 x " +
                             std::to_string(cols) + " tiles");
    flat =
        flat * P::int_imm(shape[d] / unit) + (unit == 1 ? t.base[d] : t.base[d] / P::int_imm(unit));
  }
  return flat;
}

} // namespace mt::gpu_codegen::writer
