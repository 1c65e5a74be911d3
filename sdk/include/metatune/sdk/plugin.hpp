// Registration: METATUNE_PLUGIN defines the plugin's entry point and marker section, and a
// Registry through which the plugin adds its component classes. The function tables that
// the host calls are generated here per class; each one catches every exception.
//
//   METATUNE_PLUGIN("my_rules", "1.0", "Rules for my accelerator") {
//     registry.add<MyTilingRule>("acme.Tiling", "tiles matmuls for the ACME unit");
//   }
#pragma once

#include <charconv>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "metatune/sdk/components.hpp"
#include "metatune/sdk/error.hpp"
#include "metatune/sdk/search.hpp"

namespace mt::sdk {

class ModelLayer; // layer.hpp

namespace detail {

// layer.hpp: the function table of a model layer (ABI 1.5).
template <typename T> const mt_layer_vtable* model_layer_table();

// What the host's `self` pointer is for an SDK component: the object plus storage for data
// whose lifetime the ABI ties to the instance (strings returned to the host).
template <typename T> struct Instance {
  std::unique_ptr<T> object;
  std::string text;
  std::vector<std::string> names;
  std::vector<mt_str> name_refs;
};

template <typename T> T& object(void* self) {
  return *static_cast<Instance<T>*>(self)->object;
}

template <typename T> mt_status create(const mt_host_api*, mt_str config, void** out) {
  return guard([&] {
    std::string_view cfg(config.data ? config.data : "", config.size);
    std::unique_ptr<T> obj;
    if constexpr (std::is_constructible_v<T, std::string_view>) {
      obj = std::make_unique<T>(cfg);
    } else {
      if (!cfg.empty())
        throw Error(MT_ERROR_INVALID_ARGUMENT, "this component takes no configuration");
      obj = std::make_unique<T>();
    }
    *out = new Instance<T>{std::move(obj), {}, {}, {}};
  });
}

template <typename T> void release(void* self) {
  delete static_cast<Instance<T>*>(self);
}

template <typename T> mt_status initialize(void* self, const mt_tune_context* ctx) {
  return guard([&] { object<T>(self).initialize(TuneContext(ctx)); });
}

inline std::vector<Schedule> borrow_all(mt_schedule* const* schs, size_t n) {
  std::vector<Schedule> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(Schedule::borrow(schs[i]));
  return out;
}

inline void push_all(mt_schedule_list* list, const std::vector<Schedule>& schs) {
  for (const Schedule& s : schs)
    check(api().schedule_list_push(list, s.get()));
}

inline std::vector<TensorView> views(const mt_tensor* args, size_t n) {
  std::vector<TensorView> out;
  for (size_t i = 0; i < n; ++i) {
    TensorView v;
    v.data = static_cast<char*>(args[i].data) + args[i].byte_offset;
    v.dtype = from_c(args[i].dtype);
    v.shape.assign(args[i].shape, args[i].shape + args[i].ndim);
    out.push_back(std::move(v));
  }
  return out;
}

// ---- function tables per kind ----

template <typename T> struct Tables;

template <typename T>
mt_status rule_apply(void* self, mt_schedule* sch, mt_block_rv block, mt_schedule_list* out) {
  return guard([&] {
    Schedule s = Schedule::borrow(sch);
    push_all(out, object<T>(self).apply(s, BlockRV{block.id}));
  });
}

template <typename T>
mt_status mutator_apply(void* self, const mt_trace* trace, mt_rng* rng, mt_trace** out) {
  return guard([&] {
    Rng r(rng);
    std::optional<Trace> t = object<T>(self).apply(Trace::borrow(trace), r);
    *out = t ? t->get() : nullptr;
    if (*out) api().trace_retain(*out); // the caller owns one reference
  });
}

template <typename T> mt_status postproc_apply(void* self, mt_schedule* sch) {
  return guard([&] {
    Schedule s = Schedule::borrow(sch);
    if (!object<T>(self).apply(s)) throw Rejected("rejected by the postprocessor");
  });
}

template <typename T>
mt_status cost_predict(void* self, mt_schedule* const* c, size_t n, double* out) {
  return guard([&] {
    std::vector<double> scores = object<T>(self).predict(borrow_all(c, n));
    if (scores.size() != n)
      throw Error("predict returned " + std::to_string(scores.size()) + " scores for " +
                  std::to_string(n) + " candidates");
    for (size_t i = 0; i < n; ++i)
      out[i] = scores[i];
  });
}

template <typename T>
mt_status cost_update(void* self, mt_schedule* const* c, size_t n, const double* secs) {
  return guard(
      [&] { object<T>(self).update(borrow_all(c, n), std::vector<double>(secs, secs + n)); });
}

template <typename T> mt_status cost_save(void* self, const char* path) {
  return guard([&] {
    if (!path) throw Error(MT_ERROR_INVALID_ARGUMENT, "save: path is NULL");
    object<T>(self).save(path);
  });
}

template <typename T> mt_status cost_load(void* self, const char* path) {
  return guard([&] {
    if (!path) throw Error(MT_ERROR_INVALID_ARGUMENT, "load: path is NULL");
    object<T>(self).load(path);
  });
}

template <typename T>
mt_status search_generate(void* self, mt_schedule* const* spaces, size_t n, mt_rng* rng, size_t max,
                          mt_schedule_list* out) {
  return guard([&] {
    Rng r(rng);
    push_all(out, object<T>(self).generate(borrow_all(spaces, n), r, max));
  });
}

template <typename T>
mt_status search_notify(void* self, mt_schedule* const* m, size_t n, const double* secs) {
  return guard(
      [&] { object<T>(self).notify(borrow_all(m, n), std::vector<double>(secs, secs + n)); });
}

template <typename T> mt_status search_start(void* self, mt_search_context* ctx) {
  return guard([&] { object<T>(self).start(SearchContext(ctx)); });
}

template <typename T> mt_status search_next_batch(void* self, size_t n, mt_candidate_list* out) {
  return guard([&] {
    std::vector<Candidate> batch = object<T>(self).next_batch(n);
    for (const Candidate& c : batch)
      if (c) check(api().candidate_list_push(out, c.get()));
  });
}

template <typename T>
mt_status search_notify_measured(void* self, const mt_candidate* const* m, size_t n,
                                 const double* secs) {
  return guard([&] {
    std::vector<Candidate> cs;
    for (size_t i = 0; i < n; ++i)
      cs.push_back(Candidate::borrow(m[i]));
    object<T>(self).notify_measured(cs, std::vector<double>(secs, secs + n));
  });
}

// Modules made by SDK targets.
struct ModuleBox {
  std::unique_ptr<Module> module;
  std::string key; // the last packed_layout's key, alive until the next call
};
inline void module_release(void* self) {
  delete static_cast<ModuleBox*>(self);
}
inline mt_status module_run(void* self, const mt_tensor* args, size_t n) {
  return guard([&] { static_cast<ModuleBox*>(self)->module->run(views(args, n)); });
}
inline mt_status module_time(void* self, const mt_tensor* args, size_t n, int32_t repeats,
                             double min_seconds, double* out) {
  return guard([&] {
    std::vector<double> t =
        static_cast<ModuleBox*>(self)->module->time(views(args, n), repeats, min_seconds);
    for (size_t i = 0; i < t.size() && i < static_cast<size_t>(repeats); ++i)
      out[i] = t[i];
  });
}

inline mt_status module_packed_layout(void* self, size_t param, size_t* bytes, mt_str* key) {
  return guard([&] {
    auto* box = static_cast<ModuleBox*>(self);
    std::optional<Module::PackedLayout> l = box->module->packed_layout(param);
    if (!l) throw Error(MT_ERROR_UNSUPPORTED, "param " + std::to_string(param) + " is not packed");
    box->key = std::move(l->key);
    *bytes = l->bytes;
    *key = to_mt_str(box->key);
  });
}
inline mt_status module_pack(void* self, size_t param, const void* src, void* dst) {
  return guard([&] { static_cast<ModuleBox*>(self)->module->pack(param, src, dst); });
}
inline mt_status module_run_packed(void* self, const mt_tensor* args, size_t n,
                                   const uint8_t* packed) {
  return guard([&] {
    static_cast<ModuleBox*>(self)->module->run_packed(views(args, n),
                                                      std::vector<uint8_t>(packed, packed + n));
  });
}

template <typename T> mt_status target_describe(void* self, mt_str* out) {
  return guard([&] {
    auto* inst = static_cast<Instance<T>*>(self);
    inst->text = inst->object->describe();
    *out = to_mt_str(inst->text);
  });
}

template <typename T>
mt_status target_defaults(void* self, mt_component_kind kind, const mt_str** names, size_t* count) {
  return guard([&] {
    auto* inst = static_cast<Instance<T>*>(self);
    inst->names = inst->object->default_components(static_cast<ComponentKind>(kind));
    inst->name_refs.clear();
    for (const auto& n : inst->names)
      inst->name_refs.push_back(to_mt_str(n));
    *names = inst->name_refs.data();
    *count = inst->name_refs.size();
  });
}

template <typename T>
mt_status target_build(void* self, const mt_program* program, mt_module* out) {
  return guard([&] {
    std::unique_ptr<Module> m = object<T>(self).build(Program::borrow(program));
    if (!m) throw Error("build returned no module");
    auto* box = new ModuleBox{std::move(m), {}};
    out->self = box;
    out->release = module_release;
    out->run = module_run;
    if (MT_HAS_FIELD(out, mt_module, time)) out->time = module_time;
    if (MT_HAS_FIELD(out, mt_module, run_packed)) {
      out->packed_layout = module_packed_layout;
      out->pack = module_pack;
      out->run_packed = module_run_packed;
    }
  });
}

template <typename T>
mt_status target_export(void* self, const mt_program* const* programs, const mt_str* symbols,
                        size_t count, mt_str path, mt_str* out) {
  return guard([&] {
    std::vector<Program> ps;
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
      ps.push_back(Program::borrow(programs[i]));
      names.emplace_back(symbols[i].data ? symbols[i].data : "", symbols[i].size);
    }
    auto* inst = static_cast<Instance<T>*>(self);
    inst->text =
        inst->object->export_library(ps, names, std::string(path.data ? path.data : "", path.size));
    *out = to_mt_str(inst->text);
  });
}

template <typename T>
mt_status target_export_weights(void* self, const mt_program* const* programs,
                                const uint8_t* const* weights, const mt_str* symbols, size_t count,
                                mt_str path, mt_str* out) {
  return guard([&] {
    std::vector<Program> ps;
    std::vector<std::vector<uint8_t>> flags;
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
      ps.push_back(Program::borrow(programs[i]));
      const size_t n = ps.back().params().size();
      flags.emplace_back(n, 0);
      if (weights && weights[i]) flags.back().assign(weights[i], weights[i] + n);
      names.emplace_back(symbols[i].data ? symbols[i].data : "", symbols[i].size);
    }
    auto* inst = static_cast<Instance<T>*>(self);
    inst->text = inst->object->export_library_weights(
        ps, flags, names, std::string(path.data ? path.data : "", path.size));
    *out = to_mt_str(inst->text);
  });
}

