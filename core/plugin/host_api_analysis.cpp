// The analysis part of the host API table: what a rule needs to know about a block (iteration
// kinds and extents, buffer accesses, annotations) and a loop (extent, kind, annotations).
// Every node handed out is pinned by the schedule handle (mt_schedule_s::pin_current).
#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"
#include "core/schedule/analysis.h"

namespace mt::plugin_detail {

namespace {

const Schedule& sched(const mt_schedule* h) {
  return *require(h, "schedule")->sch;
}

// Drops the blocks and loops found in an earlier version of the function (after pin_current).
void forget_lookups_if_changed(const mt_schedule* h) {
  const StmtNode* body = sched(h).func().body.get();
  if (h->lookups_body == body) return;
  h->realizes.clear();
  h->loops.clear();
  h->lookups_body = body;
}

// The realization of a block in the current (pinned) function.
const BlockRealizeNode* realize_of(const mt_schedule* h, mt_block_rv b) {
  const Schedule& s = sched(h);
  h->pin_current();
  forget_lookups_if_changed(h);
  if (auto it = h->realizes.find(b.id); it != h->realizes.end()) return it->second;
  std::string name = s.name_of(BlockRV{b.id});
  std::optional<StmtPath> path = find_block(s.func().body, name);
  if (!path) throw ApiError(MT_ERROR_NOT_FOUND, "block '" + name + "' is not in the function");
  const auto* r = as<BlockRealizeNode>(path->leaf());
  h->realizes.emplace(b.id, r);
  return r;
}

const ForNode& loop_of(const mt_schedule* h, mt_loop_rv l) {
  const Schedule& s = sched(h);
  h->pin_current();
  forget_lookups_if_changed(h);
  if (auto it = h->loops.find(l.id); it != h->loops.end()) return *it->second;
  const ForNode& f = s.get(LoopRV{l.id});
  h->loops.emplace(l.id, &f);
  return f;
}

template <typename T> void check_out_struct(const T* out) {
  require(out, "out");
  if (out->struct_size < sizeof(T))
    throw ApiError(MT_ERROR_INVALID_ARGUMENT, "out->struct_size is " +
                                                  std::to_string(out->struct_size) +
                                                  "; set it to sizeof the struct before the call");
}

// Index tuples of every load (reads) or store (writes) of `buf` in the block.
std::vector<std::vector<Expr>> accesses(const Block& block, const BufferNode* buf, bool writes) {
  std::vector<std::vector<Expr>> out;
  if (!writes) {
    for (const Expr& load : block_loads_of(block, buf))
      out.push_back(load->args);
    return out;
  }
  auto collect = [&](const Stmt& s) {
    visit_stmts(s, [&](const Stmt& x) {
      if (x->kind == StmtKind::Store && as<StoreNode>(x)->buffer.get() == buf)
        out.push_back(as<StoreNode>(x)->indices);
      return true;
    });
  };
  if (block.init) collect(block.init);
  collect(block.body);
  return out;
}

void fill_access(const mt_schedule* h, const Block& block, const std::vector<Buffer>& buffers,
                 size_t i, bool writes, mt_buffer_access* out) {
  check_out_struct(out);
  if (i >= buffers.size())
    throw ApiError(MT_ERROR_OUT_OF_RANGE,
                   std::string(writes ? "write" : "read") + " buffer " + std::to_string(i) +
                       " of " + std::to_string(buffers.size()) + " in block '" + block.name + "'");
  const Buffer& buf = buffers[i];
  std::vector<const mt_expr*> flat;
  size_t n = 0;
  for (const auto& tuple : accesses(block, buf.get(), writes)) {
    for (const Expr& e : tuple)
      flat.push_back(handle(e.get()));
    ++n;
  }
  h->expr_arrays.push_back(std::move(flat));
  out->buffer = handle(buf.get());
  out->ndim = buf->shape.size();
  out->num_accesses = n;
  out->indices = h->expr_arrays.back().data();
}

// ---- blocks ----

mt_status block_num_iter_vars(const mt_schedule* h, mt_block_rv b, size_t* out) {
  return guard("block_num_iter_vars", [&] {
    require(out, "out");
    *out = realize_of(h, b)->block->iter_vars.size();
  });
}

mt_status block_iter_var(const mt_schedule* h, mt_block_rv b, size_t i, mt_iter_var_info* out) {
  return guard("block_iter_var", [&] {
    check_out_struct(out);
    const BlockRealizeNode* r = realize_of(h, b);
    const auto& ivs = r->block->iter_vars;
    if (i >= ivs.size())
      throw ApiError(MT_ERROR_OUT_OF_RANGE, "iter var " + std::to_string(i) + " of " +
                                                std::to_string(ivs.size()) + " in block '" +
                                                r->block->name + "'");
    out->kind = ivs[i].kind == IterKind::Reduce ? MT_ITER_REDUCE : MT_ITER_SPATIAL;
    out->extent = ivs[i].extent;
    out->var = handle(ivs[i].var.get());
    out->value = i < r->iter_values.size() ? handle(r->iter_values[i].get()) : nullptr;
  });
}

mt_status block_num_reads(const mt_schedule* h, mt_block_rv b, size_t* out) {
  return guard("block_num_reads", [&] {
    require(out, "out");
    *out = block_reads(*realize_of(h, b)->block).size();
  });
}

mt_status block_read(const mt_schedule* h, mt_block_rv b, size_t i, mt_buffer_access* out) {
  return guard("block_read", [&] {
    const Block& block = *realize_of(h, b)->block;
    fill_access(h, block, block_reads(block), i, false, out);
  });
}

mt_status block_num_writes(const mt_schedule* h, mt_block_rv b, size_t* out) {
  return guard("block_num_writes", [&] {
    require(out, "out");
    *out = block_writes(*realize_of(h, b)->block).size();
  });
}

mt_status block_write(const mt_schedule* h, mt_block_rv b, size_t i, mt_buffer_access* out) {
  return guard("block_write", [&] {
    const Block& block = *realize_of(h, b)->block;
    fill_access(h, block, block_writes(block), i, true, out);
  });
}

mt_status block_is_reduction(const mt_schedule* h, mt_block_rv b, int32_t* out) {
  return guard("block_is_reduction", [&] {
    require(out, "out");
    *out = is_reduction_block(*realize_of(h, b)->block) ? 1 : 0;
  });
}

mt_status block_num_annotations(const mt_schedule* h, mt_block_rv b, size_t* out) {
  return guard("block_num_annotations", [&] {
    require(out, "out");
    *out = realize_of(h, b)->block->annotations.size();
  });
}

mt_status block_annotation(const mt_schedule* h, mt_block_rv b, size_t i, mt_str* key,
                           mt_ann_value* value) {
  return guard("block_annotation",
               [&] { fill_annotation(realize_of(h, b)->block->annotations, i, key, value); });
}

mt_status block_body(const mt_schedule* h, mt_block_rv b, const mt_stmt** body,
                     const mt_stmt** init) {
  return guard("block_body", [&] {
    const Block& block = *realize_of(h, b)->block;
    if (body) *body = handle(block.body.get());
    if (init) *init = handle(block.init.get());
  });
}

// ---- loops ----

mt_status loop_extent(const mt_schedule* h, mt_loop_rv l, int64_t* out) {
  return guard("loop_extent", [&] {
    require(out, "out");
    *out = loop_of(h, l).extent;
  });
}

mt_status loop_kind(const mt_schedule* h, mt_loop_rv l, mt_for_kind* out) {
  return guard("loop_kind", [&] {
    require(out, "out");
    *out = static_cast<mt_for_kind>(loop_of(h, l).for_kind);
  });
}

mt_status loop_thread_tag(const mt_schedule* h, mt_loop_rv l, mt_str* out) {
  return guard("loop_thread_tag", [&] {
    require(out, "out");
    *out = str(loop_of(h, l).thread_tag);
  });
}

mt_status loop_var(const mt_schedule* h, mt_loop_rv l, const mt_expr** out) {
  return guard("loop_var", [&] {
    require(out, "out");
    *out = handle(loop_of(h, l).loop_var.get());
  });
}

mt_status loop_num_annotations(const mt_schedule* h, mt_loop_rv l, size_t* out) {
  return guard("loop_num_annotations", [&] {
    require(out, "out");
    *out = loop_of(h, l).annotations.size();
  });
}

mt_status loop_annotation(const mt_schedule* h, mt_loop_rv l, size_t i, mt_str* key,
                          mt_ann_value* value) {
  return guard("loop_annotation",
               [&] { fill_annotation(loop_of(h, l).annotations, i, key, value); });
}

} // namespace

void fill_analysis_api(mt_host_api& t) {
  t.block_num_iter_vars = block_num_iter_vars;
  t.block_iter_var = block_iter_var;
  t.block_num_reads = block_num_reads;
  t.block_read = block_read;
  t.block_num_writes = block_num_writes;
  t.block_write = block_write;
  t.block_is_reduction = block_is_reduction;
  t.block_num_annotations = block_num_annotations;
  t.block_annotation = block_annotation;
  t.block_body = block_body;
  t.loop_extent = loop_extent;
  t.loop_kind = loop_kind;
  t.loop_thread_tag = loop_thread_tag;
  t.loop_var = loop_var;
  t.loop_num_annotations = loop_num_annotations;
  t.loop_annotation = loop_annotation;
}

} // namespace mt::plugin_detail
