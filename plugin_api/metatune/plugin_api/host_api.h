/* The host API table: everything a plugin can ask of metatune. A plugin sees the IR and the
 * schedule only through these functions (opaque handles + accessors + primitives, in the
 * style of libclang's C API). The table is handed to the plugin's entry point and stays valid
 * for as long as the plugin is loaded.
 *
 * Conventions
 * - Fallible functions return mt_status (MT_OK = 0); the message of a failure is in the calling
 *   thread's last-error slot: last_error(). Outputs are written only on success.
 * - Variable-length outputs take (out, capacity, count): the function writes min(capacity,
 *   count) items and sets *count. If capacity is too small it returns MT_ERROR_BUFFER_TOO_SMALL
 *   -- except for the query form (out == NULL, capacity == 0), which returns MT_OK.
 * - Accessors of borrowed nodes (stmt_*, expr_*, buffer_*) cannot fail: they return the value
 *   directly, and 0 / NULL / an empty string for a NULL node or a field the kind lacks.
 * - Owned handles come with retain/release; a handle returned through an out-parameter
 *   carries one reference for the caller.
 * - The table only grows. Each released version is frozen by the static asserts below. */
#ifndef METATUNE_PLUGIN_API_HOST_API_H
#define METATUNE_PLUGIN_API_HOST_API_H

#include "metatune/plugin_api/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Callbacks of te_compute / te_compute_reduce: given the spatial axes (one Var per output
 * dimension), produce the value of the output element. */
typedef struct mt_te_reduction {
  uint32_t struct_size;
  uint32_t struct_version;
  mt_reduce_kind kind;
  const mt_expr* source;      /* combined over every point of `axes` */
  const mt_expr* const* axes; /* reduction axes made by te_reduce_axis */
  size_t num_axes;
} mt_te_reduction;

typedef mt_status (*mt_te_compute_fn)(void* user_data, mt_te_builder* builder,
                                      const mt_expr* const* axes, size_t ndim,
                                      const mt_expr** out_value);
typedef mt_status (*mt_te_reduce_fn)(void* user_data, mt_te_builder* builder,
                                     const mt_expr* const* axes, size_t ndim,
                                     mt_te_reduction* out_reduction);

