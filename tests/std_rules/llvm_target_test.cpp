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

TEST(StdRulesOnLlvmCpu, SampledSchedulesCompileAndRunCorrectly) {
#ifndef MT_LLVM_CPU_PLUGIN
  GTEST_SKIP() << "the llvm_cpu target is not part of this build";
#else
  if (!std::filesystem::exists(MT_LLVM_CPU_PLUGIN))
    GTEST_SKIP() << MT_LLVM_CPU_PLUGIN << " is not built";
  const PluginRecord& r = host().load(MT_LLVM_CPU_PLUGIN);
  ASSERT_TRUE(r.loaded()) << r.message;
  auto target = host().create_target("llvm.cpu");
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
      std::unique_ptr<PluginModule> module = target->build(s->func());
      std::vector<NDArray> args = make_args(f);
      std::vector<NDArray*> ptrs;
      for (auto& a : args)
        ptrs.push_back(&a);
      module->run(ptrs);
      ++built;
      for (size_t i = 0; i < args.size(); ++i) {
        std::string why;
        EXPECT_TRUE(allclose(args[i], reference[i], 1e-4, 1e-5, &why))
            << "space " << si << " param " << i << ": " << why << "\n"
            << s->trace().to_json();
      }
    }
  }
  std::printf("[ std_rules ] %d sampled schedules built and run by llvm.cpu\n", built);
  EXPECT_GT(built, 0);
#endif
}

} // namespace
} // namespace mt
