/* What a plugin implements: one function table per component kind, and the descriptor through
 * which a plugin registers a component (a name plus a factory). A component instance is an
 * opaque `self` pointer created by the factory and destroyed by the table's `release`; the
 * host keeps the plugin loaded while any instance lives. An instance is used by one thread at
 * a time (the host creates one per worker thread if it needs more).
 *
 * Every callback returns mt_status; on failure it sets the message with
 * host_api->set_last_error. No callback may let a C++ exception escape. Tables, like every
 * struct here, start with struct_size/struct_version and only grow; the host treats a
 * function past the plugin's struct_size as absent (MT_HAS_FIELD). Optional entries may be
 * NULL. */
#ifndef METATUNE_PLUGIN_API_COMPONENTS_H
#define METATUNE_PLUGIN_API_COMPONENTS_H

#include "metatune/plugin_api/host_api.h"
#include "metatune/plugin_api/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A schedule rule: applied to each block of a design space (post-order); writes a small
 * probabilistic program with sampling instructions and transformations. It may modify `sch`
 * and push it back, push copies (forks), or push nothing (the block is then dropped from the
 * space). Pushing `sch` unmodified means "not applicable". */
typedef struct mt_schedule_rule_vtable {
  uint32_t struct_size;
  uint32_t struct_version;
  void (*release)(void* self);
  mt_status (*initialize)(void* self, const mt_tune_context* ctx); /* optional */
  mt_status (*apply)(void* self, mt_schedule* sch, mt_block_rv block, mt_schedule_list* out);
  /* End of version 1 - DO NOT MODIFY ABOVE */
} mt_schedule_rule_vtable;
MT_STATIC_ASSERT(offsetof(mt_schedule_rule_vtable, apply) / sizeof(void*) == 3, schedule_rule_v1);

/* A mutator: proposes a neighbour of a trace by changing decisions. *out = NULL (with MT_OK)
 * means there was nothing to mutate. */
typedef struct mt_mutator_vtable {
  uint32_t struct_size;
  uint32_t struct_version;
  void (*release)(void* self);
  mt_status (*initialize)(void* self, const mt_tune_context* ctx); /* optional */
  mt_status (*apply)(void* self, const mt_trace* trace, mt_rng* rng, mt_trace** out);
  /* End of version 1 - DO NOT MODIFY ABOVE */
} mt_mutator_vtable;
MT_STATIC_ASSERT(offsetof(mt_mutator_vtable, apply) / sizeof(void*) == 3, mutator_v1);

/* A postprocessor: validates or rewrites a sampled schedule. MT_OK accepts (possibly after
 * rewriting `sch` in place), MT_ERROR_REJECTED rejects the candidate with a reason. */
typedef struct mt_postproc_vtable {
  uint32_t struct_size;
  uint32_t struct_version;
  void (*release)(void* self);
  mt_status (*initialize)(void* self, const mt_tune_context* ctx); /* optional */
  mt_status (*apply)(void* self, mt_schedule* sch);
  /* End of version 1 - DO NOT MODIFY ABOVE */
} mt_postproc_vtable;
MT_STATIC_ASSERT(offsetof(mt_postproc_vtable, apply) / sizeof(void*) == 3, postproc_v1);

/* A cost model: higher score = predicted faster. */
typedef struct mt_cost_model_vtable {
  uint32_t struct_size;
  uint32_t struct_version;
  void (*release)(void* self);
  mt_status (*initialize)(void* self, const mt_tune_context* ctx); /* optional */
  mt_status (*predict)(void* self, mt_schedule* const* candidates, size_t n, double* out_scores);
  mt_status (*update)(void* self, mt_schedule* const* candidates, size_t n,
                      const double* run_seconds);
  /* End of version 1 - DO NOT MODIFY ABOVE */

  /* Version 1.1 (optional; NULL or absent = unsupported): persistence of what the model has
   * learnt, so that a later run starts from it and keeps learning. `path` is a NUL-terminated
   * file name; a failure (unreadable, not this model's format) names the path. */
  mt_status (*save)(void* self, const char* path);
  mt_status (*load)(void* self, const char* path);
  /* End of version 1.1 - DO NOT MODIFY ABOVE */
} mt_cost_model_vtable;
MT_STATIC_ASSERT(offsetof(mt_cost_model_vtable, update) / sizeof(void*) == 4, cost_model_v1);
MT_STATIC_ASSERT(offsetof(mt_cost_model_vtable, save) / sizeof(void*) == 5, cost_model_v1_1_save);
MT_STATIC_ASSERT(offsetof(mt_cost_model_vtable, load) / sizeof(void*) == 6, cost_model_v1_1_load);

