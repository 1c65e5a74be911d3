/* Basic types of the metatune plugin ABI: versions, status codes, strings, opaque handles,
 * random-variable ids, element types and the DLPack-style tensor descriptor. Plain C99; every
 * enum crosses the boundary as int32_t, every struct starts with its size and version. */
#ifndef METATUNE_PLUGIN_API_TYPES_H
#define METATUNE_PLUGIN_API_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "metatune/plugin_api/ir_vocabulary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions ------------------------------------------------------------------------------
 * One number for the whole ABI: major.minor packed as (major << 16) | minor. A host accepts a
 * plugin built for the same major and a minor no newer than its own: structs and tables only
 * grow within a major, so an older plugin sees a prefix of what it knows. */
#define MT_PLUGIN_ABI_VERSION_MAJOR 1
#define MT_PLUGIN_ABI_VERSION_MINOR                                                                \
  10 /* 1.1: schedule_features, cost-model save/load;                                              \
     1.2: program_partition_loops, transform_layout;                                               \
     1.3: search strategies on a search context,                                                   \
          component_desc.joins_defaults;                                                           \
     1.4: trace_attr_ints, trace_attr_str,                                                         \
          trace_num_inputs;                                                                        \
     1.5: model layers (schema, parameters, build on                                               \
          a layer context);                                                                        \
     1.6: target export_library (ahead-of-time                                                     \
          kernel libraries);                                                                       \
     1.7: layer_positions, layer_state_append                                                      \
          (generation with a KV cache);                                                            \
     1.8: module packed_layout, pack, run_packed                                                   \
          (prepacked weights);                                                                     \
     1.9: layer_state_write (a decode step's rows                                                  \
          written into the cache before it is read);                                               \
     1.10: target export_library_weights (libraries                                                \
          whose kernels read weights packed once) */
#define MT_MAKE_ABI_VERSION(major, minor)                                                          \
  ((((uint32_t)(major)) << 16) | ((uint32_t)(minor)&0xffffu))
#define MT_ABI_VERSION_MAJOR(v) (((uint32_t)(v)) >> 16)
#define MT_ABI_VERSION_MINOR(v) (((uint32_t)(v)) & 0xffffu)
#define MT_PLUGIN_ABI_VERSION                                                                      \
  MT_MAKE_ABI_VERSION(MT_PLUGIN_ABI_VERSION_MAJOR, MT_PLUGIN_ABI_VERSION_MINOR)

/* Whether a struct that starts with `struct_size` (as filled in by the other side, possibly an
 * older build) contains `field`. Read a field only when this holds; absent fields are NULL/0. */
#define MT_HAS_FIELD(ptr, type, field)                                                             \
  ((ptr) != NULL && (size_t)(ptr)->struct_size >= offsetof(type, field) + sizeof((ptr)->field))

/* Compile-time checks that also work in C99 (no _Static_assert there). */
#ifdef __cplusplus
#define MT_STATIC_ASSERT(cond, name) static_assert(cond, #name)
#else
#define MT_STATIC_ASSERT(cond, name) typedef char mt_static_assert_##name[(cond) ? 1 : -1]
#endif

/* Symbol visibility of the one exported entry point (plugins are built -fvisibility=hidden). */
#if defined(_WIN32)
#define MT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define MT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---- status codes --------------------------------------------------------------------------
 * Every fallible function returns an mt_status; on failure the message is in the calling
 * thread's last-error slot (host_api->last_error()). */
