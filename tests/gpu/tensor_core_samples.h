// Shared by the tensor-core tests: mixed-precision matmul-like workloads (f16 operands, f32
// results) and random samples of the design spaces std.MultiLevelTilingTensorCore makes for
// them (enabled on any GPU kind, so that PoCL runs them), handed over with the interpreter's
// result.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/lower/lower.h"
#include "core/lower/software_pipeline.h"
#include "core/workload/library.h"
#include "std_rules_test_util.h"

namespace mt::gpu_test {

using namespace std_rules_test;

// matmul (row-major B), dense (weight [N, K]: B read column-major, with a bias and gelu after
// it) and batch_matmul (a batch dimension on the block index).
inline std::vector<std::string> tensor_core_specs() {
  return {"matmul(M=64,N=48,K=32,dtype=f16,out_dtype=f32)",
          "dense(M=32,N=64,K=48,dtype=f16,out_dtype=f32)",
          "batch_matmul(B=2,M=32,N=32,K=32,dtype=f16,out_dtype=f32)",
          "matmul(M=32,N=64,K=48,dtype=bf16,out_dtype=f32)"};
}

struct TensorCoreSample {
  const std::string& spec;
  const Function& scheduled;
  const std::vector<NDArray>& reference;
  std::string trace_json;
};

// Calls `f` for `samples` accepted samples of each tensor-core space of each workload; returns
// how many were handed over. `attrs`: the device's limits.
// The rules of the tensor-core spaces, the tensor-core rule enabled on any GPU kind (`config`:
// the rule's).
inline std::vector<std::unique_ptr<PluginScheduleRule>>
tensor_core_rules(const TuneAttributes& attrs,
                  const std::string& config = R"({"enabled": "always"})") {
  PluginHost& h = host();
  std::vector<std::unique_ptr<PluginScheduleRule>> rules;
  rules.push_back(h.create_schedule_rule("std.AutoInline"));
  rules.push_back(h.create_schedule_rule("std.MultiLevelTilingTensorCore", config));
  for (const char* n : {"std.ParallelVectorizeUnroll", "std.AutoBind"})
    rules.push_back(h.create_schedule_rule(n));
  for (auto& r : rules)
    r->initialize(attrs);
  return rules;
}

inline std::vector<std::unique_ptr<PluginPostproc>> gpu_postprocs(const TuneAttributes& attrs) {
  PluginHost& h = host();
  ComponentSet set = gpu_set();
  std::vector<std::unique_ptr<PluginPostproc>> postprocs;
  for (const auto& n : set.postprocs) {
    postprocs.push_back(h.create_postproc(n));
    postprocs.back()->initialize(attrs);
  }
  return postprocs;
}

// Whether a loop of the lowered schedule carries annotation `key`.
inline bool has_loop_annotated(const Function& scheduled, const char* key) {
  bool found = false;
  visit_stmts(lower(scheduled).body, [&](const Stmt& x) {
    found = found || (x->kind == StmtKind::For && as<ForNode>(x)->annotations.count(key));
    return !found;
  });
  return found;
}
// Whether lowering software-pipelined the schedule's k loop (a prologue loop exists).
inline bool is_pipelined(const Function& scheduled) {
  return has_loop_annotated(scheduled, kSoftwarePipelinePrologue);
}
// Whether lowering pipelined a loop of the schedule (its prologue may have been a loop of one
// iteration, which is_pipelined does not see).
inline bool has_pipelined_loop(const Function& scheduled) {
  return has_loop_annotated(scheduled, kSoftwarePipelineStages);
}

// The warpgroup (wgmma) space's workloads: m a multiple of 64, n of 64 (its smallest N).
// matmul's B is MN-major (wgmma's transposed B), dense's weight K-major.
inline std::vector<std::string> warpgroup_specs() {
  return {"matmul(M=128,N=64,K=32,dtype=f16,out_dtype=f32)",
          "dense(M=64,N=128,K=32,dtype=f16,out_dtype=f32)",
          "batch_matmul(B=2,M=64,N=64,K=32,dtype=f16,out_dtype=f32)",
          "matmul(M=64,N=64,K=48,dtype=bf16,out_dtype=f32)"};
}

// Which space to sample and how the rule makes it.
struct TensorCoreSpace {
  std::string marker = "wmma.mma"; // in the space's trace
  std::string config = R"({"enabled": "always"})";
  std::vector<std::string> specs = tensor_core_specs();
};
inline TensorCoreSpace warpgroup_space() {
  return {"wgmma.mma",
          R"({"enabled": "always", "wgmma": "always", "wgmma_cols": [64, 128],
              "wgmma_swizzle": "never"})",
          warpgroup_specs()};
}
inline std::vector<std::string> swizzle_specs() {
  return {"matmul(M=128,N=64,K=128,dtype=f16,out_dtype=f32)",
          "dense(M=64,N=128,K=64,dtype=f16,out_dtype=f32)",
          "batch_matmul(B=2,M=64,N=64,K=64,dtype=f16,out_dtype=f32)",
          "matmul(M=64,N=128,K=128,dtype=bf16,out_dtype=f32)"};
}
// The space with the 128-byte swizzled operands: k a multiple of 64 (its k-tiles), K-major and
// MN-major B, two k-tiles and more (the pipeline's slots), bf16.
inline TensorCoreSpace warpgroup_swizzle_space() {
  return {"meta_schedule.wgmma_swizzle",
          R"({"enabled": "always", "wgmma": "always", "wgmma_cols": [64, 128],
              "wgmma_swizzle": "always", "wgmma_tma": "never"})",
          swizzle_specs()};
}
// The swizzled space with the fetches asked to be TMA box copies (tma_copy.h).
inline TensorCoreSpace warpgroup_tma_space() {
  return {"meta_schedule.wgmma_tma",
          R"({"enabled": "always", "wgmma": "always", "wgmma_cols": [64, 128],
              "wgmma_swizzle": "always", "wgmma_tma": "always"})",
          swizzle_specs()};
}

