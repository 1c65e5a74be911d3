// The schedule part of the host API table: handles, lookup, sampling and primitives, each a
// thin guarded call of the mt::Schedule method of the same name.
#include "core/lower/lower.h"
#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"

namespace mt::plugin_detail {

namespace {

// Every call that may change the schedule goes through here, which drops a pending list.
Schedule& sched(mt_schedule* h) {
  require(h, "schedule")->pending.reset();
  return *h->sch;
}
const Schedule& sched(const mt_schedule* h) {
  return *require(h, "schedule")->sch;
}
BlockRV block(mt_block_rv b) {
  return BlockRV{b.id};
}
LoopRV loop(mt_loop_rv l) {
  return LoopRV{l.id};
}
mt_block_rv c_block(BlockRV b) {
  return mt_block_rv{b.id};
}
mt_loop_rv c_loop(LoopRV l) {
  return mt_loop_rv{l.id};
}
std::string string(mt_str s) {
  return std::string(view(s));
}

AnnValue ann_value(const mt_ann_value& v) {
  switch (v.kind) {
  case MT_ANN_INT:
    return v.int_value;
  case MT_ANN_STRING:
    return string(v.str_value);
  default:
    throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                   "unknown annotation value kind " + std::to_string(v.kind));
  }
}

std::vector<LoopRV> loops_of(const mt_loop_rv* loops, size_t n) {
  if (n && !loops) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "loop array is NULL");
  std::vector<LoopRV> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(loop(loops[i]));
  return out;
}

// ---- handles ----

void schedule_retain(mt_schedule* h) {
  if (h) h->refs.fetch_add(1, std::memory_order_relaxed);
}

void schedule_release(mt_schedule* h) {
  if (h && h->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete h;
}

mt_status schedule_copy(const mt_schedule* h, mt_schedule** out) {
  return guard("schedule_copy", [&] {
    require(out, "out");
    std::shared_ptr<Schedule> copy = sched(h).copy();
    *out = new mt_schedule_s(std::move(copy));
  });
}

mt_status schedule_list_push(mt_schedule_list* list, mt_schedule* h) {
  return guard("schedule_list_push", [&] {
    require(list, "list");
    require(h, "schedule");
    schedule_retain(h);
    list->items.push_back(h);
  });
}

mt_status schedule_get_program(const mt_schedule* h, mt_program** out) {
  return guard("schedule_get_program", [&] {
    require(out, "out");
    *out = make_program_handle(sched(h).func());
  });
}

mt_status schedule_lower(const mt_schedule* h, mt_program** out) {
  return guard("schedule_lower", [&] {
    require(out, "out");
    *out = make_program_handle(lower(sched(h).func()));
  });
}

mt_status schedule_get_trace(const mt_schedule* h, mt_trace** out) {
  return guard("schedule_get_trace", [&] {
    require(out, "out");
    *out = make_trace_handle(sched(h).trace());
  });
}

// ---- lookup ----

enum ListKind { kLoops = 1, kChildBlocks, kProducers, kConsumers };

// Runs a list lookup once for the (query, fill) pair of calls of the array convention.
template <typename C, typename Get>
void list_call(mt_schedule* h, ListKind kind, int32_t arg, C* out, size_t capacity, size_t* count,
               Get get) {
  require(h, "schedule");
  std::vector<int32_t> ids;
  if (h->pending && h->pending->kind == kind && h->pending->arg == arg) {
    ids = std::move(h->pending->ids);
    h->pending.reset();
  } else {
    for (const auto& rv : get())
      ids.push_back(rv.id); // get() drops any other pending list
  }
  if (!out || capacity < ids.size()) h->pending = mt_schedule_s::PendingList{kind, arg, ids};
  fill_array(ids, out, capacity, count, [](int32_t id) { return C{id}; });
}

mt_status get_block(mt_schedule* h, mt_str name, mt_block_rv* out) {
  return guard("get_block", [&] {
    require(out, "out");
    *out = c_block(sched(h).get_block(string(name)));
  });
}

mt_status get_loops(mt_schedule* h, mt_block_rv b, mt_loop_rv* out, size_t capacity,
                    size_t* count) {
  return guard("get_loops", [&] {
    list_call(h, kLoops, b.id, out, capacity, count, [&] { return sched(h).get_loops(block(b)); });
  });
}

mt_status get_child_blocks(mt_schedule* h, mt_loop_rv l, mt_block_rv* out, size_t capacity,
                           size_t* count) {
  return guard("get_child_blocks", [&] {
    list_call(h, kChildBlocks, l.id, out, capacity, count,
              [&] { return sched(h).get_child_blocks(loop(l)); });
  });
}

mt_status get_producers(mt_schedule* h, mt_block_rv b, mt_block_rv* out, size_t capacity,
                        size_t* count) {
  return guard("get_producers", [&] {
    list_call(h, kProducers, b.id, out, capacity, count,
              [&] { return sched(h).get_producers(block(b)); });
  });
}

mt_status get_consumers(mt_schedule* h, mt_block_rv b, mt_block_rv* out, size_t capacity,
                        size_t* count) {
  return guard("get_consumers", [&] {
    list_call(h, kConsumers, b.id, out, capacity, count,
              [&] { return sched(h).get_consumers(block(b)); });
  });
}

// ---- sampling ----

mt_status sample_perfect_tile(mt_schedule* h, mt_loop_rv l, int32_t n, int32_t max_innermost_factor,
                              const int64_t* decision, mt_expr_rv* out) {
  return guard("sample_perfect_tile", [&] {
    require(out, "out");
    if (n <= 0) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "n must be positive");
    std::optional<std::vector<int64_t>> d;
    if (decision) d.emplace(decision, decision + n);
    std::vector<ExprRV> rvs = sched(h).sample_perfect_tile(loop(l), n, max_innermost_factor, d);
    for (size_t i = 0; i < rvs.size(); ++i)
      out[i] = mt_expr_rv{rvs[i].id};
  });
}