template <typename T>
mt_status layer_forward(void* self, mt_te_builder* b, const mt_te_tensor* const* inputs, size_t n,
                        const mt_te_tensor** outputs, size_t capacity, size_t* count) {
  return guard([&] {
    TensorBuilder builder(b);
    std::vector<TeTensor> ins;
    for (size_t i = 0; i < n; ++i)
      ins.emplace_back(&builder, inputs[i]);
    std::vector<TeTensor> outs = object<T>(self).forward(builder, ins);
    *count = outs.size();
    if (outs.size() > capacity)
      throw Error(MT_ERROR_BUFFER_TOO_SMALL, "forward has more outputs than the host expected");
    for (size_t i = 0; i < outs.size(); ++i)
      outputs[i] = outs[i].get();
  });
}

template <typename T>
inline const mt_schedule_rule_vtable kRuleTable = {sizeof(mt_schedule_rule_vtable), 1, release<T>,
                                                   initialize<T>, rule_apply<T>};
template <typename T>
inline const mt_mutator_vtable kMutatorTable = {sizeof(mt_mutator_vtable), 1, release<T>,
                                                initialize<T>, mutator_apply<T>};
template <typename T>
inline const mt_postproc_vtable kPostprocTable = {sizeof(mt_postproc_vtable), 1, release<T>,
                                                  initialize<T>, postproc_apply<T>};