// The TMA space with its copies issued by a producer warpgroup (warp specialisation).
inline TensorCoreSpace warpgroup_producer_space() {
  return {"meta_schedule.wgmma_producer",
          R"({"enabled": "always", "wgmma": "always", "wgmma_cols": [64, 128],
              "wgmma_swizzle": "always", "wgmma_tma": "always", "wgmma_producer": "always"})",
          swizzle_specs()};
}

// Calls `f` for `samples` accepted samples of each tensor-core space of each workload; returns
// how many were handed over. `attrs`: the device's limits.
inline int for_each_tensor_core_sample(TuneAttributes attrs, int samples,
                                       const std::function<void(const TensorCoreSample&)>& f,
                                       const TensorCoreSpace& which = {}) {
  std::vector<std::unique_ptr<PluginScheduleRule>> rules = tensor_core_rules(attrs, which.config);
  std::vector<std::unique_ptr<PluginPostproc>> postprocs = gpu_postprocs(attrs);
  int n = 0;
  for (const std::string& spec : which.specs) {
    SCOPED_TRACE(spec);
    Function func = make_workload(spec);
    std::vector<NDArray> reference = run(func);
    int found = 0;
    for (const auto& space : generate_design_spaces(func, rules, 1)) {
      if (space->trace().to_json().find(which.marker) == std::string::npos) continue;
      ++found;
      for (int k = 0, got = 0; k < 8 * samples && got < samples; ++k) {
        std::shared_ptr<Schedule> s;
        if (sample(func, space->trace(), 700 + 37 * static_cast<uint64_t>(k), false, postprocs,
                   &s) != SampleOutcome::Ok)
          continue;
        ++got;
        ++n;
        f(TensorCoreSample{spec, s->func(), reference, s->trace().to_json()});
      }
    }
    EXPECT_EQ(found, 1) << "std.MultiLevelTilingTensorCore made no tensor-core space";
  }
  return n;
}

} // namespace mt::gpu_test
