// The LLVM target loaded as a real plugin through the host: discovered, created by name,
// building and running a library workload that matches the interpreter.
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../function_args.h"
#include "core/lower/interpreter.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/schedule.h"
#include "core/workload/library.h"

#ifdef METATUNE_LLVM_CPU_PLUGIN
namespace mt {
namespace {

using test_args::make_args;
using test_args::ptrs;

TEST(LlvmPlugin, LoadsAndBuildsAScheduledWorkload) {
  PluginHost host;
  const PluginRecord& rec = host.load(METATUNE_LLVM_CPU_PLUGIN);
  ASSERT_TRUE(rec.loaded()) << rec.message;
  auto target = host.create_target("llvm.cpu", R"({"num_threads": 2})");
  ASSERT_NE(target, nullptr);
  auto desc = nlohmann::json::parse(target->describe_device());
  EXPECT_EQ(desc["kind"], "llvm");
  EXPECT_GE(desc["vector_bytes"].get<int>(), 16);

  Function f = make_workload("matmul(M=64,N=48,K=32)");
  Schedule sch(f, 3);
  auto block = sch.get_block(sch.name_of(sch.all_blocks().back()));
  auto loops = sch.get_loops(block);
  sch.parallel(loops[0]);
  auto ref = make_args(f);
  interpret(f, ptrs(ref));
  auto module = target->build(sch.func());
  auto got = make_args(f);
  module->run(ptrs(got));
  auto outs = f.output_mask();
  for (size_t i = 0; i < got.size(); ++i) {
    if (!outs[i]) continue;
    std::string why;
    EXPECT_TRUE(allclose(got[i], ref[i], 1e-5, 1e-5, &why)) << why;
  }
  auto times = module->time(ptrs(got), 3, 0.001);
  ASSERT_EQ(times.size(), 3u);
  for (double t : times)
    EXPECT_GT(t, 0);
}

TEST(LlvmPlugin, BadConfigurationIsReported) {
  PluginHost host;
  ASSERT_TRUE(host.load(METATUNE_LLVM_CPU_PLUGIN).loaded());
  try {
    host.create_target("llvm.cpu", R"({"target": "llvm -bogus"})");
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("-bogus"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace mt
#endif