typedef struct mt_host_api {
  uint32_t struct_size;    /* sizeof(mt_host_api) in the host's build */
  uint32_t struct_version; /* 1 */
  uint32_t abi_version;    /* the host's MT_PLUGIN_ABI_VERSION */

  /* ---- errors and logging --------------------------------------------------------------- */
  /* Message of the last failure on this thread ("" if none); valid until the next failure on
   * this thread. */
  const char* (*last_error)(void);
  /* Plugins set this before returning a failure status from a callback. */
  void (*set_last_error)(mt_str message);
  void (*log)(mt_log_level level, mt_str message);

  /* ---- schedule handles ------------------------------------------------------------------ */
  void (*schedule_retain)(mt_schedule* sch);
  void (*schedule_release)(mt_schedule* sch);
  /* An independent copy: same function, trace and random variables, forked random stream. */
  mt_status (*schedule_copy)(const mt_schedule* sch, mt_schedule** out);
  /* Adds a schedule to a rule's output list (the list takes its own reference). Pushing the
   * schedule the rule was given means "keep it, as modified". */
  mt_status (*schedule_list_push)(mt_schedule_list* list, mt_schedule* sch);
  /* The current (unlowered) function, and the same function lowered to a loop program. */
  mt_status (*schedule_get_program)(const mt_schedule* sch, mt_program** out);
  mt_status (*schedule_lower)(const mt_schedule* sch, mt_program** out);
  mt_status (*schedule_get_trace)(const mt_schedule* sch, mt_trace** out);

  /* ---- lookup ---------------------------------------------------------------------------- */
  mt_status (*get_block)(mt_schedule* sch, mt_str name, mt_block_rv* out);
  mt_status (*get_loops)(mt_schedule* sch, mt_block_rv block, mt_loop_rv* out, size_t capacity,
                         size_t* count);
  /* loop.id == MT_LOOP_ROOT: every block of the function, in program order. */
  mt_status (*get_child_blocks)(mt_schedule* sch, mt_loop_rv loop, mt_block_rv* out,
                                size_t capacity, size_t* count);
  mt_status (*get_producers)(mt_schedule* sch, mt_block_rv block, mt_block_rv* out, size_t capacity,
                             size_t* count);
  mt_status (*get_consumers)(mt_schedule* sch, mt_block_rv block, mt_block_rv* out, size_t capacity,
                             size_t* count);

  /* ---- sampling (decision == NULL: sample from the schedule's rng; else replay it) --------- */
  mt_status (*sample_perfect_tile)(mt_schedule* sch, mt_loop_rv loop, int32_t n,
                                   int32_t max_innermost_factor,
                                   const int64_t* decision /* n factors or NULL */,
                                   mt_expr_rv* out /* n */);
  mt_status (*sample_categorical)(mt_schedule* sch, const int64_t* candidates, const double* probs,
                                  size_t n, const int64_t* decision /* chosen index or NULL */,
                                  mt_expr_rv* out);
  mt_status (*sample_compute_location)(mt_schedule* sch, mt_block_rv block, const int64_t* decision,
                                       mt_loop_rv* out);

  /* ---- loop transformations -------------------------------------------------------------- */
  mt_status (*split)(mt_schedule* sch, mt_loop_rv loop, const mt_factor* factors, size_t n,
                     mt_loop_rv* out /* n */);
  mt_status (*fuse)(mt_schedule* sch, const mt_loop_rv* loops, size_t n, mt_loop_rv* out);
  mt_status (*reorder)(mt_schedule* sch, const mt_loop_rv* order, size_t n);
  mt_status (*parallel)(mt_schedule* sch, mt_loop_rv loop);
  mt_status (*vectorize)(mt_schedule* sch, mt_loop_rv loop);
  mt_status (*unroll)(mt_schedule* sch, mt_loop_rv loop);
  mt_status (*bind)(mt_schedule* sch, mt_loop_rv loop, mt_str thread_axis);
  mt_status (*annotate_loop)(mt_schedule* sch, mt_loop_rv loop, mt_str key, mt_ann_value value);
  mt_status (*annotate_block)(mt_schedule* sch, mt_block_rv block, mt_str key, mt_ann_value value);
  mt_status (*unannotate_loop)(mt_schedule* sch, mt_loop_rv loop, mt_str key);
  mt_status (*unannotate_block)(mt_schedule* sch, mt_block_rv block, mt_str key);

  /* ---- compute location ------------------------------------------------------------------ */
  mt_status (*compute_at)(mt_schedule* sch, mt_block_rv block, mt_loop_rv loop);
  mt_status (*reverse_compute_at)(mt_schedule* sch, mt_block_rv block, mt_loop_rv loop);
  mt_status (*compute_inline)(mt_schedule* sch, mt_block_rv block);
  mt_status (*reverse_compute_inline)(mt_schedule* sch, mt_block_rv block);

  /* ---- buffers and reductions ------------------------------------------------------------ */
  mt_status (*cache_read)(mt_schedule* sch, mt_block_rv block, int32_t read_buffer_index,
                          mt_str scope, mt_block_rv* out);
  mt_status (*cache_write)(mt_schedule* sch, mt_block_rv block, int32_t write_buffer_index,
                           mt_str scope, mt_block_rv* out);
  mt_status (*set_scope)(mt_schedule* sch, mt_block_rv block, int32_t write_buffer_index,
                         mt_str scope);
  mt_status (*decompose_reduction)(mt_schedule* sch, mt_block_rv block, mt_loop_rv loop,
                                   mt_block_rv* out);
  mt_status (*rfactor)(mt_schedule* sch, mt_loop_rv loop, int32_t factor_axis, mt_block_rv* out);
  mt_status (*storage_align)(mt_schedule* sch, mt_block_rv block, int32_t write_buffer_index,
                             int32_t axis, int32_t factor, int32_t offset);

  /* ---- values of random variables -------------------------------------------------------- */
  mt_status (*get_int)(const mt_schedule* sch, mt_expr_rv value, int64_t* out);
  mt_status (*block_name)(const mt_schedule* sch, mt_block_rv block, mt_str* out);
  /* Whether a random variable still refers to something in the current function. */
  int32_t (*block_is_valid)(const mt_schedule* sch, mt_block_rv block);
  int32_t (*loop_is_valid)(const mt_schedule* sch, mt_loop_rv loop);

  /* ---- block analysis ---------------------------------------------------------------------
   * Read buffers are listed in order of first appearance and exclude the buffer the block
   * updates (the self-read of a reduction); that order is the read_buffer_index of
   * cache_read. Write buffers likewise for write_buffer_index. Expressions returned here are
   * pinned by the schedule handle and stay valid while it lives. */
  mt_status (*block_num_iter_vars)(const mt_schedule* sch, mt_block_rv block, size_t* out);
  mt_status (*block_iter_var)(const mt_schedule* sch, mt_block_rv block, size_t i,
                              mt_iter_var_info* out);
  mt_status (*block_num_reads)(const mt_schedule* sch, mt_block_rv block, size_t* out);
  mt_status (*block_read)(const mt_schedule* sch, mt_block_rv block, size_t i,
                          mt_buffer_access* out);
  mt_status (*block_num_writes)(const mt_schedule* sch, mt_block_rv block, size_t* out);
  mt_status (*block_write)(const mt_schedule* sch, mt_block_rv block, size_t i,
                           mt_buffer_access* out);
  mt_status (*block_is_reduction)(const mt_schedule* sch, mt_block_rv block, int32_t* out);
  mt_status (*block_num_annotations)(const mt_schedule* sch, mt_block_rv block, size_t* out);
  mt_status (*block_annotation)(const mt_schedule* sch, mt_block_rv block, size_t i, mt_str* key,
                                mt_ann_value* value);
  /* The block's body and init (NULL if none) as statements, for the stmt_* accessors. */
  mt_status (*block_body)(const mt_schedule* sch, mt_block_rv block, const mt_stmt** body,
                          const mt_stmt** init);

  /* ---- loop analysis --------------------------------------------------------------------- */
  mt_status (*loop_extent)(const mt_schedule* sch, mt_loop_rv loop, int64_t* out);
  mt_status (*loop_kind)(const mt_schedule* sch, mt_loop_rv loop, mt_for_kind* out);
  mt_status (*loop_thread_tag)(const mt_schedule* sch, mt_loop_rv loop, mt_str* out);
  mt_status (*loop_var)(const mt_schedule* sch, mt_loop_rv loop, const mt_expr** out);
  mt_status (*loop_num_annotations)(const mt_schedule* sch, mt_loop_rv loop, size_t* out);
  mt_status (*loop_annotation)(const mt_schedule* sch, mt_loop_rv loop, size_t i, mt_str* key,
                               mt_ann_value* value);

  /* ---- traces (for mutators) ------------------------------------------------------------- */
  void (*trace_retain)(mt_trace* trace);
  void (*trace_release)(mt_trace* trace);
  size_t (*trace_num_instructions)(const mt_trace* trace);
  mt_status (*trace_instruction_kind)(const mt_trace* trace, size_t i, mt_str* out);
  /* MT_ERROR_NOT_FOUND if the instruction has no decision. */
  mt_status (*trace_decision)(const mt_trace* trace, size_t i, int64_t* out, size_t capacity,
                              size_t* count);
  mt_status (*trace_num_attrs)(const mt_trace* trace, size_t i, size_t* out);
  /* Integer attribute j of instruction i (MT_ERROR_INVALID_ARGUMENT if it is not one). */
  mt_status (*trace_attr_int)(const mt_trace* trace, size_t i, size_t j, int64_t* out);
  mt_status (*trace_with_decision)(const mt_trace* trace, size_t i, const int64_t* decision,
                                   size_t n, mt_trace** out);
  /* JSON text of the trace, valid while the trace handle lives. */
  mt_status (*trace_to_json)(const mt_trace* trace, mt_str* out);

  /* ---- random numbers -------------------------------------------------------------------- */
  mt_status (*rng_uniform_int)(mt_rng* rng, int64_t lo, int64_t hi, int64_t* out); /* [lo, hi) */
  mt_status (*rng_uniform_real)(mt_rng* rng, double* out);                         /* [0, 1) */

  /* ---- tune context (target attributes such as "num_cores", "vector_bytes", "kind") ------ */
  mt_status (*context_get_int)(const mt_tune_context* ctx, mt_str key, int64_t* out);
  mt_status (*context_get_str)(const mt_tune_context* ctx, mt_str key, mt_str* out);

  /* ---- programs (read-only) ------------------------------------------------------------- */
  void (*program_retain)(mt_program* program);
  void (*program_release)(mt_program* program);
  mt_str (*program_name)(const mt_program* program);
  int32_t (*program_is_lowered)(const mt_program* program);
  size_t (*program_num_params)(const mt_program* program);
  const mt_buffer* (*program_param)(const mt_program* program, size_t i);
  /* Intermediate buffers (unlowered) / buffers allocated by the body (lowered). */
  size_t (*program_num_buffers)(const mt_program* program);
  const mt_buffer* (*program_buffer)(const mt_program* program, size_t i);
  const mt_stmt* (*program_body)(const mt_program* program);

  /* ---- statements ------------------------------------------------------------------------ */
  mt_stmt_kind (*stmt_kind)(const mt_stmt* s);
  /* Generic tree walk: For/Allocate body, Seq items, If then/else (else only if present),
   * BlockRealize: none (use block_realize_body / block_realize_init). */
  size_t (*stmt_num_children)(const mt_stmt* s);
  const mt_stmt* (*stmt_child)(const mt_stmt* s, size_t i);
  const mt_expr* (*for_loop_var)(const mt_stmt* s);
  int64_t (*for_extent)(const mt_stmt* s);
  mt_for_kind (*for_kind)(const mt_stmt* s);
  mt_str (*for_thread_tag)(const mt_stmt* s);
  size_t (*for_num_annotations)(const mt_stmt* s);
  mt_status (*for_annotation)(const mt_stmt* s, size_t i, mt_str* key, mt_ann_value* value);
  const mt_stmt* (*for_body)(const mt_stmt* s);
  const mt_buffer* (*store_buffer)(const mt_stmt* s);
  size_t (*store_num_indices)(const mt_stmt* s);
  const mt_expr* (*store_index)(const mt_stmt* s, size_t i);
  const mt_expr* (*store_value)(const mt_stmt* s);
  const mt_expr* (*if_condition)(const mt_stmt* s);
  const mt_stmt* (*if_then)(const mt_stmt* s);
  const mt_stmt* (*if_else)(const mt_stmt* s);
  const mt_buffer* (*allocate_buffer)(const mt_stmt* s);
  const mt_stmt* (*allocate_body)(const mt_stmt* s);
  mt_str (*block_realize_name)(const mt_stmt* s);
  size_t (*block_realize_num_iter_values)(const mt_stmt* s);
  const mt_expr* (*block_realize_iter_value)(const mt_stmt* s, size_t i);
  const mt_expr* (*block_realize_predicate)(const mt_stmt* s);
  const mt_stmt* (*block_realize_body)(const mt_stmt* s);
  const mt_stmt* (*block_realize_init)(const mt_stmt* s);

  /* ---- expressions ----------------------------------------------------------------------- */
  mt_expr_kind (*expr_kind)(const mt_expr* e);
  mt_dtype (*expr_dtype)(const mt_expr* e);
  int64_t (*expr_int_value)(const mt_expr* e);
  double (*expr_float_value)(const mt_expr* e);
  mt_str (*expr_var_name)(const mt_expr* e); /* variables are identified by handle, not name */
  mt_math_fn (*expr_call_fn)(const mt_expr* e);
  const mt_buffer* (*expr_load_buffer)(const mt_expr* e);
  size_t (*expr_num_args)(const mt_expr* e);
  const mt_expr* (*expr_arg)(const mt_expr* e, size_t i);

  /* ---- buffers --------------------------------------------------------------------------- */
  mt_str (*buffer_name)(const mt_buffer* b);
  mt_dtype (*buffer_dtype)(const mt_buffer* b);
  size_t (*buffer_ndim)(const mt_buffer* b);
  int64_t (*buffer_shape)(const mt_buffer* b, size_t i);
  mt_str (*buffer_scope)(const mt_buffer* b);

  /* ---- tensor expressions (for layers) -----------------------------------------------------
   * A builder is an arena: expressions and tensors made with it live as long as it does. */
  mt_status (*te_builder_create)(mt_te_builder** out);
  void (*te_builder_retain)(mt_te_builder* builder);
  void (*te_builder_release)(mt_te_builder* builder);
  mt_status (*te_int_imm)(mt_te_builder* b, int64_t value, mt_dtype dtype, const mt_expr** out);
  mt_status (*te_float_imm)(mt_te_builder* b, double value, mt_dtype dtype, const mt_expr** out);
  mt_status (*te_var)(mt_te_builder* b, mt_str name, mt_dtype dtype, const mt_expr** out);
  /* kind: MT_EXPR_ADD .. MT_EXPR_OR. */
  mt_status (*te_binary)(mt_te_builder* b, mt_expr_kind kind, const mt_expr* lhs,
                         const mt_expr* rhs, const mt_expr** out);
  mt_status (*te_not)(mt_te_builder* b, const mt_expr* a, const mt_expr** out);
  mt_status (*te_select)(mt_te_builder* b, const mt_expr* cond, const mt_expr* t, const mt_expr* f,
                         const mt_expr** out);
  mt_status (*te_cast)(mt_te_builder* b, mt_dtype dtype, const mt_expr* value, const mt_expr** out);
  mt_status (*te_call)(mt_te_builder* b, mt_math_fn fn, const mt_expr* const* args, size_t n,
                       const mt_expr** out);
  mt_status (*te_placeholder)(mt_te_builder* b, mt_str name, mt_dtype dtype, const int64_t* shape,
                              size_t ndim, const mt_te_tensor** out);
  mt_status (*te_load)(mt_te_builder* b, const mt_te_tensor* tensor, const mt_expr* const* indices,
                       size_t n, const mt_expr** out);
  mt_status (*te_reduce_axis)(mt_te_builder* b, int64_t extent, mt_str name, const mt_expr** out);
  mt_status (*te_compute)(mt_te_builder* b, mt_str name, const int64_t* shape, size_t ndim,
                          mt_te_compute_fn fn, void* user_data, const mt_te_tensor** out);
  mt_status (*te_compute_reduce)(mt_te_builder* b, mt_str name, const int64_t* shape, size_t ndim,
                                 mt_te_reduce_fn fn, void* user_data, const mt_te_tensor** out);
  const mt_buffer* (*te_tensor_buffer)(const mt_te_tensor* tensor);
  /* The function computing `outputs` from `inputs` (params = inputs then outputs). */
  mt_status (*te_build)(mt_te_builder* b, mt_str name, const mt_te_tensor* const* inputs,
                        size_t num_inputs, const mt_te_tensor* const* outputs, size_t num_outputs,
                        mt_program** out);

  /* End of version 1 - DO NOT MODIFY ABOVE (add new functions below, bump the minor) */

  /* ---- version 1.1: features for cost models (check MT_HAS_FIELD before use) ------------
   * The per-store feature matrix of the schedule's current function (lowered first): one
   * row per buffer store of the loop program, in program order, *cols (174) floats each,
   * row-major; the layout and every feature's meaning are in docs/features.md. Computed by
   * the host and cached on the handle: the array stays valid until the schedule changes
   * (any primitive) or the handle is released. *rows may be 0 (no store). */
  mt_status (*schedule_features)(mt_schedule* sch, const float** data, size_t* rows, size_t* cols);

  /* End of version 1.1 - DO NOT MODIFY ABOVE (add new functions below, bump the minor) */

  /* ---- version 1.2: loop partitioning for code generators, transform_layout (check
   * MT_HAS_FIELD before use) ------------------------------------------------------------
   * A copy of a lowered program whose loops are partitioned around guards: where the first
   * (or last) iterations of a loop provably satisfy an `if` condition below it -- the bound
   * an imperfect split leaves, a reduction's `k == 0` init -- the loop is split in two, each
   * part simplified for its range, so the test leaves the hot inner loops (a parallel loop
   * keeps its iteration space and branches inside). Same results; more code. Analyses that
   * recognise or count statements should read the program as lowered; code generators gain
   * from this form. MT_ERROR_INVALID_ARGUMENT if the program is not lowered. */
  mt_status (*program_partition_loops)(const mt_program* program, mt_program** out);
  /* Schedule primitive transform_layout: dimension d of the intermediate buffer the block
   * writes (write_buffer_index) becomes its dimension permutation[d]; every access follows.
   * Function arguments are refused. Recorded in the trace like every primitive. */
  mt_status (*transform_layout)(mt_schedule* sch, mt_block_rv block, int32_t write_buffer_index,
                                const int64_t* permutation, size_t ndim);

  /* End of version 1.2 - DO NOT MODIFY ABOVE (add new functions below, bump the minor) */

  /* ---- version 1.3: the search context of search strategies (check MT_HAS_FIELD) ---------
   * A strategy (components.h, start/next_batch/notify_measured) searches one task through
   * these. Sampling calls take n jobs and fill out[0..n) in job order; the host may run the
   * jobs on several threads, each job seeded only by its own seed, so results do not depend
   * on the thread count. A job the host refuses (a primitive failed on replay, a
   * postprocessor rejected, a mutator had nothing to change) gives NULL in its slot and is
   * counted, with its reason, in the task's search statistics. Candidates are owned by the
   * caller (candidate_release). */
  size_t (*search_num_design_spaces)(const mt_search_context* ctx);
  size_t (*search_num_mutators)(const mt_search_context* ctx);
  /* The mutator's selection probability, normalised over the task's mutators. */
  double (*search_mutator_probability)(const mt_search_context* ctx, size_t mutator);
  int32_t (*search_has_cost_model)(const mt_search_context* ctx);
  /* The task's seed: a strategy's own random choices start from it. */
  uint64_t (*search_seed)(const mt_search_context* ctx);
  /* Records of the task measured before the strategy started (database, earlier runs), best
   * first: their traces (borrowed, valid as long as ctx) and mean seconds (+inf: failed). */
  size_t (*search_num_measured)(const mt_search_context* ctx);
  mt_status (*search_measured)(const mt_search_context* ctx, size_t index, const mt_trace** trace,
                               double* seconds);
  /* Fresh samples: a design space drawn by the job's seed, every decision re-sampled. */
  mt_status (*search_sample)(mt_search_context* ctx, const uint64_t* seeds, size_t n,
                             mt_candidate** out);
  /* Traces replayed with their decisions (postprocessor instructions a record carries at the
   * end are dropped first: they are derived again). */
  mt_status (*search_replay)(mt_search_context* ctx, const mt_trace* const* traces,
                             const uint64_t* seeds, size_t n, mt_candidate** out);
  /* Mutator mutators[i] applied to parents[i]'s trace, the result replayed. */
  mt_status (*search_mutate)(mt_search_context* ctx, const mt_candidate* const* parents,
                             const size_t* mutators, const uint64_t* seeds, size_t n,
                             mt_candidate** out);
  /* The task's cost model: scores (higher = predicted faster), and training on measured
   * candidates (+inf = failed). MT_ERROR_UNSUPPORTED without a model. */
  mt_status (*search_predict)(mt_search_context* ctx, const mt_candidate* const* candidates,
                              size_t n, double* scores);
  mt_status (*search_update_cost_model)(mt_search_context* ctx,
                                        const mt_candidate* const* candidates, size_t n,
                                        const double* run_seconds);
  /* Adds to a statistic of the search shown in progress and diagnoses: "duplicates",
   * "mutated", or a refusal (`source` as "mutator X", `message` its reason). */
  void (*search_count)(mt_search_context* ctx, mt_str statistic, size_t n);
  void (*search_count_refusal)(mt_search_context* ctx, mt_str source, mt_str message);
  /* Candidates. The trace is the one before postprocessing (what mutators change). */
  uint64_t (*candidate_hash)(const mt_candidate* c);
  const mt_trace* (*candidate_trace)(const mt_candidate* c);
  mt_candidate* (*candidate_retain)(const mt_candidate* c);
  void (*candidate_release)(mt_candidate* c);
  /* Appends a reference to `c` to a strategy's output. */
  mt_status (*candidate_list_push)(mt_candidate_list* list, const mt_candidate* c);

  /* End of version 1.3 - DO NOT MODIFY ABOVE (add new functions below, bump the minor) */

  /* ---- version 1.4: the rest of an instruction without the trace's JSON form (check
   * MT_HAS_FIELD before use) ----------------------------------------------------------------
   * Mutators and postprocessors that look up sampling instructions (their candidates, the
   * annotations that name them) read them here; trace_to_json serialises the whole trace, which
   * on the search's hot path costs more than the lookups. */
  /* Integer-list attribute j of instruction i (a sample_categorical's candidates), with the
   * (out, capacity, count) convention; MT_ERROR_INVALID_ARGUMENT if it is not one. */
  mt_status (*trace_attr_ints)(const mt_trace* trace, size_t i, size_t j, int64_t* out,
                               size_t capacity, size_t* count);
  /* String attribute j of instruction i (an annotation key), valid while the trace handle
   * lives; MT_ERROR_INVALID_ARGUMENT if it is not one. */
  mt_status (*trace_attr_str)(const mt_trace* trace, size_t i, size_t j, mt_str* out);
  /* Number of inputs of instruction i (random variables, constants or none; their identity is
   * in the JSON form). */
  mt_status (*trace_num_inputs)(const mt_trace* trace, size_t i, size_t* out);

  /* End of version 1.4 - DO NOT MODIFY ABOVE (add new functions below, bump the minor) */

  /* ---- version 1.5: model layers (check MT_HAS_FIELD) --------------------------------------
   * A layer declares its parameters, then builds its computation on a layer context (valid
   * for that one call). Names are relative to the layer ("weight", "bias"); the host prefixes
   * the layer's path in the model ("encoder.layer.3.attention.q_proj.weight"). */
  /* One parameter: `init` is JSON, {"kind": "normal", "std": 0.02} | {"kind": "uniform",
   * "scale": s} (in [-s, s)) | {"kind": "zeros"} | {"kind": "ones"} | {"kind": "constant",
   * "value": v}; empty = normal with std 0.02. */
  mt_status (*layer_param_push)(mt_layer_param_list* list, mt_str name, mt_dtype dtype,
                                const int64_t* shape, size_t ndim, mt_str init);
  /* The model's tensor-expression builder (borrowed, valid for the call). */
  mt_te_builder* (*layer_builder)(mt_layer_context* ctx);
  /* A parameter the layer declared, as a placeholder of the model. */
  mt_status (*layer_param)(mt_layer_context* ctx, mt_str name, const mt_te_tensor** out);
  /* Number of children in a config field: 1 for a set `layer` field, the length of a
   * `layer_list`, 0 when unset. */
  mt_status (*layer_num_children)(mt_layer_context* ctx, mt_str field, size_t* out);
  /* Builds child `index` of `field` on `inputs`; its outputs with the (out, capacity, count)
   * convention. */
  mt_status (*layer_call_child)(mt_layer_context* ctx, mt_str field, size_t index,
                                const mt_te_tensor* const* inputs, size_t num_inputs,
                                const mt_te_tensor** outputs, size_t capacity, size_t* num_outputs);
  /* End of version 1.5 - DO NOT MODIFY ABOVE (add new functions below, bump the minor) */

  /* ---- version 1.7: positions and decoding state of model layers (check MT_HAS_FIELD) -----
   * A model is built for a whole sequence, or for generation: a prefill (the prompt, whose
   * keys and values are kept) or a decode step (new tokens against a cache of the earlier
   * ones). The host owns the caches; a layer that keeps state across steps hands its new rows
   * and reads the cache back. Layers that never call these build the same graph in every
   * mode. */
  /* The absolute positions of the tokens being built: NULL when they are 0..S-1 along the
   * sequence axis (a whole sequence or a prefill), else a model input [B, S] of i32 (a decode
   * step: the cache's length onward). */
  mt_status (*layer_positions)(mt_layer_context* ctx, const mt_te_tensor** out);
  /* State `name` of the layer (unique within it): `rows` [B, S, W] are the rows this step
   * appends at its positions (kept by the host when generating, ignored otherwise). *cache
   * gets the cache [B, C, W] of the earlier rows when building a decode step (C the capacity;
   * row j holds position j, filled below the step's first position), NULL otherwise. */
  mt_status (*layer_state_append)(mt_layer_context* ctx, mt_str name, const mt_te_tensor* rows,
                                  const mt_te_tensor** cache);
  /* End of version 1.7 - DO NOT MODIFY ABOVE (add new functions below, bump the minor) */

  /* ---- version 1.9: a state the host writes in place (check MT_HAS_FIELD) ------------------
   * As layer_state_append, but when decoding the host writes `rows` into the cache at their
   * positions as soon as they are computed, before any kernel that reads the cache runs: *cache
   * holds every position up to the step's last (rows after it undefined). A layer reads the
   * cache alone instead of splicing this step's rows into a copy of it, a copy of the whole
   * cache per layer and step. The model fails to build, naming the state, when the kernel
   * computing `rows` would have to run after one reading the cache. */
  mt_status (*layer_state_write)(mt_layer_context* ctx, mt_str name, const mt_te_tensor* rows,
                                 const mt_te_tensor** cache);
  /* End of version 1.9 - DO NOT MODIFY ABOVE (add new functions below, bump the minor) */
} mt_host_api;