typedef int32_t mt_status;
enum {
  MT_OK = 0,
  MT_ERROR_UNKNOWN = 1,          /* failure without a more specific code */
  MT_ERROR_INVALID_ARGUMENT = 2, /* null/stale handle, bad enum, wrong count */
  MT_ERROR_SCHEDULE = 3,         /* a schedule primitive refused: illegal transformation */
  MT_ERROR_OUT_OF_RANGE = 4,     /* index past the end */
  MT_ERROR_NOT_FOUND = 5,        /* no block/attribute/component of that name */
  MT_ERROR_UNSUPPORTED = 6,      /* not implemented by this host or component */
  MT_ERROR_VERSION = 7,          /* ABI version negotiation failed */
  MT_ERROR_BUFFER_TOO_SMALL = 8, /* output array too small; the count holds what is needed */
  MT_ERROR_REJECTED = 9,         /* a postprocessor rejects the candidate (not a failure) */
  MT_ERROR_PLUGIN = 10,          /* a plugin callback failed (e.g. threw; the SDK caught it) */
  MT_ERROR_INTERNAL = 11         /* unexpected failure inside the host: a bug */
};

static inline const char* mt_status_name(mt_status s) {
  switch (s) {
  case MT_OK:
    return "ok";
  case MT_ERROR_UNKNOWN:
    return "error";
  case MT_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case MT_ERROR_SCHEDULE:
    return "schedule error";
  case MT_ERROR_OUT_OF_RANGE:
    return "out of range";
  case MT_ERROR_NOT_FOUND:
    return "not found";
  case MT_ERROR_UNSUPPORTED:
    return "unsupported";
  case MT_ERROR_VERSION:
    return "version mismatch";
  case MT_ERROR_BUFFER_TOO_SMALL:
    return "buffer too small";
  case MT_ERROR_REJECTED:
    return "rejected";
  case MT_ERROR_PLUGIN:
    return "plugin failure";
  case MT_ERROR_INTERNAL:
    return "internal error";
  default:
    return "unknown status";
  }
}

/* ---- strings -------------------------------------------------------------------------------
 * Pointer + length, not necessarily NUL-terminated. Strings returned by the host are borrowed:
 * they live as long as the handle they were read from, unless a function says otherwise. */
typedef struct mt_str {
  const char* data;
  size_t size;
} mt_str;

#ifdef __cplusplus
#define MT_STR(literal) (mt_str{(literal), sizeof(literal) - 1})
#else
#define MT_STR(literal) ((mt_str){(literal), sizeof(literal) - 1})
#endif

/* ---- opaque handles ------------------------------------------------------------------------
 * Owned handles (schedule, program, trace, te_builder) are reference counted through the host
 * table (retain/release). Node handles (stmt, expr, buffer) are borrowed from the handle they
 * came from and stay valid as long as it does. */
typedef struct mt_schedule_s mt_schedule;           /* a schedule: function + trace + rng */
typedef struct mt_schedule_list_s mt_schedule_list; /* output of a rule: the forks */
typedef struct mt_trace_s mt_trace;                 /* a recorded schedule program */
typedef struct mt_rng_s mt_rng;                     /* a deterministic random engine */
typedef struct mt_program_s mt_program;             /* a (lowered) function, read-only */
typedef struct mt_stmt_s mt_stmt;                   /* statement node, borrowed */
typedef struct mt_expr_s mt_expr;                   /* expression node, borrowed */
typedef struct mt_buffer_s mt_buffer;               /* buffer node, borrowed */
typedef struct mt_te_builder_s mt_te_builder;       /* arena for tensor-expression building */
typedef struct mt_te_tensor_s mt_te_tensor;         /* a tensor of a te_builder, borrowed */
typedef struct mt_tune_context_s mt_tune_context;   /* target attributes for initialisation */
/* 1.3: what a search strategy searches with (one task's design spaces, postprocessors,
 * mutators, cost model, measured records), owned by the host; and a candidate it sampled: a
 * post-processed schedule with the trace it came from and its structural hash. */
typedef struct mt_search_context_s mt_search_context;
typedef struct mt_candidate_s mt_candidate;           /* reference counted (candidate_retain) */
typedef struct mt_candidate_list_s mt_candidate_list; /* output of a strategy's next_batch */
/* 1.5: what a model layer builds with: its parameters, its children and the tensor-expression
 * builder of the model being instantiated (owned by the host, borrowed for one call); and the
 * list a layer declares its parameters into. */
