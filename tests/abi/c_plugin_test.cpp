// A plugin written in plain C registers schedule rules that the host applies; the result is
// checked through mt::Schedule and, numerically, in the reference interpreter.
#include <gtest/gtest.h>

#include "abi_test_util.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"

namespace mt {
namespace {

class CPlugin : public ::testing::Test {
protected:
  void SetUp() override {
    const PluginRecord& r = host.load(abi_test::good_dir() / "c_split_rule.so");
    ASSERT_TRUE(r.loaded()) << r.message;
  }
  PluginHost host;
};

TEST_F(CPlugin, SplitsTheOutermostLoopInPlace) {
  Function f = make_workload("matmul(M=12,N=8,K=6)");
  auto sch = std::make_shared<Schedule>(f);
  BlockRV block = sch->all_blocks()[0];
  std::vector<int64_t> before;
  for (LoopRV l : sch->get_loops(block))
    before.push_back(sch->get(l).extent);
  ASSERT_EQ(before.size(), 3u);

  auto rule = host.create_schedule_rule("test.c.SplitBy4");
  std::vector<std::shared_ptr<Schedule>> out = rule->apply(sch, block);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], sch); // modified in place and pushed back

  std::vector<LoopRV> loops = sch->get_loops(block);
  ASSERT_EQ(loops.size(), 4u);
  EXPECT_EQ(sch->get(loops[0]).extent, before[0] / 4);
  EXPECT_EQ(sch->get(loops[1]).extent, 4);
  EXPECT_EQ(sch->get(loops[2]).extent, before[1]);
  EXPECT_EQ(sch->get(loops[3]).extent, before[2]);
  // The plugin's calls are recorded in the trace like any other.
  bool has_split = false;
  for (const Instruction& inst : sch->trace().instructions())
    has_split |= inst.kind == "split";
  EXPECT_TRUE(has_split);
  abi_test::expect_same_results(f, sch->func());
}

TEST_F(CPlugin, ImperfectSplitStillComputesTheSameNumbers) {
  Function f = make_workload("matmul(M=10,N=7,K=5)");
  auto sch = std::make_shared<Schedule>(f);
  BlockRV block = sch->all_blocks()[0];
  host.create_schedule_rule("test.c.SplitBy4")->apply(sch, block);
  std::vector<LoopRV> loops = sch->get_loops(block);
  ASSERT_EQ(loops.size(), 4u);
  EXPECT_EQ(sch->get(loops[0]).extent, 3); // ceil(10 / 4)
  abi_test::expect_same_results(f, sch->func());
}

TEST_F(CPlugin, ForkKeepsTheOriginalAndAddsASplitCopy) {
  Function f = make_workload("matmul(M=16,N=8,K=4)");
  auto sch = std::make_shared<Schedule>(f);
  BlockRV block = sch->all_blocks()[0];
  std::vector<std::shared_ptr<Schedule>> out =
      host.create_schedule_rule("test.c.ForkSplitBy4")->apply(sch, block);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], sch);
  EXPECT_NE(out[1], sch);
  EXPECT_EQ(out[0]->get_loops(block).size(), 3u);
  EXPECT_EQ(out[1]->get_loops(block).size(), 4u);
  abi_test::expect_same_results(f, out[1]->func());
}

TEST_F(CPlugin, AppliesToEveryBlockOfEveryTestWorkload) {
  auto rule = host.create_schedule_rule("test.c.SplitBy4");
  for (const std::string& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    auto sch = std::make_shared<Schedule>(f);
    std::vector<BlockRV> blocks = sch->all_blocks();
    for (BlockRV b : blocks) {
      size_t loops = sch->get_loops(b).size();
      std::vector<std::shared_ptr<Schedule>> out;
      ASSERT_NO_THROW(out = rule->apply(sch, b));
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(sch->get_loops(b).size(), loops == 0 ? 0 : loops + 1);
    }
    abi_test::expect_same_results(f, sch->func());
  }
}

} // namespace
} // namespace mt
