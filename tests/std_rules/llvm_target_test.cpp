// End to end on the CPU: sampled schedules of the standard CPU set, built by the llvm.cpu target
// plugin (parallel loops on its thread pool, vector code) and run natively, give the reference
// interpreter's results. Skipped when the LLVM target is not built in this tree.
#include <cstdio>
#include <filesystem>

#include "core/workload/library.h"
#include "std_rules_test_util.h"

namespace mt {
namespace {

using namespace std_rules_test;

// The llvm.cpu target; null, with the reason, where this tree does not build it (a plugin
// that is built but refuses to load fails the test).
std::unique_ptr<PluginTarget> llvm_cpu_target(std::string* why) {
#ifndef MT_LLVM_CPU_PLUGIN
  *why = "the llvm_cpu target is not part of this build";
  return nullptr;
#else
  if (!std::filesystem::exists(MT_LLVM_CPU_PLUGIN)) {
    *why = std::string(MT_LLVM_CPU_PLUGIN) + " is not built";
    return nullptr;
  }
  const PluginRecord& r = host().load(MT_LLVM_CPU_PLUGIN);
  if (!r.loaded()) {
    ADD_FAILURE() << r.message;
    *why = r.message;
    return nullptr;
  }
  return host().create_target("llvm.cpu");
#endif
}

// Builds `scheduled` (a schedule of `f`) with the target, runs it natively on make_args(f) and
// compares every parameter with the interpreter's `reference`: empty if they agree, else the
// first difference.
std::string run_natively(PluginTarget& target, const Function& f, const Function& scheduled,
                         const std::vector<NDArray>& reference) {
  std::unique_ptr<PluginModule> module = target.build(scheduled);
  std::vector<NDArray> args = make_args(f);
  std::vector<NDArray*> ptrs;
  for (auto& a : args)
    ptrs.push_back(&a);
  module->run(ptrs);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string why;
    if (!allclose(args[i], reference[i], 1e-4, 1e-5, &why))
      return "param " + std::to_string(i) + ": " + why;
  }
  return {};
}

TEST(StdRulesOnLlvmCpu, SampledSchedulesCompileAndRunCorrectly) {
  std::string why;
  std::unique_ptr<PluginTarget> target = llvm_cpu_target(&why);
  if (!target) GTEST_SKIP() << why;
  Instances in = instantiate(cpu_set());
  int built = 0;
  for (const std::string& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    std::vector<NDArray> reference = run(f);
    std::vector<std::shared_ptr<Schedule>> spaces = generate_design_spaces(f, in.rules, 1);
    for (size_t si = 0; si < spaces.size(); ++si) {
      std::shared_ptr<Schedule> s;
      if (sample(f, spaces[si]->trace(), 300 + si, false, in.postprocs, &s) != SampleOutcome::Ok)
        continue;
      ++built;
      EXPECT_EQ(run_natively(*target, f, s->func(), reference), "") << "space " << si << "\n"
                                                                    << s->trace().to_json();
    }
  }
  std::printf("[ std_rules ] %d sampled schedules built and run by llvm.cpu\n", built);
  EXPECT_GT(built, 0);
}

// The spaces of `spec` whose first sample is of the kind `is_kind` tells: `samples` fresh
// samples of each (seeds from `seed`), built by the target, run natively and compared with the
// interpreter. Counts the spaces of that kind and the schedules run.
struct SpacesRun {
  int spaces = 0;
  int built = 0;
};
SpacesRun run_spaces_of_kind(PluginTarget& target, const Instances& in, const std::string& spec,
                             bool (*is_kind)(const Function&), uint64_t samples, uint64_t seed) {
  Function f = make_workload(spec);
  std::vector<NDArray> reference = run(f);
  std::vector<std::shared_ptr<Schedule>> spaces = generate_design_spaces(f, in.rules, 1);
  SpacesRun out;
  for (size_t si = 0; si < spaces.size(); ++si) {
    for (uint64_t k = 0; k < samples; ++k) {
      std::shared_ptr<Schedule> s;
      if (sample(f, spaces[si]->trace(), seed + 13 * k + si, false, in.postprocs, &s) !=
          SampleOutcome::Ok)
        continue;
      if (!is_kind(s->func())) break; // another kind of space
      out.spaces += k == 0;
      ++out.built;
      EXPECT_EQ(run_natively(target, f, s->func(), reference), "") << "space " << si << "\n"
                                                                   << s->trace().to_json();
    }
  }
  return out;
}

// Whether a scheduled convolution accumulates into a staged copy of its output [N, F, ...]
// with the F output channels moved last (the channel-lane spaces).
bool accumulates_channels_last(const Function& g) {
  const Buffer& out = g.params.back();
  for (const Buffer& b : g.buffers)
    if (b->name.size() > 7 && b->name.substr(b->name.size() - 7) == "_global" &&
        b->shape.size() == out->shape.size() && b->shape.back() == out->shape[1] &&
        b->shape[1] != out->shape[1])
      return true;
  return false;
}

// The channel-lane spaces of convolutions (lanes along the output channels, accumulators
// staged with them last, the weight packed [C, KH, KW, F]), sampled and post-processed like
// any candidate, built by llvm.cpu and run natively: the interpreter's results, with stride,
// dilation, a fused bias and relu, and 1-D and 3-D windows.
TEST(StdRulesOnLlvmCpu, ConvolutionsWithLanesAlongOutputChannelsRunCorrectly) {
  std::string why;
  std::unique_ptr<PluginTarget> target = llvm_cpu_target(&why);
  if (!target) GTEST_SKIP() << why;
  Instances in = instantiate(cpu_set());
  int built = 0;
  for (const char* spec :
       {"conv2d(N=1,C=3,H=15,W=13,F=16,KH=7,KW=7,stride=2,padding=3,bias=1,relu=1)",
        "conv2d(N=1,C=8,H=9,W=10,F=24,KH=3,KW=3,stride=1,padding=2,dilation=2)",
        "conv1d(N=1,C=5,L=21,F=32,K=3,stride=2,padding=1)",
        "conv3d(N=1,C=4,D=3,H=5,W=6,F=16,KD=3,KH=3,KW=3,stride=1,padding=1)"}) {
    SCOPED_TRACE(spec);
    // One fresh sample per space: each build of these unrolled tiles takes about a second.
    SpacesRun r = run_spaces_of_kind(*target, in, spec, accumulates_channels_last, 1, 500);
    built += r.built;
    EXPECT_GT(r.spaces, 0) << "no channel-lane design space";
  }
  std::printf("[ std_rules ] %d channel-lane schedules built and run by llvm.cpu\n", built);
  EXPECT_GT(built, 4);
}

// Whether a scheduled dense accumulates its partial sums in a local buffer (VectorRFactor).
bool has_local_partial_sums(const Function& g) {
  for (const Buffer& b : g.buffers)
    if (b->name == "dense_rf" && b->scope == "local") return true;
  return false;
}

// The vector-lane rfactor spaces of matrix-vector products (std.VectorRFactor: partial sums
// along k in a local tile, combined per row), sampled and post-processed like any candidate
// (the lanes vectorised, the parallel tiles), built by llvm.cpu and run natively: the
// interpreter's results, with a bias and GELU after the product, several rows reusing the
// weight, rows tiled (24 of them: more than max_reuse), and a reduction of 2 x 8 lanes.
TEST(StdRulesOnLlvmCpu, MatrixVectorProductsWithLanesAlongTheReductionRunCorrectly) {
  std::string why;
  std::unique_ptr<PluginTarget> target = llvm_cpu_target(&why);
  if (!target) GTEST_SKIP() << why;
  Instances in = instantiate(cpu_set());
  int built = 0;
  for (const char* spec :
       {"dense(M=1,N=40,K=96,bias=1,act=gelu)", "dense(M=3,N=24,K=64,bias=0,act=none)",
        "dense(M=1,N=7,K=16,bias=0,act=none)", "dense(M=24,N=48,K=64,bias=1,act=none)"}) {
    SCOPED_TRACE(spec);
    SpacesRun r = run_spaces_of_kind(*target, in, spec, has_local_partial_sums, 3, 700);
    built += r.built;
    EXPECT_EQ(r.spaces, 1) << "one vector-lane rfactor space";
  }
  std::printf("[ std_rules ] %d vector-lane rfactor schedules built and run by llvm.cpu\n", built);
  EXPECT_GE(built, 12);
}

} // namespace
} // namespace mt