/* A search strategy: proposes candidates from the design spaces and learns from results.
 * Version 1 hands the strategy bare design-space schedules (generate/notify). Version 1.3
 * gives it the task's search context instead, through which it samples, mutates and scores
 * (host_api.h): start once per task, then next_batch / notify_measured in turn. A strategy
 * that has start must have next_batch and notify_measured; the host then never calls
 * generate/notify (which may be NULL). */
typedef struct mt_search_strategy_vtable {
  uint32_t struct_size;
  uint32_t struct_version;
  void (*release)(void* self);
  mt_status (*initialize)(void* self, const mt_tune_context* ctx); /* optional */
  mt_status (*generate)(void* self, mt_schedule* const* design_spaces, size_t num_spaces,
                        mt_rng* rng, size_t max_candidates, mt_schedule_list* out);
  mt_status (*notify)(void* self, mt_schedule* const* measured, size_t n,
                      const double* run_seconds);
  /* End of version 1 - DO NOT MODIFY ABOVE */

  /* Version 1.3. `ctx` stays valid until release. next_batch pushes at most `n` candidates,
   * none measured or proposed before; fewer (or none) when the space is exhausted.
   * notify_measured gets the candidates of the last batch that were measured, with their
   * run times (+inf: failed). */
  mt_status (*start)(void* self, mt_search_context* ctx);
  mt_status (*next_batch)(void* self, size_t n, mt_candidate_list* out);
  mt_status (*notify_measured)(void* self, const mt_candidate* const* measured, size_t n,
                               const double* run_seconds);
  /* End of version 1.3 - DO NOT MODIFY ABOVE */
} mt_search_strategy_vtable;
MT_STATIC_ASSERT(offsetof(mt_search_strategy_vtable, notify) / sizeof(void*) == 4,
                 search_strategy_v1);
MT_STATIC_ASSERT(offsetof(mt_search_strategy_vtable, notify_measured) / sizeof(void*) == 7,
                 search_strategy_v1_3);

/* A compiled program made by a target. The module owns itself: `release` frees it. */
typedef struct mt_module {
  uint32_t struct_size;
  uint32_t struct_version;
  void* self;
  void (*release)(void* self);
  /* Runs once with args bound to the program's params in order. */
  mt_status (*run)(void* self, const mt_tensor* args, size_t num_args);
  /* Measures `repeats` times; each repeat runs at least min_repeat_seconds (several calls
   * averaged). out_seconds has `repeats` entries: seconds per call. */
  mt_status (*time)(void* self, const mt_tensor* args, size_t num_args, int32_t repeats,
                    double min_repeat_seconds, double* out_seconds);
  /* End of version 1 - DO NOT MODIFY ABOVE */

  /* Version 1.8 (optional; NULL or absent: every param is read as the program declares it).
   * Prepacked params: a param that holds the same values at every call (a model's weight) may
   * be handed to the module in a layout of its own, made once, instead of being repacked
   * inside every call (oneDNN's matmul repacks a [N, K] weight in every call).
   * `packed_layout`: MT_OK when param `param` can be given packed, with the bytes it takes
   * and a key naming the layout and what of the param it holds -- equal keys for the same
   * values mean equal packed bytes, so modules may share one copy (the text lives as long
   * as `self`); MT_ERROR_UNSUPPORTED when it cannot. `pack` writes the packed form of `src`
   * (the param as declared) into `dst` (`out_bytes` bytes, 64-byte aligned). `run_packed` is
   * `run` with packed[i] != 0 for each arg given in its packed layout (its data pointer is
   * then the packed bytes; dtype and shape are the declared ones). The module keeps no state
   * between calls: callers may mix packed and plain calls. */
  mt_status (*packed_layout)(void* self, size_t param, size_t* out_bytes, mt_str* out_key);
  mt_status (*pack)(void* self, size_t param, const void* src, void* dst);
  mt_status (*run_packed)(void* self, const mt_tensor* args, size_t num_args,
                          const uint8_t* packed);
  /* End of version 1.8 - DO NOT MODIFY ABOVE */
} mt_module;
MT_STATIC_ASSERT(offsetof(mt_module, time) / sizeof(void*) == 4, module_v1);
MT_STATIC_ASSERT(offsetof(mt_module, run_packed) / sizeof(void*) == 7, module_v1_8);