/* Version 1 is frozen: these offsets (in pointer slots) must never change. */
MT_STATIC_ASSERT(offsetof(mt_host_api, last_error) / sizeof(void*) == 2, host_api_v1_start);
MT_STATIC_ASSERT(offsetof(mt_host_api, schedule_retain) / sizeof(void*) == 5, host_api_v1_schedule);
MT_STATIC_ASSERT(offsetof(mt_host_api, get_block) / sizeof(void*) == 12, host_api_v1_lookup);
MT_STATIC_ASSERT(offsetof(mt_host_api, block_num_iter_vars) / sizeof(void*) == 45,
                 host_api_v1_analysis);
MT_STATIC_ASSERT(offsetof(mt_host_api, program_retain) / sizeof(void*) == 74, host_api_v1_programs);
MT_STATIC_ASSERT(offsetof(mt_host_api, te_builder_create) / sizeof(void*) == 122, host_api_v1_te);
MT_STATIC_ASSERT(offsetof(mt_host_api, te_build) / sizeof(void*) == 139, host_api_v1_end);
/* Version 1.1 is frozen likewise. */
MT_STATIC_ASSERT(offsetof(mt_host_api, schedule_features) / sizeof(void*) == 140,
                 host_api_v1_1_features);
MT_STATIC_ASSERT(offsetof(mt_host_api, program_partition_loops) / sizeof(void*) == 141,
                 host_api_v1_2_lowering);
