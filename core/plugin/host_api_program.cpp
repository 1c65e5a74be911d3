// The read-only program part of the host API table: libclang-style accessors over core's
// statement, expression and buffer nodes. The handles are the nodes themselves; accessors
// never fail and answer 0 / NULL / "" for a NULL node or a field its kind does not have.
#include <string_view>

#include "core/lower/lower.h"
#include "core/lower/software_pipeline.h"
#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"

namespace mt::plugin_detail {

namespace {

// Kinds cross by cast: core's enums and the C ones are made from the same lists
// (ir_vocabulary.h; every member checked in tests/abi/ir_vocabulary_test.cpp).
static_assert(std::string_view(kUnrollHintAnnotation) == MT_LOOP_UNROLL_HINT);
static_assert(std::string_view(kSoftwarePipelineStages) == MT_LOOP_SOFTWARE_PIPELINE_STAGES &&
              std::string_view(kSoftwarePipelinePrologue) == MT_LOOP_SOFTWARE_PIPELINE_PROLOGUE &&
              std::string_view(kSoftwarePipelineAsyncCopy) ==
                  MT_LOOP_SOFTWARE_PIPELINE_ASYNC_COPY &&
              std::string_view(kSoftwarePipelineSpareSlots) ==
                  MT_LOOP_SOFTWARE_PIPELINE_SPARE_SLOTS);

const mt_str kEmpty{"", 0};

template <typename T> const T* kind_as(const mt_stmt* s, StmtKind k) {
  const StmtNode* n = node(s);
  return n && n->kind == k ? static_cast<const T*>(n) : nullptr;
}

// ---- programs ----

void program_retain(mt_program* p) {
  if (p) p->refs.fetch_add(1, std::memory_order_relaxed);
}
void program_release(mt_program* p) {
  if (p && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p;
}
mt_str program_name(const mt_program* p) {
  return p ? str(p->func.name) : kEmpty;
}
int32_t program_is_lowered(const mt_program* p) {
  return p && p->func.lowered ? 1 : 0;
}
mt_status program_partition_loops(const mt_program* p, mt_program** out) {
  return guard("program_partition_loops", [&] {
    require(p, "program");
    require(out, "out");
    if (!p->func.lowered)
      throw std::invalid_argument("program '" + p->func.name + "' is not lowered");
    Function f = p->func;
    f.body = partition_loops(f.body);
    *out = make_program_handle(std::move(f));
  });
}
size_t program_num_params(const mt_program* p) {
  return p ? p->func.params.size() : 0;
}
const mt_buffer* program_param(const mt_program* p, size_t i) {
  return p && i < p->func.params.size() ? handle(p->func.params[i].get()) : nullptr;
}
size_t program_num_buffers(const mt_program* p) {
  return p ? p->func.buffers.size() : 0;
}
const mt_buffer* program_buffer(const mt_program* p, size_t i) {
  return p && i < p->func.buffers.size() ? handle(p->func.buffers[i].get()) : nullptr;
}
const mt_stmt* program_body(const mt_program* p) {
  return p ? handle(p->func.body.get()) : nullptr;
}

// ---- statements ----

mt_stmt_kind stmt_kind(const mt_stmt* s) {
  return s ? static_cast<mt_stmt_kind>(node(s)->kind) : MT_STMT_SEQ;
}

size_t stmt_num_children(const mt_stmt* s) {
  const StmtNode* n = node(s);
  if (!n) return 0;
  switch (n->kind) {
  case StmtKind::For:
    return static_cast<const ForNode*>(n)->body ? 1 : 0;
  case StmtKind::Allocate:
    return static_cast<const AllocateNode*>(n)->body ? 1 : 0;
  case StmtKind::Seq:
    return static_cast<const SeqNode*>(n)->stmts.size();
  case StmtKind::IfThenElse: {
    auto* i = static_cast<const IfThenElseNode*>(n);
    return (i->then_case ? 1 : 0) + (i->else_case ? 1 : 0);
  }
  case StmtKind::Store:
  case StmtKind::BlockRealize:
    return 0;
  }
  return 0;
}

const mt_stmt* stmt_child(const mt_stmt* s, size_t i) {
  const StmtNode* n = node(s);
  if (!n || i >= stmt_num_children(s)) return nullptr;
  switch (n->kind) {
  case StmtKind::For:
    return handle(static_cast<const ForNode*>(n)->body.get());
  case StmtKind::Allocate:
    return handle(static_cast<const AllocateNode*>(n)->body.get());
  case StmtKind::Seq:
    return handle(static_cast<const SeqNode*>(n)->stmts[i].get());
  case StmtKind::IfThenElse: {
    auto* x = static_cast<const IfThenElseNode*>(n);
    if (i == 0 && x->then_case) return handle(x->then_case.get());
    return handle(x->else_case.get());
  }
  default:
    return nullptr;
  }
}

const mt_expr* for_loop_var(const mt_stmt* s) {
  auto* f = kind_as<ForNode>(s, StmtKind::For);
  return f ? handle(f->loop_var.get()) : nullptr;
}
int64_t for_extent(const mt_stmt* s) {
  auto* f = kind_as<ForNode>(s, StmtKind::For);
  return f ? f->extent : 0;
}
mt_for_kind for_kind(const mt_stmt* s) {
  auto* f = kind_as<ForNode>(s, StmtKind::For);
  return f ? static_cast<mt_for_kind>(f->for_kind) : MT_FOR_SERIAL;
}
mt_str for_thread_tag(const mt_stmt* s) {
  auto* f = kind_as<ForNode>(s, StmtKind::For);
  return f ? str(f->thread_tag) : kEmpty;
}
size_t for_num_annotations(const mt_stmt* s) {
  auto* f = kind_as<ForNode>(s, StmtKind::For);
  return f ? f->annotations.size() : 0;
}
mt_status for_annotation(const mt_stmt* s, size_t i, mt_str* key, mt_ann_value* value) {
  return guard("for_annotation", [&] {
    auto* f = kind_as<ForNode>(s, StmtKind::For);
    if (!f) throw ApiError(MT_ERROR_INVALID_ARGUMENT, "not a For statement");
    fill_annotation(f->annotations, i, key, value);
  });
}
const mt_stmt* for_body(const mt_stmt* s) {
  auto* f = kind_as<ForNode>(s, StmtKind::For);
  return f ? handle(f->body.get()) : nullptr;
}

const mt_buffer* store_buffer(const mt_stmt* s) {
  auto* x = kind_as<StoreNode>(s, StmtKind::Store);
  return x ? handle(x->buffer.get()) : nullptr;
}
size_t store_num_indices(const mt_stmt* s) {
  auto* x = kind_as<StoreNode>(s, StmtKind::Store);
  return x ? x->indices.size() : 0;
}
const mt_expr* store_index(const mt_stmt* s, size_t i) {
  auto* x = kind_as<StoreNode>(s, StmtKind::Store);
  return x && i < x->indices.size() ? handle(x->indices[i].get()) : nullptr;
}
const mt_expr* store_value(const mt_stmt* s) {
  auto* x = kind_as<StoreNode>(s, StmtKind::Store);
  return x ? handle(x->value.get()) : nullptr;
}

const mt_expr* if_condition(const mt_stmt* s) {
  auto* x = kind_as<IfThenElseNode>(s, StmtKind::IfThenElse);
  return x ? handle(x->condition.get()) : nullptr;
}
const mt_stmt* if_then(const mt_stmt* s) {
  auto* x = kind_as<IfThenElseNode>(s, StmtKind::IfThenElse);
  return x ? handle(x->then_case.get()) : nullptr;
}
const mt_stmt* if_else(const mt_stmt* s) {
  auto* x = kind_as<IfThenElseNode>(s, StmtKind::IfThenElse);
  return x ? handle(x->else_case.get()) : nullptr;
}

const mt_buffer* allocate_buffer(const mt_stmt* s) {
  auto* x = kind_as<AllocateNode>(s, StmtKind::Allocate);
  return x ? handle(x->buffer.get()) : nullptr;
}
const mt_stmt* allocate_body(const mt_stmt* s) {
  auto* x = kind_as<AllocateNode>(s, StmtKind::Allocate);
  return x ? handle(x->body.get()) : nullptr;
}

const BlockRealizeNode* realize(const mt_stmt* s) {
  auto* x = kind_as<BlockRealizeNode>(s, StmtKind::BlockRealize);
  return x && x->block ? x : nullptr;
}
mt_str block_realize_name(const mt_stmt* s) {
  auto* x = realize(s);
  return x ? str(x->block->name) : kEmpty;
}
size_t block_realize_num_iter_values(const mt_stmt* s) {
  auto* x = realize(s);
  return x ? x->iter_values.size() : 0;
}
const mt_expr* block_realize_iter_value(const mt_stmt* s, size_t i) {
  auto* x = realize(s);
  return x && i < x->iter_values.size() ? handle(x->iter_values[i].get()) : nullptr;
}
const mt_expr* block_realize_predicate(const mt_stmt* s) {
  auto* x = realize(s);
  return x ? handle(x->predicate.get()) : nullptr;
}
const mt_stmt* block_realize_body(const mt_stmt* s) {
  auto* x = realize(s);
  return x ? handle(x->block->body.get()) : nullptr;
}
const mt_stmt* block_realize_init(const mt_stmt* s) {
  auto* x = realize(s);
  return x ? handle(x->block->init.get()) : nullptr;
}

// ---- expressions ----

mt_expr_kind expr_kind(const mt_expr* e) {
  return e ? static_cast<mt_expr_kind>(node(e)->kind) : MT_EXPR_INT_IMM;
}
mt_dtype expr_dtype(const mt_expr* e) {
  return e ? to_c(node(e)->dtype) : mt_dtype{};
}
int64_t expr_int_value(const mt_expr* e) {
  return e ? node(e)->int_value : 0;
}
double expr_float_value(const mt_expr* e) {
  return e ? node(e)->float_value : 0.0;
}
mt_str expr_var_name(const mt_expr* e) {
  return e && node(e)->kind == ExprKind::Var ? str(node(e)->name) : kEmpty;
}
mt_math_fn expr_call_fn(const mt_expr* e) {
  return e ? static_cast<mt_math_fn>(node(e)->fn) : MT_MATH_EXP;
}
const mt_buffer* expr_load_buffer(const mt_expr* e) {
  return e && node(e)->kind == ExprKind::Load ? handle(node(e)->buffer.get()) : nullptr;
}
size_t expr_num_args(const mt_expr* e) {
  return e ? node(e)->args.size() : 0;
}
const mt_expr* expr_arg(const mt_expr* e, size_t i) {
  return e && i < node(e)->args.size() ? handle(node(e)->args[i].get()) : nullptr;
}

// ---- buffers ----

mt_str buffer_name(const mt_buffer* b) {
  return b ? str(node(b)->name) : kEmpty;
}
mt_dtype buffer_dtype(const mt_buffer* b) {
  return b ? to_c(node(b)->dtype) : mt_dtype{};
}
size_t buffer_ndim(const mt_buffer* b) {
  return b ? node(b)->shape.size() : 0;
}
int64_t buffer_shape(const mt_buffer* b, size_t i) {
  return b && i < node(b)->shape.size() ? node(b)->shape[i] : 0;
}
mt_str buffer_scope(const mt_buffer* b) {
  return b ? str(node(b)->scope) : kEmpty;
}

} // namespace

void fill_program_api(mt_host_api& t) {
  t.program_partition_loops = program_partition_loops;
  t.program_retain = program_retain;
  t.program_release = program_release;
  t.program_name = program_name;
  t.program_is_lowered = program_is_lowered;
  t.program_num_params = program_num_params;
  t.program_param = program_param;
  t.program_num_buffers = program_num_buffers;
  t.program_buffer = program_buffer;
  t.program_body = program_body;
  t.stmt_kind = stmt_kind;
  t.stmt_num_children = stmt_num_children;
  t.stmt_child = stmt_child;
  t.for_loop_var = for_loop_var;
  t.for_extent = for_extent;
  t.for_kind = for_kind;
  t.for_thread_tag = for_thread_tag;
  t.for_num_annotations = for_num_annotations;
  t.for_annotation = for_annotation;
  t.for_body = for_body;
  t.store_buffer = store_buffer;
  t.store_num_indices = store_num_indices;
  t.store_index = store_index;
  t.store_value = store_value;
  t.if_condition = if_condition;
  t.if_then = if_then;
  t.if_else = if_else;
  t.allocate_buffer = allocate_buffer;
  t.allocate_body = allocate_body;
  t.block_realize_name = block_realize_name;
  t.block_realize_num_iter_values = block_realize_num_iter_values;
  t.block_realize_iter_value = block_realize_iter_value;
  t.block_realize_predicate = block_realize_predicate;
  t.block_realize_body = block_realize_body;
  t.block_realize_init = block_realize_init;
  t.expr_kind = expr_kind;
  t.expr_dtype = expr_dtype;
  t.expr_int_value = expr_int_value;
  t.expr_float_value = expr_float_value;
  t.expr_var_name = expr_var_name;
  t.expr_call_fn = expr_call_fn;
  t.expr_load_buffer = expr_load_buffer;
  t.expr_num_args = expr_num_args;
  t.expr_arg = expr_arg;
  t.buffer_name = buffer_name;
  t.buffer_dtype = buffer_dtype;
  t.buffer_ndim = buffer_ndim;
  t.buffer_shape = buffer_shape;
  t.buffer_scope = buffer_scope;
}

} // namespace mt::plugin_detail
