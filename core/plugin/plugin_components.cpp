#include "core/plugin/plugin_components.h"

#include "core/plugin/layer_backend.h"
#include "core/plugin/search_backend.h"

#include "core/lower/lower.h"
#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"
#include "core/plugin/last_error.h"
#include "core/plugin/loaded_plugin.h"

namespace mt {

PluginError::PluginError(std::string plugin_path, std::string component, std::string operation,
                         int32_t status, const std::string& message)
    : std::runtime_error(plugin_path + ": " + component + ": " + operation + " failed (" +
                         mt_status_name(status) + "): " + message),
      plugin_path_(std::move(plugin_path)), component_(std::move(component)),
      operation_(std::move(operation)), status_(status) {}

namespace {

// Calls into a plugin: clears the error slot first, and turns an exception that escaped the
// plugin (a C++ plugin not built with the SDK) into a status rather than letting it unwind
// through host frames that do not expect it.
template <typename F> mt_status call_plugin(F&& f) {
  clear_last_error();
  try {
    return f();
  } catch (const std::exception& e) {
    set_last_error(std::string("exception escaped the plugin across the C ABI: ") + e.what());
  } catch (...) {
    set_last_error("exception escaped the plugin across the C ABI");
  }
  return MT_ERROR_PLUGIN;
}

// Host handles for a batch of schedules, released when done.
struct ScheduleHandles {
  std::vector<mt_schedule*> handles;
  explicit ScheduleHandles(const std::vector<std::shared_ptr<Schedule>>& schs) {
    handles.reserve(schs.size());
    for (const auto& s : schs)
      handles.push_back(make_schedule_handle(s));
  }
  ~ScheduleHandles() {
    for (mt_schedule* h : handles)
      host_api()->schedule_release(h);
  }
  ScheduleHandles(const ScheduleHandles&) = delete;
  ScheduleHandles& operator=(const ScheduleHandles&) = delete;
};

std::vector<std::shared_ptr<Schedule>> take(const mt_schedule_list_s& list) {
  std::vector<std::shared_ptr<Schedule>> out;
  for (mt_schedule* h : list.items) {
    bool seen = false;
    for (const auto& s : out)
      seen = seen || s == h->sch;
    if (!seen) out.push_back(h->sch);
  }
  return out;
}

mt_tensor tensor_of(NDArray* a) {
  if (!a || a->empty()) throw std::invalid_argument("plugin module: null or empty argument");
  mt_tensor t{};
  t.struct_size = sizeof t;
  t.struct_version = 1;
  t.data = a->data();
  t.device_type = MT_DEVICE_CPU;
  t.dtype = plugin_detail::to_c(a->dtype());
  t.ndim = a->ndim();
  t.shape = a->shape().data();
  return t;
}

std::vector<mt_tensor> tensors_of(const std::vector<NDArray*>& args) {
  std::vector<mt_tensor> ts;
  for (NDArray* a : args)
    ts.push_back(tensor_of(a));
  return ts;
}

} // namespace

// ---- PluginComponent ------------------------------------------------------------------------

PluginComponent::PluginComponent(std::shared_ptr<const plugin_detail::Registration> reg, void* self)
    : reg_(std::move(reg)), self_(self) {}

PluginComponent::~PluginComponent() {
  const mt_component_desc* d = reg_->desc;
  call_plugin([&] {
    switch (d->kind) {
    case MT_COMPONENT_SCHEDULE_RULE:
      d->vtable.schedule_rule->release(self_);
      break;
    case MT_COMPONENT_MUTATOR:
      d->vtable.mutator->release(self_);
      break;
    case MT_COMPONENT_POSTPROC:
      d->vtable.postproc->release(self_);
      break;
    case MT_COMPONENT_COST_MODEL:
      d->vtable.cost_model->release(self_);
      break;
    case MT_COMPONENT_SEARCH_STRATEGY:
      d->vtable.search_strategy->release(self_);
      break;
    case MT_COMPONENT_TARGET:
      d->vtable.target->release(self_);
      break;
    case MT_COMPONENT_LAYER:
      d->vtable.layer->release(self_);
      break;
    default:
      break;
    }
    return MT_OK;
  });
}

const ComponentInfo& PluginComponent::info() const {
  return reg_->info;
}

std::string PluginComponent::describe() const {
  return std::string(to_string(reg_->info.kind)) + " '" + reg_->info.name + "'";
}

void PluginComponent::fail(const char* operation, int32_t status) const {
  std::string message = last_error();
  if (message.empty()) message = "no message (the plugin did not set the last error)";
  throw PluginError(reg_->info.plugin_path, describe(), operation, status, message);
}

void PluginComponent::initialize_with(mt_status (*init)(void*, const mt_tune_context*),
                                      const TuneAttributes& attrs) const {
  if (!init) return;
  mt_tune_context_s ctx{attrs};
  mt_status st = call_plugin([&] { return init(self_, &ctx); });
  if (st != MT_OK) fail("initialize", st);
}

// ---- kinds ----------------------------------------------------------------------------------

void PluginScheduleRule::initialize(const TuneAttributes& attrs) const {
  initialize_with(registration().desc->vtable.schedule_rule->initialize, attrs);
}

std::vector<std::shared_ptr<Schedule>>
PluginScheduleRule::apply(const std::shared_ptr<Schedule>& sch, BlockRV block) const {
  const mt_schedule_rule_vtable* vt = registration().desc->vtable.schedule_rule;
  ScheduleHandles h({sch});
  mt_schedule_list_s list;
  mt_status st = call_plugin([&] { return vt->apply(self(), h.handles[0], {block.id}, &list); });
  if (st != MT_OK) fail("apply", st);
  return take(list);
}

void PluginMutator::initialize(const TuneAttributes& attrs) const {
  initialize_with(registration().desc->vtable.mutator->initialize, attrs);
}

std::optional<Trace> PluginMutator::apply(const Trace& trace, RandomEngine& rng) const {
  const mt_mutator_vtable* vt = registration().desc->vtable.mutator;
  mt_trace* in = make_trace_handle(trace);
  mt_rng_s r{&rng};
  mt_trace* out = nullptr;
  mt_status st = call_plugin([&] { return vt->apply(self(), in, &r, &out); });
  host_api()->trace_release(in);
  if (st != MT_OK) {
    host_api()->trace_release(out);
    fail("apply", st);
  }
  if (!out) return std::nullopt;
  // The only reference (the usual case: a trace the mutator just made) gives up its trace.
  Trace result;
  if (out->refs.load(std::memory_order_acquire) == 1)
    result = std::move(out->trace);
  else
    result = trace_of(out);
  host_api()->trace_release(out);
  return result;
}

void PluginPostproc::initialize(const TuneAttributes& attrs) const {
  initialize_with(registration().desc->vtable.postproc->initialize, attrs);
}

bool PluginPostproc::apply(const std::shared_ptr<Schedule>& sch, std::string* reason) const {
  const mt_postproc_vtable* vt = registration().desc->vtable.postproc;
  ScheduleHandles h({sch});
  mt_status st = call_plugin([&] { return vt->apply(self(), h.handles[0]); });
  if (st == MT_ERROR_REJECTED) {
    if (reason) *reason = last_error();
    return false;
  }
  if (st != MT_OK) fail("apply", st);
  return true;
}

void PluginCostModel::initialize(const TuneAttributes& attrs) const {
  initialize_with(registration().desc->vtable.cost_model->initialize, attrs);
}

std::vector<double>
PluginCostModel::predict(const std::vector<std::shared_ptr<Schedule>>& candidates) const {
  const mt_cost_model_vtable* vt = registration().desc->vtable.cost_model;
  ScheduleHandles h(candidates);
  std::vector<double> scores(candidates.size(), 0.0);
  mt_status st = call_plugin(
      [&] { return vt->predict(self(), h.handles.data(), h.handles.size(), scores.data()); });
  if (st != MT_OK) fail("predict", st);
  return scores;
}

void PluginCostModel::update(const std::vector<std::shared_ptr<Schedule>>& candidates,
                             const std::vector<double>& run_seconds) const {
  if (candidates.size() != run_seconds.size())
    throw std::invalid_argument("PluginCostModel::update: one run time per candidate needed");
  const mt_cost_model_vtable* vt = registration().desc->vtable.cost_model;
  ScheduleHandles h(candidates);
  mt_status st = call_plugin(
      [&] { return vt->update(self(), h.handles.data(), h.handles.size(), run_seconds.data()); });
  if (st != MT_OK) fail("update", st);
}

void PluginCostModel::save(const std::string& path) const {
  const mt_cost_model_vtable* vt = registration().desc->vtable.cost_model;
  if (!MT_HAS_FIELD(vt, mt_cost_model_vtable, save) || !vt->save)
    throw PluginError(info().plugin_path, describe(), "save", MT_ERROR_UNSUPPORTED,
                      "cannot save to '" + path +
                          "': the cost model has no save (it predates plugin ABI 1.1)");
  mt_status st = call_plugin([&] { return vt->save(self(), path.c_str()); });
  if (st != MT_OK) fail("save", st);
}

void PluginCostModel::load(const std::string& path) const {
  const mt_cost_model_vtable* vt = registration().desc->vtable.cost_model;
  if (!MT_HAS_FIELD(vt, mt_cost_model_vtable, load) || !vt->load)
    throw PluginError(info().plugin_path, describe(), "load", MT_ERROR_UNSUPPORTED,
                      "cannot load '" + path +
                          "': the cost model has no load (it predates plugin ABI 1.1)");
  mt_status st = call_plugin([&] { return vt->load(self(), path.c_str()); });
  if (st != MT_OK) fail("load", st);
}

void PluginSearchStrategy::initialize(const TuneAttributes& attrs) const {
  initialize_with(registration().desc->vtable.search_strategy->initialize, attrs);
}

std::vector<std::shared_ptr<Schedule>>
PluginSearchStrategy::generate(const std::vector<std::shared_ptr<Schedule>>& design_spaces,
                               RandomEngine& rng, size_t max_candidates) const {
  const mt_search_strategy_vtable* vt = registration().desc->vtable.search_strategy;
  ScheduleHandles h(design_spaces);
  mt_rng_s r{&rng};
  mt_schedule_list_s list;
  mt_status st = call_plugin([&] {
    return vt->generate(self(), h.handles.data(), h.handles.size(), &r, max_candidates, &list);
  });
  if (st != MT_OK) fail("generate", st);
  return take(list);
}

void PluginSearchStrategy::notify(const std::vector<std::shared_ptr<Schedule>>& measured,
                                  const std::vector<double>& run_seconds) const {
  if (measured.size() != run_seconds.size())
    throw std::invalid_argument("PluginSearchStrategy::notify: one run time per candidate needed");
  const mt_search_strategy_vtable* vt = registration().desc->vtable.search_strategy;
  ScheduleHandles h(measured);
  mt_status st = call_plugin(
      [&] { return vt->notify(self(), h.handles.data(), h.handles.size(), run_seconds.data()); });
  if (st != MT_OK) fail("notify", st);
}

bool PluginSearchStrategy::uses_search_context() const {
  const mt_search_strategy_vtable* vt = registration().desc->vtable.search_strategy;
  return MT_HAS_FIELD(vt, mt_search_strategy_vtable, notify_measured) && vt->start &&
         vt->next_batch && vt->notify_measured;
}

void PluginSearchStrategy::start(mt_search_context* ctx) const {
  if (!uses_search_context())
    throw PluginError(info().plugin_path, describe(), "start", MT_ERROR_UNSUPPORTED,
                      "the strategy has no search-context entries (ABI 1.3)");
  mt_status st = call_plugin([&] {
    return registration().desc->vtable.search_strategy->start(self(), ctx);
  });
  if (st != MT_OK) fail("start", st);
}

std::vector<CandidatePtr> PluginSearchStrategy::next_batch(size_t n) const {
  mt_candidate_list_s list;
  mt_status st = call_plugin([&] {
    return registration().desc->vtable.search_strategy->next_batch(self(), n, &list);
  });
  if (st != MT_OK) fail("next_batch", st);
  if (list.items.size() > n)
    throw PluginError(info().plugin_path, describe(), "next_batch", MT_ERROR_PLUGIN,
                      "returned " + std::to_string(list.items.size()) + " candidates, at most " +
                          std::to_string(n) + " were asked for");
  return std::move(list.items);
}

void PluginSearchStrategy::notify_measured(const std::vector<CandidatePtr>& measured,
                                           const std::vector<double>& run_seconds) const {
  if (measured.size() != run_seconds.size())
    throw std::logic_error("PluginSearchStrategy::notify_measured: one run time per candidate "
                           "needed (a bug in metatune)");
  std::vector<mt_candidate_s> handles;
  handles.reserve(measured.size());
  for (const CandidatePtr& c : measured)
    handles.emplace_back(c);
  std::vector<const mt_candidate*> ptrs;
  for (const mt_candidate_s& h : handles)
    ptrs.push_back(&h);
  mt_status st = call_plugin([&] {
    return registration().desc->vtable.search_strategy->notify_measured(
        self(), ptrs.data(), ptrs.size(), run_seconds.data());
  });
  if (st != MT_OK) fail("notify_measured", st);
}

// ---- targets and modules ----------------------------------------------------------------------

struct PluginModule::State {
  mt_module module{};
  std::shared_ptr<const plugin_detail::Registration> reg; // keeps the library loaded
  std::string owner;                                      // "target 'x'" for messages
};

PluginModule::PluginModule(std::unique_ptr<State> state) : state_(std::move(state)) {}

PluginModule::~PluginModule() {
  if (state_ && state_->module.release)
    call_plugin([&] {
      state_->module.release(state_->module.self);
      return MT_OK;
    });
}

void PluginModule::run(const std::vector<NDArray*>& args) const {
  std::vector<mt_tensor> ts = tensors_of(args);
  mt_status st =
      call_plugin([&] { return state_->module.run(state_->module.self, ts.data(), ts.size()); });
  if (st != MT_OK)
    throw PluginError(state_->reg->info.plugin_path, state_->owner, "module run", st, last_error());
}

std::vector<double> PluginModule::time(const std::vector<NDArray*>& args, int repeats,
                                       double min_repeat_seconds) const {
  if (repeats <= 0) throw std::invalid_argument("PluginModule::time: repeats must be positive");
  if (!MT_HAS_FIELD(&state_->module, mt_module, time) || !state_->module.time)
    throw PluginError(state_->reg->info.plugin_path, state_->owner, "module time",
                      MT_ERROR_UNSUPPORTED, "the module does not implement time()");
  std::vector<mt_tensor> ts = tensors_of(args);
  std::vector<double> secs(static_cast<size_t>(repeats), 0.0);
  mt_status st = call_plugin([&] {
    return state_->module.time(state_->module.self, ts.data(), ts.size(), repeats,
                               min_repeat_seconds, secs.data());
  });
  if (st != MT_OK)
    throw PluginError(state_->reg->info.plugin_path, state_->owner, "module time", st,
                      last_error());
  return secs;
}

namespace {

bool takes_packed(const mt_module* m) {
  return MT_HAS_FIELD(m, mt_module, run_packed) && m->packed_layout && m->pack && m->run_packed;
}

} // namespace

std::optional<PluginModule::PackedLayout> PluginModule::packed_layout(size_t param) const {
  const mt_module& m = state_->module;
  if (!takes_packed(&m)) return std::nullopt;
  size_t bytes = 0;
  mt_str key{nullptr, 0};
  mt_status st = call_plugin([&] { return m.packed_layout(m.self, param, &bytes, &key); });
  if (st == MT_ERROR_UNSUPPORTED) return std::nullopt;
  if (st != MT_OK)
    throw PluginError(state_->reg->info.plugin_path, state_->owner, "module packed_layout", st,
                      last_error());
  return PackedLayout{bytes, std::string(plugin_detail::view(key))};
}

void PluginModule::pack(size_t param, const NDArray& src, void* dst) const {
  const mt_module& m = state_->module;
  if (!takes_packed(&m))
    throw PluginError(state_->reg->info.plugin_path, state_->owner, "module pack",
                      MT_ERROR_UNSUPPORTED, "the module takes no packed params (ABI 1.8)");
  mt_status st = call_plugin([&] { return m.pack(m.self, param, src.data(), dst); });
  if (st != MT_OK)
    throw PluginError(state_->reg->info.plugin_path, state_->owner, "module pack", st,
                      last_error());
}

void PluginModule::run_packed(const std::vector<NDArray*>& args,
                              const std::vector<uint8_t>& packed) const {
  if (packed.size() != args.size())
    throw std::invalid_argument("PluginModule::run_packed: a flag per argument");
  const mt_module& m = state_->module;
  if (!takes_packed(&m)) {
    for (uint8_t p : packed)
      if (p)
        throw PluginError(state_->reg->info.plugin_path, state_->owner, "module run",
                          MT_ERROR_UNSUPPORTED, "the module takes no packed params (ABI 1.8)");
    return run(args);
  }
  std::vector<mt_tensor> ts = tensors_of(args);
  mt_status st =
      call_plugin([&] { return m.run_packed(m.self, ts.data(), ts.size(), packed.data()); });
  if (st != MT_OK)
    throw PluginError(state_->reg->info.plugin_path, state_->owner, "module run", st, last_error());
}

std::string PluginTarget::describe_device() const {
  const mt_target_vtable* vt = registration().desc->vtable.target;
  mt_str json{nullptr, 0};
  mt_status st = call_plugin([&] { return vt->describe(self(), &json); });
  if (st != MT_OK) fail("describe", st);
  return std::string(plugin_detail::view(json));
}

std::vector<std::string> PluginTarget::default_components(ComponentKind kind) const {
  const mt_target_vtable* vt = registration().desc->vtable.target;
  const mt_str* names = nullptr;
  size_t count = 0;
  mt_status st = call_plugin([&] {
    return vt->default_components(self(), static_cast<mt_component_kind>(kind), &names, &count);
  });
  if (st != MT_OK) fail("default_components", st);
  std::vector<std::string> out;
  for (size_t i = 0; names && i < count; ++i)
    out.emplace_back(plugin_detail::view(names[i]));
  return out;
}

std::unique_ptr<PluginModule> PluginTarget::build(const Function& func) const {
  const mt_target_vtable* vt = registration().desc->vtable.target;
  mt_program* program = make_program_handle(func.lowered ? func : lower(func));
  auto state = std::make_unique<PluginModule::State>();
  state->module.struct_size = sizeof(mt_module);
  state->module.struct_version = 1;
  mt_status st = call_plugin([&] { return vt->build(self(), program, &state->module); });
  host_api()->program_release(program);
  if (st != MT_OK) fail("build", st);
  if (!state->module.release || !state->module.run) {
    if (state->module.release) state->module.release(state->module.self);
    set_last_error("the module it returned has no release or run function");
    fail("build", MT_ERROR_PLUGIN);
  }
  state->reg = registration_ptr();
  state->owner = describe();
  return std::unique_ptr<PluginModule>(new PluginModule(std::move(state)));
}

bool PluginTarget::can_export_library() const {
  const mt_target_vtable* vt = registration().desc->vtable.target;
  return MT_HAS_FIELD(vt, mt_target_vtable, export_library) && vt->export_library;
}

std::string PluginTarget::export_library(const std::vector<Function>& funcs,
                                         const std::vector<std::string>& symbols,
                                         const std::string& path,
                                         const std::vector<std::vector<uint8_t>>* weights) const {
  if (funcs.size() != symbols.size())
    throw std::invalid_argument("export_library: " + std::to_string(funcs.size()) + " functions, " +
                                std::to_string(symbols.size()) + " symbols");
  if (weights && !weights->empty() && weights->size() != funcs.size())
    throw std::invalid_argument("export_library: " + std::to_string(funcs.size()) +
                                " functions, weight flags for " + std::to_string(weights->size()));
  for (size_t i = 0; weights && i < weights->size(); ++i)
    if ((*weights)[i].size() != funcs[i].params.size())
      throw std::invalid_argument("export_library: function " + std::to_string(i) + " has " +
                                  std::to_string(funcs[i].params.size()) +
                                  " params, weight flags for " +
                                  std::to_string((*weights)[i].size()));
  if (!can_export_library()) {
    set_last_error("the target does not export kernel libraries (ABI 1.6)");
    fail("export_library", MT_ERROR_UNSUPPORTED);
  }
  std::vector<mt_program*> programs;
  for (const Function& f : funcs)
    programs.push_back(make_program_handle(f.lowered ? f : lower(f)));
  std::vector<mt_str> names;
  for (const std::string& s : symbols)
    names.push_back(mt_str{s.data(), s.size()});
  const mt_target_vtable* vt = registration().desc->vtable.target;
  mt_str descriptor{nullptr, 0};
  const bool with_weights = weights && !weights->empty() &&
                            MT_HAS_FIELD(vt, mt_target_vtable, export_library_weights) &&
                            vt->export_library_weights;
  std::vector<const uint8_t*> flags;
  if (with_weights)
    for (const std::vector<uint8_t>& w : *weights)
      flags.push_back(w.data());
  mt_status st = call_plugin([&] {
    if (with_weights)
      return vt->export_library_weights(self(), programs.data(), flags.data(), names.data(),
                                        programs.size(), mt_str{path.data(), path.size()},
                                        &descriptor);
    return vt->export_library(self(), programs.data(), names.data(), programs.size(),
                              mt_str{path.data(), path.size()}, &descriptor);
  });
  for (mt_program* p : programs)
    host_api()->program_release(p);
  if (st != MT_OK) fail("export_library", st);
  return std::string(plugin_detail::view(descriptor));
}

std::vector<te::Tensor> PluginLayer::forward(const std::vector<te::Tensor>& inputs) const {
  const mt_layer_vtable* vt = registration().desc->vtable.layer;
  mt_te_builder* b = nullptr;
  if (host_api()->te_builder_create(&b) != MT_OK) fail("forward", MT_ERROR_INTERNAL);
  std::vector<const mt_te_tensor*> ins;
  for (const auto& t : inputs)
    ins.push_back(b->keep(t));
  std::vector<const mt_te_tensor*> outs(16, nullptr);
  size_t count = 0;
  mt_status st = MT_OK;
  for (int attempt = 0; attempt < 2; ++attempt) {
    st = call_plugin([&] {
      return vt->forward(self(), b, ins.data(), ins.size(), outs.data(), outs.size(), &count);
    });
    if (st != MT_ERROR_BUFFER_TOO_SMALL || count <= outs.size()) break;
    outs.assign(count, nullptr);
  }
  std::vector<te::Tensor> result;
  if (st == MT_OK)
    for (size_t i = 0; i < count && i < outs.size(); ++i)
      if (outs[i]) result.push_back(outs[i]->tensor);
  host_api()->te_builder_release(b);
  if (st != MT_OK) fail("forward", st);
  return result;
}

bool PluginLayer::is_model_layer() const {
  const mt_layer_vtable* vt = registration().desc->vtable.layer;
  return MT_HAS_FIELD(vt, mt_layer_vtable, build) && vt->schema && vt->build;
}

std::string PluginLayer::schema() const {
  return is_model_layer() ? std::string(registration().desc->vtable.layer->schema) : "";
}

std::vector<LayerParamDecl> PluginLayer::parameters() const {
  const mt_layer_vtable* vt = registration().desc->vtable.layer;
  if (!is_model_layer() || !vt->parameters) return {};
  mt_layer_param_list_s list;
  mt_status st = call_plugin([&] { return vt->parameters(self(), &list); });
  if (st != MT_OK) fail("parameters", st);
  return std::move(list.params);
}

std::vector<te::Tensor> PluginLayer::build(LayerBackend& backend,
                                           const std::vector<te::Tensor>& inputs) const {
  if (!is_model_layer())
    throw std::invalid_argument("layer '" + info().name +
                                "' is a version-1 layer (forward only), not a model layer "
                                "(ABI 1.5 schema/build)");
  const mt_layer_vtable* vt = registration().desc->vtable.layer;
  mt_layer_context_s ctx(backend);
  std::vector<const mt_te_tensor*> ins;
  for (const auto& t : inputs)
    ins.push_back(backend.builder().keep(t));
  std::vector<const mt_te_tensor*> outs(16, nullptr);
  size_t count = 0;
  mt_status st = MT_OK;
  for (int attempt = 0; attempt < 2; ++attempt) {
    st = call_plugin([&] {
      return vt->build(self(), &ctx, ins.data(), ins.size(), outs.data(), outs.size(), &count);
    });
    if (st != MT_ERROR_BUFFER_TOO_SMALL || count <= outs.size()) break;
    outs.assign(count, nullptr);
  }
  if (st != MT_OK) fail("build", st);
  std::vector<te::Tensor> result;
  for (size_t i = 0; i < count && i < outs.size(); ++i) {
    if (!outs[i]) fail("build", MT_ERROR_INTERNAL);
    result.push_back(outs[i]->tensor);
  }
  return result;
}

} // namespace mt