typedef struct mt_layer_context_s mt_layer_context;
typedef struct mt_layer_param_list_s mt_layer_param_list;

/* ---- schedule random variables ---------------------------------------------------------------
 * Ids into a schedule's symbol table; valid in the schedule and in every copy made after them. */
typedef struct mt_block_rv {
  int32_t id;
} mt_block_rv;
typedef struct mt_loop_rv {
  int32_t id; /* MT_LOOP_ROOT / MT_LOOP_INLINED for the special compute locations */
} mt_loop_rv;
typedef struct mt_expr_rv {
  int32_t id;
} mt_expr_rv;
#define MT_LOOP_ROOT (-1)
#define MT_LOOP_INLINED (-2)

/* A split factor: a constant (-1 = inferred from the others) or a sampled value. */
typedef struct mt_factor {
  int32_t is_rv; /* 0: use `constant`; 1: use `rv` */
  mt_expr_rv rv;
  int64_t constant;
} mt_factor;

/* An annotation value: an integer or a string. */
typedef int32_t mt_ann_kind;
enum { MT_ANN_INT = 0, MT_ANN_STRING = 1 };
typedef struct mt_ann_value {
  mt_ann_kind kind;
  int64_t int_value;
  mt_str str_value;
} mt_ann_value;

/* Loop annotation of a lowered program: lowering's automatic unrolling asks for this serial
 * loop to be unrolled by hint (pragma_unroll_explicit = 0 on an enclosing loop; value 1). A code
 * generator unrolls it with its own means where it can (LLVM: llvm.loop.unroll.full) and may
 * keep it a loop. Explicit requests arrive as MT_FOR_UNROLLED loops instead. (Core and the
 * SDK's program tree spell it kUnrollHintAnnotation, checked equal to this.) */
#define MT_LOOP_UNROLL_HINT "pragma_unroll_hint"

/* Loop annotations of software pipelining. A schedule rule asks for it with
 * MT_LOOP_SOFTWARE_PIPELINE_STAGES = S (S >= 2) on a serial loop whose body fills shared buffers
 * and then reads them (a GPU k-tile). Lowering then fetches S-1 iterations ahead into S slots
 * of each buffer: the loop keeps the annotation (S as applied), a prologue loop carrying
 * MT_LOOP_SOFTWARE_PIPELINE_PROLOGUE = S fills the first S-1 slots, and the top loop of each
 * fetch carries MT_LOOP_SOFTWARE_PIPELINE_ASYNC_COPY = 1. Inside the pipelined loop the body's
 * first statement is the guarded fetch ahead; the rest reads the current slot. A GPU generator
 * may issue the marked copies asynchronously (one group per prologue iteration and per loop
 * iteration, the oldest waited for after the fetch ahead, before the barrier that precedes the
 * reads); written as plain copies the program is the same. Where lowering cannot apply a request
 * the annotation is removed. (Core and the SDK spell them kSoftwarePipeline*, checked equal.) */
#define MT_LOOP_SOFTWARE_PIPELINE_STAGES "software_pipeline_stages"
#define MT_LOOP_SOFTWARE_PIPELINE_PROLOGUE "software_pipeline_prologue"
#define MT_LOOP_SOFTWARE_PIPELINE_ASYNC_COPY "software_pipeline_async_copy"
/* MT_LOOP_SOFTWARE_PIPELINE_SPARE_SLOTS = n (n >= 1), beside the stages on the same loop: n
 * slots more than the S, the fetch still S-1 iterations ahead, so that the slot a fetch
 * overwrites was last read n+1 iterations before, not 1 -- room for consumers whose reads finish
 * after their iteration (Hopper's warpgroup MMA reads shared memory asynchronously). Lowering
 * keeps it on the pipelined loop, as applied. */