mt_status sample_categorical(mt_schedule* h, const int64_t* candidates, const double* probs,
                             size_t n, const int64_t* decision, mt_expr_rv* out) {
  return guard("sample_categorical", [&] {
    require(out, "out");
    if (n == 0 || !candidates || !probs)
      throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                     "needs at least one candidate with its probability");
    std::optional<int64_t> d;
    if (decision) d = *decision;
    ExprRV rv = sched(h).sample_categorical(std::vector<int64_t>(candidates, candidates + n),
                                            std::vector<double>(probs, probs + n), d);
    *out = mt_expr_rv{rv.id};
  });
}

mt_status sample_compute_location(mt_schedule* h, mt_block_rv b, const int64_t* decision,
                                  mt_loop_rv* out) {
  return guard("sample_compute_location", [&] {
    require(out, "out");
    std::optional<int64_t> d;
    if (decision) d = *decision;
    *out = c_loop(sched(h).sample_compute_location(block(b), d));
  });
}

// ---- loop transformations ----

mt_status split(mt_schedule* h, mt_loop_rv l, const mt_factor* factors, size_t n, mt_loop_rv* out) {
  return guard("split", [&] {
    require(out, "out");
    if (n == 0 || !factors) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "no factors");
    std::vector<Factor> fs;
    for (size_t i = 0; i < n; ++i) {
      if (factors[i].is_rv)
        fs.emplace_back(ExprRV{factors[i].rv.id});
      else
        fs.emplace_back(factors[i].constant);
    }
    std::vector<LoopRV> loops = sched(h).split(loop(l), fs);
    for (size_t i = 0; i < loops.size() && i < n; ++i)
      out[i] = c_loop(loops[i]);
  });
}

mt_status fuse(mt_schedule* h, const mt_loop_rv* loops, size_t n, mt_loop_rv* out) {
  return guard("fuse", [&] {
    require(out, "out");
    *out = c_loop(sched(h).fuse(loops_of(loops, n)));
  });
}

mt_status reorder(mt_schedule* h, const mt_loop_rv* order, size_t n) {
  return guard("reorder", [&] { sched(h).reorder(loops_of(order, n)); });
}

mt_status parallel(mt_schedule* h, mt_loop_rv l) {
  return guard("parallel", [&] { sched(h).parallel(loop(l)); });
}

mt_status vectorize(mt_schedule* h, mt_loop_rv l) {
  return guard("vectorize", [&] { sched(h).vectorize(loop(l)); });
}

mt_status unroll(mt_schedule* h, mt_loop_rv l) {
  return guard("unroll", [&] { sched(h).unroll(loop(l)); });
}

mt_status bind(mt_schedule* h, mt_loop_rv l, mt_str thread_axis) {
  return guard("bind", [&] { sched(h).bind(loop(l), string(thread_axis)); });
}

mt_status annotate_loop(mt_schedule* h, mt_loop_rv l, mt_str key, mt_ann_value value) {
  return guard("annotate_loop", [&] { sched(h).annotate(loop(l), string(key), ann_value(value)); });
}

mt_status annotate_block(mt_schedule* h, mt_block_rv b, mt_str key, mt_ann_value value) {
  return guard("annotate_block",
               [&] { sched(h).annotate(block(b), string(key), ann_value(value)); });
}

mt_status unannotate_loop(mt_schedule* h, mt_loop_rv l, mt_str key) {
  return guard("unannotate_loop", [&] { sched(h).unannotate(loop(l), string(key)); });
}

mt_status unannotate_block(mt_schedule* h, mt_block_rv b, mt_str key) {
  return guard("unannotate_block", [&] { sched(h).unannotate(block(b), string(key)); });
}

// ---- compute location ----

mt_status compute_at(mt_schedule* h, mt_block_rv b, mt_loop_rv l) {
  return guard("compute_at", [&] { sched(h).compute_at(block(b), loop(l)); });
}

mt_status reverse_compute_at(mt_schedule* h, mt_block_rv b, mt_loop_rv l) {
  return guard("reverse_compute_at", [&] { sched(h).reverse_compute_at(block(b), loop(l)); });
}

