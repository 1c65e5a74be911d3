// Shared by the std_rules tests: the plugin loaded through the host, the standard CPU and GPU
// sets (as a target would offer them), sampling through core's design-space generator, and the
// interpreter check of a sampled schedule against the unscheduled function.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/search/design_space.h"

namespace mt::std_rules_test {

// The component names of a target's default set, in order of application.
struct ComponentSet {
  std::vector<std::string> rules, postprocs, mutators;
  TuneAttributes attrs;
};

inline ComponentSet cpu_set() {
  return {
      {"std.AutoInline", "std.VectorRFactor", "std.AddRFactor", "std.MultiLevelTiling",
       "std.ParallelVectorizeUnroll", "std.RandomComputeLocation"},
      {"std.DisallowDynamicLoop", "std.RewriteParallelVectorizeUnroll",
       "std.RewriteReductionBlock"},
      {"std.MutateTileSize", "std.MutateComputeLocation", "std.MutateUnroll", "std.MutateParallel"},
      {{"kind", std::string("llvm")}, {"num_cores", int64_t{4}}, {"vector_bytes", int64_t{32}}}};
}

// The standard GPU set (core/tuner/target_setup.cpp) for an sm_80-class device, so that the
// tensor-core tiling is in the spaces of f16 matmuls with f32 results.
inline ComponentSet gpu_set() {
  return {{"std.AutoInline", "std.MultiLevelTilingTensorCore", "std.MultiLevelTiling",
           "std.CrossThreadReduction", "std.ParallelVectorizeUnroll", "std.AutoBind"},
          {"std.DisallowDynamicLoop", "std.RewriteCooperativeFetch", "std.RewriteSoftwarePipeline",
           "std.RewriteUnboundBlock", "std.RewriteParallelVectorizeUnroll",
           "std.RewriteReductionBlock", "std.VerifyGPUCode"},
          {"std.MutateTileSize", "std.MutateUnroll", "std.MutateThreadBinding",
           "std.MutatePipelineStages"},
          {{"kind", std::string("cuda")},
           {"arch", std::string("sm_80")},
           {"max_threads_per_block", int64_t{1024}},
           {"max_shared_memory_per_block", int64_t{49152}},
           // The cuda target's: 255 registers of 4 bytes for a thread's arrays.
           {"max_local_memory_per_block", int64_t{255 * 4}}}};
}

// The plugin, loaded once per test binary.
inline PluginHost& host() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    const PluginRecord& r = p->load(MT_STD_RULES_PLUGIN);
    if (!r.loaded()) throw std::runtime_error("std_rules plugin refused: " + r.message);
#ifdef MT_SEARCH_STRATEGIES_PLUGIN
    // The built-in strategies, for the tests that search (tests/tune).
    const PluginRecord& s = p->load(MT_SEARCH_STRATEGIES_PLUGIN);
    if (!s.loaded()) throw std::runtime_error("search_strategies plugin refused: " + s.message);
#endif
    return p;
  }();
  return *h;
}

struct Instances {
  std::vector<std::unique_ptr<PluginScheduleRule>> rules;
  std::vector<std::unique_ptr<PluginPostproc>> postprocs;
  std::vector<std::unique_ptr<PluginMutator>> mutators;
};

inline Instances instantiate(const ComponentSet& set) {
  Instances in;
  for (const auto& n : set.rules) {
    in.rules.push_back(host().create_schedule_rule(n));
    in.rules.back()->initialize(set.attrs);
  }
  for (const auto& n : set.postprocs) {
    in.postprocs.push_back(host().create_postproc(n));
    in.postprocs.back()->initialize(set.attrs);
  }
  for (const auto& n : set.mutators) {
    in.mutators.push_back(host().create_mutator(n));
    in.mutators.back()->initialize(set.attrs);
  }
  return in;
}

// Design-space generation and sampling are core's (core/search/design_space.h).
using mt::generate_design_spaces;
using mt::SampleOutcome;

// Inputs random (deterministic), outputs NaN so that an element nothing writes shows up.
inline std::vector<NDArray> make_args(const Function& f, uint64_t seed = 5) {
  std::vector<NDArray> args;
  std::vector<bool> outs = f.output_mask();
  for (size_t i = 0; i < f.params.size(); ++i) {
    args.emplace_back(f.params[i]->dtype, f.params[i]->shape);
    if (outs[i])
      args.back().fill(f.params[i]->dtype.is_float() ? NAN : 77);
    else
      args.back().fill_random(seed + i);
  }
  return args;
}

inline std::vector<NDArray> run(const Function& f) {
  std::vector<NDArray> args = make_args(f);
  std::vector<NDArray*> ptrs;
  for (auto& a : args)
    ptrs.push_back(&a);
  interpret(f, ptrs);
  return args;
}

// Empty if `scheduled` computes what `reference` (its results) says; else the first mismatch.
inline std::string compare(const std::vector<NDArray>& reference, const Function& scheduled) {
  std::vector<NDArray> got = run(scheduled);
  if (got.size() != reference.size()) return "different number of parameters";
  for (size_t i = 0; i < got.size(); ++i) {
    std::string why;
    if (!allclose(got[i], reference[i], 1e-4, 1e-5, &why))
      return "param " + std::to_string(i) + ": " + why;
  }
  return {};
}

// Replays `trace` on a fresh schedule of `f`, then runs the postprocessors in order.
inline SampleOutcome sample(const Function& f, const Trace& trace, uint64_t seed,
                            bool use_decisions,
                            const std::vector<std::unique_ptr<PluginPostproc>>& postprocs,
                            std::shared_ptr<Schedule>* out, std::string* why = nullptr) {
  return sample_candidate(f, trace, seed, use_decisions, postprocs, out, why);
}

} // namespace mt::std_rules_test