#define MT_LOOP_SOFTWARE_PIPELINE_SPARE_SLOTS "software_pipeline_spare_slots"

/* ---- IR enums ---------------------------------------------------------------------------------
 * mt_dtype_code, mt_stmt_kind, mt_expr_kind, mt_math_fn, mt_for_kind, mt_iter_kind and
 * mt_reduce_kind with their MT_DTYPE_ / MT_STMT_ / MT_EXPR_ / MT_MATH_ / MT_FOR_ / MT_ITER_ /
 * MT_REDUCE_ values are made from the lists in ir_vocabulary.h (one source for C, core and the
 * SDK; values frozen). */
typedef struct mt_dtype {
  uint8_t code; /* mt_dtype_code */
  uint8_t bits;
  uint16_t lanes; /* always 1 in the IR */
} mt_dtype;

/* ---- analysis results ------------------------------------------------------------------------ */

/* One iteration variable of a block. */
typedef struct mt_iter_var_info {
  uint32_t struct_size;
  uint32_t struct_version;
  mt_iter_kind kind;
  int64_t extent;
  const mt_expr* var;   /* the iter var (a Var expression) */
  const mt_expr* value; /* the expression of enclosing loop vars bound to it */
} mt_iter_var_info;

/* Every access of one buffer by a block: `num_accesses` index tuples of `ndim` expressions,
 * stored access-major (indices[a * ndim + d]). Reads are loads, writes are stores. */
typedef struct mt_buffer_access {
  uint32_t struct_size;
  uint32_t struct_version;
  const mt_buffer* buffer;
  size_t ndim;
  size_t num_accesses;
  const mt_expr* const* indices;
} mt_buffer_access;

/* ---- tensors (DLPack-style) ------------------------------------------------------------------ */
typedef int32_t mt_device_type;
enum { MT_DEVICE_CPU = 1, MT_DEVICE_CUDA = 2, MT_DEVICE_ROCM = 10 };

typedef struct mt_tensor {
  uint32_t struct_size;
  uint32_t struct_version;
  void* data;
  mt_device_type device_type;
  int32_t device_id;
  mt_dtype dtype;
  int32_t ndim;
  const int64_t* shape;
  const int64_t* strides; /* in elements; NULL = compact row-major */
  uint64_t byte_offset;
} mt_tensor;

/* ---- component kinds ------------------------------------------------------------------------- */
typedef int32_t mt_component_kind;
enum {
  MT_COMPONENT_SCHEDULE_RULE = 0,
  MT_COMPONENT_MUTATOR = 1,
  MT_COMPONENT_POSTPROC = 2,
  MT_COMPONENT_COST_MODEL = 3,
  MT_COMPONENT_SEARCH_STRATEGY = 4,
  MT_COMPONENT_TARGET = 5,
  MT_COMPONENT_LAYER = 6,
  MT_COMPONENT_KIND_COUNT = 7 /* grows when a kind is added */
};

static inline const char* mt_component_kind_name(mt_component_kind k) {
  switch (k) {
  case MT_COMPONENT_SCHEDULE_RULE:
    return "schedule_rule";
  case MT_COMPONENT_MUTATOR:
    return "mutator";
  case MT_COMPONENT_POSTPROC:
    return "postproc";
  case MT_COMPONENT_COST_MODEL:
    return "cost_model";
  case MT_COMPONENT_SEARCH_STRATEGY:
    return "search_strategy";
  case MT_COMPONENT_TARGET:
    return "target";
  case MT_COMPONENT_LAYER:
    return "layer";
  default:
    return "unknown";
  }
}

/* Log levels for host_api->log. */
typedef int32_t mt_log_level;
enum { MT_LOG_DEBUG = 0, MT_LOG_INFO = 1, MT_LOG_WARNING = 2, MT_LOG_ERROR = 3 };

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* METATUNE_PLUGIN_API_TYPES_H */