mt_status compute_inline(mt_schedule* h, mt_block_rv b) {
  return guard("compute_inline", [&] { sched(h).compute_inline(block(b)); });
}

mt_status reverse_compute_inline(mt_schedule* h, mt_block_rv b) {
  return guard("reverse_compute_inline", [&] { sched(h).reverse_compute_inline(block(b)); });
}

// ---- buffers and reductions ----

mt_status cache_read(mt_schedule* h, mt_block_rv b, int32_t index, mt_str scope, mt_block_rv* out) {
  return guard("cache_read", [&] {
    require(out, "out");
    *out = c_block(sched(h).cache_read(block(b), index, string(scope)));
  });
}

mt_status cache_write(mt_schedule* h, mt_block_rv b, int32_t index, mt_str scope,
                      mt_block_rv* out) {
  return guard("cache_write", [&] {
    require(out, "out");
    *out = c_block(sched(h).cache_write(block(b), index, string(scope)));
  });
}

mt_status set_scope(mt_schedule* h, mt_block_rv b, int32_t index, mt_str scope) {
  return guard("set_scope", [&] { sched(h).set_scope(block(b), index, string(scope)); });
}

mt_status decompose_reduction(mt_schedule* h, mt_block_rv b, mt_loop_rv l, mt_block_rv* out) {
  return guard("decompose_reduction", [&] {
    require(out, "out");
    *out = c_block(sched(h).decompose_reduction(block(b), loop(l)));
  });
}

mt_status rfactor(mt_schedule* h, mt_loop_rv l, int32_t factor_axis, mt_block_rv* out) {
  return guard("rfactor", [&] {
    require(out, "out");
    *out = c_block(sched(h).rfactor(loop(l), factor_axis));
  });
}

mt_status transform_layout(mt_schedule* h, mt_block_rv b, int32_t index, const int64_t* perm,
                           size_t ndim) {
  return guard("transform_layout", [&] {
    if (ndim) require(perm, "permutation");
    sched(h).transform_layout(block(b), index, std::vector<int64_t>(perm, perm + ndim));
  });
}
mt_status storage_align(mt_schedule* h, mt_block_rv b, int32_t index, int32_t axis, int32_t factor,
                        int32_t offset) {
  return guard("storage_align",
               [&] { sched(h).storage_align(block(b), index, axis, factor, offset); });
}

// ---- values of random variables ----

mt_status get_int(const mt_schedule* h, mt_expr_rv v, int64_t* out) {
  return guard("get_int", [&] {
    require(out, "out");
    *out = sched(h).get(ExprRV{v.id});
  });
}

mt_status block_name(const mt_schedule* h, mt_block_rv b, mt_str* out) {
  return guard("block_name", [&] {
    require(out, "out");
    h->strings.push_back(sched(h).name_of(block(b)));
    *out = str(h->strings.back());
  });
}

int32_t block_is_valid(const mt_schedule* h, mt_block_rv b) {
  try {
    return h && sched(h).valid(block(b)) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int32_t loop_is_valid(const mt_schedule* h, mt_loop_rv l) {
  try {
    return h && sched(h).valid(loop(l)) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

} // namespace

void fill_schedule_api(mt_host_api& t) {
  t.schedule_retain = schedule_retain;
  t.schedule_release = schedule_release;
  t.schedule_copy = schedule_copy;
  t.schedule_list_push = schedule_list_push;
  t.schedule_get_program = schedule_get_program;
  t.schedule_lower = schedule_lower;
  t.schedule_get_trace = schedule_get_trace;
  t.get_block = get_block;
  t.get_loops = get_loops;
  t.get_child_blocks = get_child_blocks;
  t.get_producers = get_producers;
  t.get_consumers = get_consumers;
  t.sample_perfect_tile = sample_perfect_tile;
  t.sample_categorical = sample_categorical;
  t.sample_compute_location = sample_compute_location;
  t.split = split;
  t.fuse = fuse;
  t.reorder = reorder;
  t.parallel = parallel;
  t.vectorize = vectorize;
  t.unroll = unroll;
  t.bind = bind;
  t.annotate_loop = annotate_loop;
  t.annotate_block = annotate_block;
  t.unannotate_loop = unannotate_loop;
  t.unannotate_block = unannotate_block;
  t.compute_at = compute_at;
  t.reverse_compute_at = reverse_compute_at;
  t.compute_inline = compute_inline;
  t.reverse_compute_inline = reverse_compute_inline;
  t.cache_read = cache_read;
  t.cache_write = cache_write;
  t.set_scope = set_scope;
  t.decompose_reduction = decompose_reduction;
  t.rfactor = rfactor;
  t.storage_align = storage_align;
  t.transform_layout = transform_layout;
  t.get_int = get_int;
  t.block_name = block_name;
  t.block_is_valid = block_is_valid;
  t.loop_is_valid = loop_is_valid;
}

} // namespace mt::plugin_detail