template <typename T>
inline const mt_cost_model_vtable kCostModelTable = {sizeof(mt_cost_model_vtable),
                                                     1,
                                                     release<T>,
                                                     initialize<T>,
                                                     cost_predict<T>,
                                                     cost_update<T>,
                                                     cost_save<T>,
                                                     cost_load<T>};
template <typename T>
inline const mt_search_strategy_vtable kSearchTable = {sizeof(mt_search_strategy_vtable),
                                                       1,
                                                       release<T>,
                                                       initialize<T>,
                                                       search_generate<T>,
                                                       search_notify<T>,
                                                       nullptr,
                                                       nullptr,
                                                       nullptr};
template <typename T>
inline const mt_search_strategy_vtable kContextSearchTable = {sizeof(mt_search_strategy_vtable),
                                                              1,
                                                              release<T>,
                                                              initialize<T>,
                                                              nullptr,
                                                              nullptr,
                                                              search_start<T>,
                                                              search_next_batch<T>,
                                                              search_notify_measured<T>};
template <typename T>
inline const mt_target_vtable kTargetTable = {sizeof(mt_target_vtable),
                                              1,
                                              release<T>,
                                              target_describe<T>,
                                              target_defaults<T>,
                                              target_build<T>,
                                              target_export<T> /* 1.6 */,
                                              target_export_weights<T> /* 1.10 */};
