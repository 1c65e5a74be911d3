// C++ views of component instances created by plugins: one class per component kind, each
// calling the plugin's function table and turning a failure status into a PluginError. An
// instance keeps its plugin library loaded for as long as it lives, and releases its plugin
// object (the table's `release`) when destroyed.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/plugin/component_kind.h"
#include "core/plugin/defaults_declaration.h"
#include "core/plugin/plugin_error.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/random.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/te.h"
#include "metatune/plugin_api.h"

namespace mt {

class PluginHost;
namespace plugin_detail {
struct Registration;
}

struct ComponentInfo {
  ComponentKind kind = ComponentKind::ScheduleRule;
  std::string name;
  std::string description;
  std::string plugin_path; // the library that registered it
  std::string plugin_name;
  // The targets whose default components it joins (ABI 1.3), if it declares any.
  std::optional<DefaultsDeclaration> joins_defaults;
  // A model layer's config schema (ABI 1.5, JSON text, checked at registration); "" for
  // other components and version-1 layers.
  std::string layer_schema;
};

// Attributes of the target a component is initialised for ("kind", "num_cores",
// "vector_bytes", ...), passed to the components' optional `initialize`.
using TuneAttributes = Annotations;

class PluginComponent {
public:
  virtual ~PluginComponent();
  PluginComponent(const PluginComponent&) = delete;
  PluginComponent& operator=(const PluginComponent&) = delete;

  const ComponentInfo& info() const;
  // "schedule_rule 'x.Name'"
  std::string describe() const;

protected:
  friend class PluginHost; // the only creator of instances
  PluginComponent(std::shared_ptr<const plugin_detail::Registration> reg, void* self);
  void* self() const { return self_; }
  const plugin_detail::Registration& registration() const { return *reg_; }
  const std::shared_ptr<const plugin_detail::Registration>& registration_ptr() const {
    return reg_;
  }
  // Throws PluginError for a failed call of `operation` (message from the last error).
  [[noreturn]] void fail(const char* operation, int32_t status) const;
  // Calls the optional `initialize` of any kind's table.
  void initialize_with(mt_status (*init)(void*, const mt_tune_context*),
                       const TuneAttributes& attrs) const;

private:
  std::shared_ptr<const plugin_detail::Registration> reg_;
  void* self_;
};

class PluginScheduleRule : public PluginComponent {
public:
  using PluginComponent::PluginComponent;
  void initialize(const TuneAttributes& attrs) const;
  // The schedules the rule produces for `block` of `sch` (which it may modify in place and
  // return). An empty result drops the design space.
  std::vector<std::shared_ptr<Schedule>> apply(const std::shared_ptr<Schedule>& sch,
                                               BlockRV block) const;
};

class PluginMutator : public PluginComponent {
public:
  using PluginComponent::PluginComponent;
  void initialize(const TuneAttributes& attrs) const;
  // A mutated copy of `trace`, or nullopt if there was nothing to mutate.
  std::optional<Trace> apply(const Trace& trace, RandomEngine& rng) const;
};

class PluginPostproc : public PluginComponent {
public:
  using PluginComponent::PluginComponent;
  void initialize(const TuneAttributes& attrs) const;
  // True if the candidate is accepted (possibly rewritten in place); false if rejected, with
  // the postprocessor's reason in *reason.
  bool apply(const std::shared_ptr<Schedule>& sch, std::string* reason = nullptr) const;
};

class PluginCostModel : public PluginComponent {
public:
  using PluginComponent::PluginComponent;
  void initialize(const TuneAttributes& attrs) const;
  std::vector<double> predict(const std::vector<std::shared_ptr<Schedule>>& candidates) const;
  void update(const std::vector<std::shared_ptr<Schedule>>& candidates,
              const std::vector<double>& run_seconds) const;
  // Persistence (ABI 1.1, optional): writes / reads what the model has learnt. Throw
  // PluginError when the plugin fails, and when it does not implement them (status
  // "unsupported").
  void save(const std::string& path) const;
  void load(const std::string& path) const;
};

class PluginSearchStrategy : public PluginComponent {
public:
  using PluginComponent::PluginComponent;
  void initialize(const TuneAttributes& attrs) const;
  std::vector<std::shared_ptr<Schedule>>
  generate(const std::vector<std::shared_ptr<Schedule>>& design_spaces, RandomEngine& rng,
           size_t max_candidates) const;
  void notify(const std::vector<std::shared_ptr<Schedule>>& measured,
              const std::vector<double>& run_seconds) const;

