// Base classes for plugin components, one per kind: derive, override the virtual methods,
// and register the class with METATUNE_PLUGIN (plugin.hpp). A component class is constructed
// either from nothing or from its configuration text (a constructor taking std::string_view).
// Any exception thrown from these methods is caught at the boundary and reported to the
// host with its message.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metatune/sdk/error.hpp"
#include "metatune/sdk/ir.hpp"
#include "metatune/sdk/schedule.hpp"
#include "metatune/sdk/te.hpp"

namespace mt::sdk {

enum class ComponentKind : int32_t {
  ScheduleRule = MT_COMPONENT_SCHEDULE_RULE,
  Mutator = MT_COMPONENT_MUTATOR,
  Postproc = MT_COMPONENT_POSTPROC,
  CostModel = MT_COMPONENT_COST_MODEL,
  SearchStrategy = MT_COMPONENT_SEARCH_STRATEGY,
  Target = MT_COMPONENT_TARGET,
  Layer = MT_COMPONENT_LAYER,
};

class ScheduleRule {
public:
  virtual ~ScheduleRule() = default;
  virtual void initialize(const TuneContext& /*ctx*/) {}
  // The schedules that result from applying the rule to `block`: `sch` itself (modified or
  // not: returning {sch} unchanged means "not applicable"), copies of it (forks), or none.
  virtual std::vector<Schedule> apply(Schedule& sch, BlockRV block) = 0;
};

class Mutator {
public:
  virtual ~Mutator() = default;
  virtual void initialize(const TuneContext& /*ctx*/) {}
  // A neighbour of `trace` (with a changed decision), or nullopt if none exists.
  virtual std::optional<Trace> apply(const Trace& trace, Rng& rng) = 0;
};

class Postproc {
public:
  virtual ~Postproc() = default;
  virtual void initialize(const TuneContext& /*ctx*/) {}
  // Validates or rewrites `sch`; false (or throwing sdk::Rejected) rejects the candidate.
  virtual bool apply(Schedule& sch) = 0;
};

class CostModel {
public:
  virtual ~CostModel() = default;
  virtual void initialize(const TuneContext& /*ctx*/) {}
  // One score per candidate, higher = predicted faster.
  virtual std::vector<double> predict(const std::vector<Schedule>& candidates) = 0;
  virtual void update(const std::vector<Schedule>& candidates,
                      const std::vector<double>& run_seconds) = 0;
  // Persistence (ABI 1.1): write / read what the model has learnt, so that a later run starts
  // from it and keeps learning. Errors should name `path`. By default a model cannot be
  // saved: the host reports "unsupported".
  virtual void save(const std::string& path) {
    throw Error(MT_ERROR_UNSUPPORTED, "cannot save to '" + path + "': this cost model has no save");
  }
  virtual void load(const std::string& path) {
    throw Error(MT_ERROR_UNSUPPORTED, "cannot load '" + path + "': this cost model has no load");
  }
};

class SearchStrategy {
public:
  virtual ~SearchStrategy() = default;
  virtual void initialize(const TuneContext& /*ctx*/) {}
  virtual std::vector<Schedule> generate(const std::vector<Schedule>& design_spaces, Rng& rng,
                                         size_t max_candidates) = 0;
  virtual void notify(const std::vector<Schedule>& /*measured*/,
                      const std::vector<double>& /*run_seconds*/) {}
};

// A tensor argument of a compiled module (DLPack-style view).
struct TensorView {
  void* data = nullptr;
  DType dtype;
  std::vector<int64_t> shape;
};

// A compiled program made by a target.
class Module {
public:
  virtual ~Module() = default;
  virtual void run(const std::vector<TensorView>& args) = 0;

  // Prepacked params (ABI 1.8; components.h says the contract): where param `param` can be
  // handed over in the module's own layout, its bytes and a key naming that layout; nullopt
  // where it cannot (the default: every param as declared).
  struct PackedLayout {
    size_t bytes = 0;
    std::string key;
  };
  virtual std::optional<PackedLayout> packed_layout(size_t /*param*/) { return std::nullopt; }
  // Writes param `param` (`src`, as declared) in that layout to `dst`.
  virtual void pack(size_t /*param*/, const void* /*src*/, void* /*dst*/) {
    throw Error(MT_ERROR_UNSUPPORTED, "this module takes no packed params");
  }
  // run() with packed[i] set for each arg given in its packed layout.
  virtual void run_packed(const std::vector<TensorView>& args, const std::vector<uint8_t>& packed) {
    for (uint8_t p : packed)
      if (p) throw Error(MT_ERROR_UNSUPPORTED, "this module takes no packed params");
    run(args);
  }

  // Seconds per call for each repeat; the default times run() with a steady clock, calling it
  // as often as needed for each repeat to last at least min_repeat_seconds.
  virtual std::vector<double> time(const std::vector<TensorView>& args, int repeats,
                                   double min_repeat_seconds) {
    using clock = std::chrono::steady_clock;
    std::vector<double> out;
    for (int r = 0; r < repeats; ++r) {
      int64_t calls = 0;
      auto start = clock::now();
      double elapsed = 0;
      do {
        run(args);
        ++calls;
        elapsed = std::chrono::duration<double>(clock::now() - start).count();
      } while (elapsed < min_repeat_seconds);
      out.push_back(elapsed / static_cast<double>(calls));
    }
    return out;
  }
};

class Target {
public:
  virtual ~Target() = default;
  // The device as a JSON object: {"kind": ..., "num_cores": ..., "vector_bytes": ...}.
  virtual std::string describe() = 0;
  // Components of `kind` this target uses by default, in order.
  virtual std::vector<std::string> default_components(ComponentKind /*kind*/) { return {}; }
  // Builds a lowered program (walk it with Program/StmtRef, or program_builder.hpp).
  virtual std::unique_ptr<Module> build(const Program& lowered) = 0;
  // ABI 1.6, ahead-of-time output: writes the lowered `programs` as one shared library at
  // `path`, programs[i] exported under symbols[i], and returns its descriptor (JSON, as
  // components.h describes export_library). A target that cannot leaves this default.
  virtual std::string export_library(const std::vector<Program>& /*programs*/,
                                     const std::vector<std::string>& /*symbols*/,
                                     const std::string& /*path*/) {
    throw Error(MT_ERROR_UNSUPPORTED, "this target does not export kernel libraries");
  }
  // ABI 1.10: export_library told which params of each program are a model's weights
  // (weights[i][p]); the library may add variants reading them packed (components.h). By
  // default the same as export_library.
  virtual std::string export_library_weights(const std::vector<Program>& programs,
                                             const std::vector<std::vector<uint8_t>>& /*weights*/,
                                             const std::vector<std::string>& symbols,
                                             const std::string& path) {
    return export_library(programs, symbols, path);
  }
};

class Layer {
public:
  virtual ~Layer() = default;
  virtual std::vector<TeTensor> forward(TensorBuilder& builder,
                                        const std::vector<TeTensor>& inputs) = 0;
};

} // namespace mt::sdk