template <typename T>
inline const mt_layer_vtable kLayerTable = {
    sizeof(mt_layer_vtable), 1, release<T>, layer_forward<T>,
    nullptr /* 1.5 schema */, nullptr /* parameters */, nullptr /* build */};

} // namespace detail

// A declaration that a schedule rule, mutator or postprocessor joins the default components of
// some targets (ABI 1.3): with it, installing the plugin is enough to bring the component into
// every tuning run on those targets (a user still drops it with `--rules -NAME`).
struct JoinDefaults {
  // Device kinds (a target's describe() "kind": "llvm", "cuda", ...) or target component names
  // ("llvm.cpu"); "*" = every target.
  std::vector<std::string> targets;
  double probability = 0; // mutators: selection weight among the target's mutators (required)
  std::string config;     // JSON object the joined instance is created with; empty = defaults

  // The declaration's JSON text (mt_component_desc.joins_defaults).
  std::string to_json() const {
    std::string out = "{\"targets\": [";
    for (size_t i = 0; i < targets.size(); ++i)
      out += (i ? ", " : "") + quoted(targets[i]);
    out += "]";
    if (probability != 0) {
      // Shortest exact form, independent of the C locale.
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof buf, probability);
      out += ", \"probability\": " + std::string(buf, r.ptr);
    }
    if (!config.empty()) out += ", \"config\": " + config;
    return out + "}";
  }

private:
  static std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }
};

// The components a plugin registers. Lives as long as the library (a static in the entry).
class Registry {
public:
  // Registers class T under `name` (unique per kind across plugins; "vendor.Name").
  template <typename T> Registry& add(const char* name, const char* description = "") {
    return add_component<T>(name, description, nullptr);
  }
  // Registers class T and declares that it joins the defaults of the targets `joins` names.
  template <typename T>
  Registry& add(const char* name, const char* description, const JoinDefaults& joins) {
    return add_component<T>(name, description, keep(joins.to_json().c_str()));
  }