  // ABI 1.3: the strategy searches through a search context (start/next_batch/
  // notify_measured) instead of generate/notify. `ctx` must outlive this object.
  bool uses_search_context() const;
  void start(mt_search_context* ctx) const;
  std::vector<std::shared_ptr<const struct SearchCandidate>> next_batch(size_t n) const;
  void notify_measured(const std::vector<std::shared_ptr<const struct SearchCandidate>>& measured,
                       const std::vector<double>& run_seconds) const;
};

// A program compiled by a target plugin.
class PluginModule {
public:
  ~PluginModule();
  PluginModule(const PluginModule&) = delete;
  PluginModule& operator=(const PluginModule&) = delete;
  // Runs once with `args` bound to the program's params in order.
  void run(const std::vector<NDArray*>& args) const;
  // Seconds per call, one entry per repeat.
  std::vector<double> time(const std::vector<NDArray*>& args, int repeats,
                           double min_repeat_seconds) const;

  // Prepacked params (ABI 1.8, components.h): where param `param` can be handed over in the
  // module's own layout, its bytes and the key naming it; nullopt where it cannot (or the
  // module is older than 1.8).
  struct PackedLayout {
    size_t bytes = 0;
    std::string key;
  };
  std::optional<PackedLayout> packed_layout(size_t param) const;
  // Writes `src` (param `param` as declared) packed into `dst` (PackedLayout::bytes).
  void pack(size_t param, const NDArray& src, void* dst) const;
  // run() with packed[i] set where args[i] holds packed bytes.
  void run_packed(const std::vector<NDArray*>& args, const std::vector<uint8_t>& packed) const;

private:
  friend class PluginTarget;
  struct State;
  explicit PluginModule(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class PluginTarget : public PluginComponent {
public:
  using PluginComponent::PluginComponent;
  // The device description (a JSON object as text).
  std::string describe_device() const;
  // Names of the components of `kind` this target uses by default, in order.
  std::vector<std::string> default_components(ComponentKind kind) const;
  // Builds a function (lowered first if it is not).
  std::unique_ptr<PluginModule> build(const Function& func) const;
  // ABI 1.6, ahead-of-time output: whether the target implements export_library at all.
  bool can_export_library() const;
  // Writes `funcs` (lowered first where they are not) as one shared library at `path`,
  // funcs[i] exported under symbols[i], and returns the target's descriptor (JSON text,
  // components.h). Throws PluginError, status MT_ERROR_UNSUPPORTED where the target cannot.
  // `weights` (ABI 1.10; null or empty: none): per function, one flag per param, set where the
  // application passes a constant weight -- the library may then read some of them packed
  // once (the descriptor's "packed" entries); a target before 1.10 is called without them.
  std::string export_library(const std::vector<Function>& funcs,
                             const std::vector<std::string>& symbols, const std::string& path,
                             const std::vector<std::vector<uint8_t>>* weights = nullptr) const;
};

class LayerBackend;
struct LayerParamDecl;

class PluginLayer : public PluginComponent {
public:
  using PluginComponent::PluginComponent;
  // Version 1: the outputs built from `inputs` on a builder of its own.
  std::vector<te::Tensor> forward(const std::vector<te::Tensor>& inputs) const;

  // ABI 1.5, a layer of a model config tree (core/model): false for a version-1 layer.
  bool is_model_layer() const;
  // Its config schema, JSON text (components.h); "" for a version-1 layer.
  std::string schema() const;
  // The parameters of this configured instance.
  std::vector<LayerParamDecl> parameters() const;
  // The outputs built from `inputs` on `backend`'s builder, parameters and children.
  std::vector<te::Tensor> build(LayerBackend& backend, const std::vector<te::Tensor>& inputs) const;
};

} // namespace mt
