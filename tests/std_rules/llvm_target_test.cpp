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
    Function f = make_workload(spec);
    std::vector<NDArray> reference = run(f);
    std::vector<std::shared_ptr<Schedule>> spaces = generate_design_spaces(f, in.rules, 1);
    int channel_spaces = 0;
    for (size_t si = 0; si < spaces.size(); ++si) {
      // One fresh sample per space: each build of these unrolled tiles takes about a second.
      for (uint64_t k = 0; k < 1; ++k) {
        std::shared_ptr<Schedule> s;
        if (sample(f, spaces[si]->trace(), 500 + 11 * k + si, false, in.postprocs, &s) !=
            SampleOutcome::Ok)
          continue;
        if (!accumulates_channels_last(s->func())) break; // another kind of space
        channel_spaces += k == 0;
        ++built;
        EXPECT_EQ(run_natively(*target, f, s->func(), reference), "") << "space " << si << "\n"
                                                                      << s->trace().to_json();
      }
    }
    EXPECT_GT(channel_spaces, 0) << "no channel-lane design space";
  }
  std::printf("[ std_rules ] %d channel-lane schedules built and run by llvm.cpu\n", built);
  EXPECT_GT(built, 4);
}

} // namespace
} // namespace mt