  const mt_component_desc* const* data() const { return ptrs_.data(); }
  size_t size() const { return ptrs_.size(); }
  bool empty() const { return ptrs_.empty(); }

private:
  template <typename T>
  Registry& add_component(const char* name, const char* description, const char* joins_defaults) {
    mt_component_desc d{};
    d.struct_size = sizeof d;
    d.struct_version = 1;
    d.name = keep(name);
    d.description = keep(description);
    d.joins_defaults = joins_defaults;
    d.create = detail::create<T>;
    if constexpr (std::is_base_of_v<ScheduleRule, T>) {
      d.kind = MT_COMPONENT_SCHEDULE_RULE;
      d.vtable.schedule_rule = &detail::kRuleTable<T>;
    } else if constexpr (std::is_base_of_v<Mutator, T>) {
      d.kind = MT_COMPONENT_MUTATOR;
      d.vtable.mutator = &detail::kMutatorTable<T>;
    } else if constexpr (std::is_base_of_v<Postproc, T>) {
      d.kind = MT_COMPONENT_POSTPROC;
      d.vtable.postproc = &detail::kPostprocTable<T>;
    } else if constexpr (std::is_base_of_v<CostModel, T>) {
      d.kind = MT_COMPONENT_COST_MODEL;
      d.vtable.cost_model = &detail::kCostModelTable<T>;
    } else if constexpr (std::is_base_of_v<SearchContextStrategy, T>) {
      d.kind = MT_COMPONENT_SEARCH_STRATEGY;
      d.vtable.search_strategy = &detail::kContextSearchTable<T>;
    } else if constexpr (std::is_base_of_v<SearchStrategy, T>) {
      d.kind = MT_COMPONENT_SEARCH_STRATEGY;
      d.vtable.search_strategy = &detail::kSearchTable<T>;
    } else if constexpr (std::is_base_of_v<Target, T>) {
      d.kind = MT_COMPONENT_TARGET;
      d.vtable.target = &detail::kTargetTable<T>;
    } else if constexpr (std::is_base_of_v<ModelLayer, T>) {
      d.kind = MT_COMPONENT_LAYER;
      d.vtable.layer = detail::model_layer_table<T>();
    } else if constexpr (std::is_base_of_v<Layer, T>) {
      d.kind = MT_COMPONENT_LAYER;
      d.vtable.layer = &detail::kLayerTable<T>;
    } else {
      static_assert(sizeof(T) == 0, "T must derive from one of the mt::sdk component bases");
    }
    descs_.push_back(d);
    ptrs_.push_back(&descs_.back());
    return *this;
  }

  const char* keep(const char* s) {
    strings_.emplace_back(s ? s : "");
    return strings_.back().c_str();
  }
  std::deque<mt_component_desc> descs_;
  std::vector<const mt_component_desc*> ptrs_;
  std::deque<std::string> strings_;
};

namespace detail {

// The body of every SDK plugin's entry point.
inline mt_status plugin_entry(mt_plugin_negotiation* neg, const char* name, const char* version,
                              const char* description, Registry& registry,
                              void (*register_components)(Registry&)) noexcept {
  if (!neg || !MT_HAS_FIELD(neg, mt_plugin_negotiation, unload)) return MT_ERROR_VERSION;
  neg->plugin_abi_version = MT_PLUGIN_ABI_VERSION;
  neg->plugin_name = name;
  neg->plugin_version = version;
  neg->plugin_description = description;
  if (!neg->host_api) return MT_ERROR_INVALID_ARGUMENT;
  g_host_api = neg->host_api;
  if (MT_ABI_VERSION_MAJOR(neg->host_abi_max) != MT_PLUGIN_ABI_VERSION_MAJOR ||
      neg->host_abi_max < MT_PLUGIN_ABI_VERSION) {
    set_error("this plugin needs a host with plugin ABI " MT_PLUGIN_STRINGIFY(
        MT_PLUGIN_ABI_VERSION_MAJOR) "." MT_PLUGIN_STRINGIFY(MT_PLUGIN_ABI_VERSION_MINOR));
    return MT_ERROR_VERSION;
  }
  mt_status st = MT_OK;
  if (registry.empty()) st = guard([&] { register_components(registry); });
  if (st != MT_OK) return st;
  neg->components = registry.data();
  neg->num_components = registry.size();
  return MT_OK;
}

} // namespace detail

} // namespace mt::sdk

// Defines the plugin's entry point and marker; the braces that follow are the body of a
// function receiving `mt::sdk::Registry& registry`.
#define METATUNE_PLUGIN(NAME, VERSION, DESCRIPTION)                                                \
  static void metatune_sdk_register_components(::mt::sdk::Registry& registry);                     \
  MT_PLUGIN_MARKER;                                                                                \
  extern "C" MT_PLUGIN_EXPORT mt_status metatune_plugin_entry(                                     \
      mt_plugin_negotiation* negotiation) {                                                        \
    static ::mt::sdk::Registry registry;                                                           \
    return ::mt::sdk::detail::plugin_entry(negotiation, NAME, VERSION, DESCRIPTION, registry,      \
                                           &metatune_sdk_register_components);                     \
  }                                                                                                \
  static void metatune_sdk_register_components(::mt::sdk::Registry& registry)