/* A hardware target: describes the device, offers its default search components, builds
 * lowered programs into runnable modules. */
typedef struct mt_target_vtable {
  uint32_t struct_size;
  uint32_t struct_version;
  void (*release)(void* self);
  /* Device description as a JSON object ({"kind": "llvm", "num_cores": 16,
   * "vector_bytes": 64, ...}); the text lives as long as `self`. */
  mt_status (*describe)(void* self, mt_str* out_json);
  /* Names of the components of `kind` this target uses by default, in order of application;
   * the array and strings live as long as `self`. */
  mt_status (*default_components)(void* self, mt_component_kind kind, const mt_str** names,
                                  size_t* count);
  /* Builds a lowered program; fills `out` (whose struct_size the host has set). */
  mt_status (*build)(void* self, const mt_program* program, mt_module* out);
  /* End of version 1 - DO NOT MODIFY ABOVE */

  /* Version 1.6 (optional; NULL or absent: the target cannot): ahead-of-time output. Writes
   * `programs` as ONE shared library at `path` that an application loads (dlopen) and calls
   * without metatune or the target's compiler, programs[i] exported under the C symbol
   * symbols[i]. `out_descriptor` receives JSON (the text lives as long as `self`, until the
   * next call) saying how to call them:
   *   {"format": "metatune-kernel-library", "version": 1,
   *    "abi": "mt_llvm_kernel",              the calling convention, named by the target
   *    "runtime": {"kind": "mt_llvm_runtime", "version": 1},  services the kernels call
   *                                           (absent or null: none)
   *    "target": "...",                       what the code was generated for
   *    "kernels": [{"symbol": "...", "params": [{"name": "A", "dtype": "f32",
   *                 "shape": [4, 8], "bytes": 128, "output": false}, ...]}, ...]}
   * in the order of `programs`; params in the program's order. MT_ERROR_UNSUPPORTED: the
   * target does not export libraries, or not these programs (the message says which). */
  mt_status (*export_library)(void* self, const mt_program* const* programs, const mt_str* symbols,
                              size_t count, mt_str path, mt_str* out_descriptor);
  /* End of version 1.6 - DO NOT MODIFY ABOVE */

  /* Version 1.10 (optional; NULL or absent: the host calls export_library): export_library
   * told which params are weights -- `weights[i]` (NULL: none) holds one byte per param of
   * programs[i], nonzero where the application passes a constant weight, as a module's
   * packed_layout (1.8) is asked only for a model's weights. The target may then export, besides
   * programs[i] under symbols[i], a variant reading some of those weights packed once, and the
   * programs packing them, and says so in the kernel's descriptor entry:
   *   "packed": {"symbol": "...",            the variant (same params, same order)
   *              "params": [{"param": 1, "bytes": 4096, "key": "...",
   *                          "pack": "SYMBOL" or "bf16"}]}
   * where "pack": SYMBOL is a kernel of the library taking [the weight as declared, the packed
   * bytes] and "bf16" means the weight rounded to bf16 (nearest even), row-major. */
  mt_status (*export_library_weights)(void* self, const mt_program* const* programs,
                                      const uint8_t* const* weights, const mt_str* symbols,
                                      size_t count, mt_str path, mt_str* out_descriptor);
  /* End of version 1.10 - DO NOT MODIFY ABOVE */
} mt_target_vtable;
MT_STATIC_ASSERT(offsetof(mt_target_vtable, build) / sizeof(void*) == 4, target_v1);
MT_STATIC_ASSERT(offsetof(mt_target_vtable, export_library) / sizeof(void*) == 5, target_v1_6);
MT_STATIC_ASSERT(offsetof(mt_target_vtable, export_library_weights) / sizeof(void*) == 6,
                 target_v1_10);