MT_STATIC_ASSERT(offsetof(mt_host_api, transform_layout) / sizeof(void*) == 142,
                 host_api_v1_2_transform_layout);
MT_STATIC_ASSERT(offsetof(mt_host_api, search_num_design_spaces) / sizeof(void*) == 143,
                 host_api_v1_3_search_start);
MT_STATIC_ASSERT(offsetof(mt_host_api, candidate_list_push) / sizeof(void*) == 161,
                 host_api_v1_3_search_end);
MT_STATIC_ASSERT(offsetof(mt_host_api, trace_attr_ints) / sizeof(void*) == 162,
                 host_api_v1_4_trace_attr_ints);
MT_STATIC_ASSERT(offsetof(mt_host_api, trace_num_inputs) / sizeof(void*) == 164,
                 host_api_v1_4_trace_num_inputs);
MT_STATIC_ASSERT(offsetof(mt_host_api, layer_param_push) / sizeof(void*) == 165,
                 host_api_v1_5_layer_start);
MT_STATIC_ASSERT(offsetof(mt_host_api, layer_call_child) / sizeof(void*) == 169,
                 host_api_v1_5_layer_end);
MT_STATIC_ASSERT(offsetof(mt_host_api, layer_positions) / sizeof(void*) == 170,
                 host_api_v1_7_positions);
MT_STATIC_ASSERT(offsetof(mt_host_api, layer_state_append) / sizeof(void*) == 171,
                 host_api_v1_7_state_append);
MT_STATIC_ASSERT(offsetof(mt_host_api, layer_state_write) / sizeof(void*) == 172,
                 host_api_v1_9_state_write);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* METATUNE_PLUGIN_API_HOST_API_H */