/* A model layer: builds its computation as tensor expressions. */
typedef struct mt_layer_vtable {
  uint32_t struct_size;
  uint32_t struct_version;
  void (*release)(void* self);
  mt_status (*forward)(void* self, mt_te_builder* builder, const mt_te_tensor* const* inputs,
                       size_t num_inputs, const mt_te_tensor** outputs, size_t capacity,
                       size_t* num_outputs);
  /* End of version 1 - DO NOT MODIFY ABOVE */

  /* Version 1.5: a layer of a model config tree (docs/models.md). The instance is created
   * (component create) with its node of the config tree as JSON: {"kind": NAME, field: value,
   * ..., child: {"kind": ...}}, fields already checked against the schema, defaults filled in,
   * dimensions pushed down from the parent.
   *
   * `schema`: the config fields, static JSON (NUL-terminated):
   *   {"doc": "one line",
   *    "fields": [{"name": "input_dim", "type": "int", "required": true, "doc": "..."},
   *               {"name": "eps", "type": "float", "default": 1e-5, "doc": "..."},
   *               {"name": "attention", "type": "layer", "default": {"kind": "..."}},
   *               {"name": "layers", "type": "layer_list"}, ...],
   *    "push_down": {"input_dim": ["attention.input_dim", "feed_forward.input_dim"]}}
   * types: int, float, bool, string, int_list, float_list, layer, layer_list. push_down names
   * fields of children that always take the parent's value (the dimensions they share). */
  const char* schema;
  /* Declares the configured instance's parameters (layer_param_push; optional: none). */
  mt_status (*parameters)(void* self, mt_layer_param_list* out);
  /* Builds the outputs from the inputs with the context's builder, parameters (layer_param)
   * and children (layer_call_child). */
  mt_status (*build)(void* self, mt_layer_context* ctx, const mt_te_tensor* const* inputs,
                     size_t num_inputs, const mt_te_tensor** outputs, size_t capacity,
                     size_t* num_outputs);
  /* End of version 1.5 - DO NOT MODIFY ABOVE */
} mt_layer_vtable;
MT_STATIC_ASSERT(offsetof(mt_layer_vtable, forward) / sizeof(void*) == 2, layer_v1);
MT_STATIC_ASSERT(offsetof(mt_layer_vtable, build) / sizeof(void*) == 5, layer_v1_5);

/* One component a plugin registers. `name` is unique per kind across all loaded plugins
 * (convention: "vendor.Name"). Strings are NUL-terminated and static (they live as long as
 * the library). */
typedef struct mt_component_desc {
  uint32_t struct_size;
  uint32_t struct_version;
  mt_component_kind kind;
  const char* name;
  const char* description;
  /* Creates an instance configured by `config` (JSON text; empty = defaults). */
  mt_status (*create)(const mt_host_api* api, mt_str config, void** out_self);
  /* The table matching `kind`. */
  union {
    const void* any;
    const mt_schedule_rule_vtable* schedule_rule;
    const mt_mutator_vtable* mutator;
    const mt_postproc_vtable* postproc;
    const mt_cost_model_vtable* cost_model;
    const mt_search_strategy_vtable* search_strategy;
    const mt_target_vtable* target;
    const mt_layer_vtable* layer;
  } vtable;
  /* End of version 1 - DO NOT MODIFY ABOVE */

  /* Version 1.3 (optional; NULL, empty or absent = none): a declaration that this component
   * joins the default set of components of some targets, so that installing the plugin is
   * enough to bring it into their tuning runs. Schedule rules, mutators and postprocessors
   * only. A JSON object, NUL-terminated and static:
   *   {"targets": ["llvm"],        device kinds (a target's describe() "kind") or target
   *                                component names ("llvm.cpu"); "*" = every target
   *    "probability": 0.1,         mutators (required there): selection weight
   *    "config": {...}}            optional: the configuration the joined instance gets
   * The host refuses a plugin whose declaration is malformed. */
  const char* joins_defaults;
  /* End of version 1.3 - DO NOT MODIFY ABOVE */
} mt_component_desc;
MT_STATIC_ASSERT(offsetof(mt_component_desc, vtable) / sizeof(void*) == 5, component_desc_v1);
MT_STATIC_ASSERT(offsetof(mt_component_desc, joins_defaults) / sizeof(void*) == 6,
                 component_desc_v1_3);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* METATUNE_PLUGIN_API_COMPONENTS_H */
