// Components written with the C++ SDK, one of every kind, driven by the host through the ABI:
// rules (including one that throws), analysis accessors, a mutator over traces, a
// postprocessor, a cost model, a search strategy, a target that walks the lowered program
// and a layer that builds tensor expressions.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "abi_test_util.h"
#include "core/lower/lower.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/analysis.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"
#include "core/workload/te.h"

namespace mt {
namespace {

class SdkPlugin : public ::testing::Test {
protected:
  void SetUp() override {
    const PluginRecord& r = host.load(abi_test::good_dir() / "sdk_components.so");
    ASSERT_TRUE(r.loaded()) << r.message;
  }
  std::string annotation(const Schedule& sch, BlockRV b, const std::string& key) {
    const auto& anns = sch.get(b).annotations;
    auto it = anns.find(key);
    if (it == anns.end()) return "<missing>";
    if (auto* s = std::get_if<std::string>(&it->second)) return *s;
    return std::to_string(std::get<int64_t>(it->second));
  }
  PluginHost host;
};

TEST_F(SdkPlugin, RuleSplitsLikeTheCPlugin) {
  Function f = make_workload("matmul(M=12,N=8,K=6)");
  auto sch = std::make_shared<Schedule>(f);
  BlockRV b = sch->all_blocks()[0];
  auto out = host.create_schedule_rule("test.sdk.SplitBy4")->apply(sch, b);
  ASSERT_EQ(out.size(), 1u);
  std::vector<LoopRV> loops = sch->get_loops(b);
  ASSERT_EQ(loops.size(), 4u);
  EXPECT_EQ(sch->get(loops[0]).extent, 3);
  EXPECT_EQ(sch->get(loops[1]).extent, 4);
  abi_test::expect_same_results(f, sch->func());
}

TEST_F(SdkPlugin, SampledSplitIsDeterministicAndReplayable) {
  Function f = make_workload("matmul(M=32,N=8,K=4)");
  auto rule = host.create_schedule_rule("test.sdk.SampledSplit");
  auto a = std::make_shared<Schedule>(f, 42);
  auto b = std::make_shared<Schedule>(f, 42);
  rule->apply(a, a->all_blocks()[0]);
  rule->apply(b, b->all_blocks()[0]);
  EXPECT_EQ(a->trace().to_json(), b->trace().to_json());
  std::vector<LoopRV> loops = a->get_loops(a->all_blocks()[0]);
  ASSERT_EQ(loops.size(), 4u);
  EXPECT_EQ(a->get(loops[0]).extent * a->get(loops[1]).extent, 32);
  // The trace the plugin recorded replays on a fresh schedule to the same loops.
  Schedule replay(f, 7);
  a->trace().apply_to(replay);
  std::vector<LoopRV> rl = replay.get_loops(replay.all_blocks()[0]);
  ASSERT_EQ(rl.size(), 4u);
  EXPECT_EQ(replay.get(rl[0]).extent, a->get(loops[0]).extent);
  abi_test::expect_same_results(f, a->func());
}

TEST_F(SdkPlugin, ThrowingRuleBecomesAPluginErrorAndTheHostSurvives) {
  Function f = make_workload("matmul(M=8,N=8,K=8)");
  auto sch = std::make_shared<Schedule>(f);
  auto thrower = host.create_schedule_rule("test.sdk.Throwing");
  try {
    thrower->apply(sch, sch->all_blocks()[0]);
    FAIL() << "expected PluginError";
  } catch (const PluginError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("boom from test.sdk.Throwing"), std::string::npos) << what;
    EXPECT_NE(what.find("sdk_components.so"), std::string::npos) << what;
    EXPECT_NE(what.find("schedule_rule 'test.sdk.Throwing'"), std::string::npos) << what;
    EXPECT_EQ(e.status(), MT_ERROR_PLUGIN);
    EXPECT_EQ(e.operation(), "apply");
  }
  // That cost one candidate, not the run: the same instance and other rules still work.
  EXPECT_THROW(thrower->apply(sch, sch->all_blocks()[0]), PluginError);
  auto split = host.create_schedule_rule("test.sdk.SplitBy4");
  EXPECT_EQ(split->apply(sch, sch->all_blocks()[0]).size(), 1u);
  EXPECT_EQ(sch->get_loops(sch->all_blocks()[0]).size(), 4u);
}

TEST_F(SdkPlugin, IllegalPrimitiveIsAScheduleErrorThePluginCanCatch) {
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=8,N=8,K=8)"));
  BlockRV b = sch->all_blocks()[0];
  host.create_schedule_rule("test.sdk.IllegalPrimitive")->apply(sch, b);
  std::string caught = annotation(*sch, b, "caught");
  EXPECT_NE(caught, "<missing>");
  EXPECT_NE(caught.find("compute_inline"), std::string::npos) << caught;
  EXPECT_EQ(sch->get_loops(b).size(), 3u); // the refused primitive changed nothing
}

TEST_F(SdkPlugin, AnalysisThroughTheAbiMatchesTheHostsOwn) {
  auto rule = host.create_schedule_rule("test.sdk.Analysis");
  for (const std::string& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    auto sch = std::make_shared<Schedule>(make_workload(spec));
    for (BlockRV b : sch->all_blocks()) {
      rule->apply(sch, b);
      const Block& block = sch->get(b);
      std::string kinds, extents;
      for (const IterVar& iv : block.iter_vars) {
        kinds += iv.kind == IterKind::Reduce ? "R" : "S";
        extents += (extents.empty() ? "" : ",") + std::to_string(iv.extent);
      }
      EXPECT_EQ(annotation(*sch, b, "iter_kinds"), kinds);
      EXPECT_EQ(annotation(*sch, b, "iter_extents"), extents);
      std::string reads;
      for (const Buffer& buf : block_reads(block))
        reads += (reads.empty() ? "" : ",") + buf->name + "/" +
                 std::to_string(block_loads_of(block, buf.get()).size()) + "x" +
                 std::to_string(buf->shape.size());
      EXPECT_EQ(annotation(*sch, b, "reads"), reads);
      std::string writes;
      for (const Buffer& buf : block_writes(block))
        writes += (writes.empty() ? "" : ",") + buf->name;
      EXPECT_EQ(annotation(*sch, b, "writes"), writes);
      EXPECT_EQ(annotation(*sch, b, "is_reduction"), is_reduction_block(block) ? "1" : "0");
      EXPECT_EQ(annotation(*sch, b, "name"), sch->name_of(b));
      std::string loops;
      for (LoopRV l : sch->get_loops(b))
        loops += (loops.empty() ? "" : ",") + std::to_string(sch->get(l).extent);
      EXPECT_EQ(annotation(*sch, b, "loop_extents"), loops);
    }
  }
}

TEST_F(SdkPlugin, AnalysisSeesIndexPatternsByVariableIdentity) {
  // out[i, j] = A[j, i]: the write uses iter vars 0 then 1.
  te::Tensor a = te::placeholder({4, 6}, DType::f32(), "A");
  te::Tensor t = te::compute(
      {6, 4}, te::ComputeFn([&](const std::vector<Expr>& ax) { return a(ax[1], ax[0]); }), "T");
  auto sch = std::make_shared<Schedule>(te::build("transpose", {a}, {t}));
  BlockRV b = sch->all_blocks()[0];
  host.create_schedule_rule("test.sdk.Analysis")->apply(sch, b);
  EXPECT_EQ(annotation(*sch, b, "write_pattern"), "01");
  EXPECT_EQ(annotation(*sch, b, "reads"), "A/1x2");
}

TEST_F(SdkPlugin, MutatorChangesADecisionOfTheTrace) {
  Function f = make_workload("matmul(M=24,N=8,K=4)");
  auto sch = std::make_shared<Schedule>(f, 3);
  LoopRV l = sch->get_loops(sch->all_blocks()[0])[0];
  std::vector<ExprRV> fs = sch->sample_perfect_tile(l, 3, 64);
  sch->split(l, {fs[0], fs[1], fs[2]});
  std::vector<int64_t> decision = {sch->get(fs[0]), sch->get(fs[1]), sch->get(fs[2])};

  auto mutator = host.create_mutator("test.sdk.ReverseFirstTile");
  RandomEngine rng(5);
  std::optional<Trace> mutated = mutator->apply(sch->trace(), rng);
  ASSERT_TRUE(mutated.has_value());
  std::vector<int64_t> reversed(decision.rbegin(), decision.rend());
  bool found = false;
  for (const Instruction& inst : mutated->instructions())
    if (inst.kind == "sample_perfect_tile") {
      ASSERT_TRUE(inst.decision.has_value());
      EXPECT_EQ(*inst.decision, reversed);
      found = true;
    }
  EXPECT_TRUE(found);
  Schedule replay(f);
  mutated->apply_to(replay);
  std::vector<LoopRV> loops = replay.get_loops(replay.all_blocks()[0]);
  ASSERT_EQ(loops.size(), 5u);
  EXPECT_EQ(replay.get(loops[0]).extent, reversed[0]);
  abi_test::expect_same_results(f, replay.func());

  // A trace without sampling instructions has nothing to mutate.
  Schedule plain(f);
  EXPECT_FALSE(mutator->apply(plain.trace(), rng).has_value());
}

TEST_F(SdkPlugin, PostprocRejectsWithItsReasonAndTakesConfiguration) {
  Function f = make_workload("matmul(M=32,N=8,K=4)");
  auto sch = std::make_shared<Schedule>(f);
  std::string reason;
  EXPECT_FALSE(host.create_postproc("test.sdk.RejectLongLoops")->apply(sch, &reason));
  EXPECT_NE(reason.find("extent 32 exceeds 16"), std::string::npos) << reason;
  EXPECT_TRUE(host.create_postproc("test.sdk.RejectLongLoops", "32")->apply(sch, &reason));
}

TEST_F(SdkPlugin, CostModelScoresAndLearns) {
  Function f = make_workload("matmul(M=16,N=8,K=4)");
  auto plain = std::make_shared<Schedule>(f);
  auto split = std::make_shared<Schedule>(f);
  host.create_schedule_rule("test.sdk.SplitBy4")->apply(split, split->all_blocks()[0]);
  auto model = host.create_cost_model("test.sdk.CountLoops");
  std::vector<double> scores = model->predict({plain, split});
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_GT(scores[0], scores[1]); // fewer loops scores higher
  model->update({plain}, {1e-3});
  EXPECT_GT(model->predict({plain})[0], scores[0]);
  EXPECT_THROW(model->update({plain}, {}), std::invalid_argument);
}

TEST_F(SdkPlugin, SearchStrategyReturnsForks) {
  Function f = make_workload("matmul(M=8,N=8,K=8)");
  auto space = std::make_shared<Schedule>(f);
  RandomEngine rng(1);
  auto strategy = host.create_search_strategy("test.sdk.CopySpaces");
  std::vector<std::shared_ptr<Schedule>> cands = strategy->generate({space}, rng, 3);
  ASSERT_EQ(cands.size(), 3u);
  for (const auto& c : cands)
    EXPECT_NE(c, space);
  strategy->notify(cands, {1.0, 2.0, 3.0});
}

TEST_F(SdkPlugin, TargetBuildsFromTheAccessorWalkAndMatchesTheInterpreter) {
  auto target = host.create_target("test.sdk.TreeTarget");
  EXPECT_NE(target->describe_device().find("tree-interpreter"), std::string::npos);
  EXPECT_EQ(target->default_components(ComponentKind::ScheduleRule),
            (std::vector<std::string>{"test.sdk.SplitBy4", "test.c.SplitBy4"}));
  EXPECT_TRUE(target->default_components(ComponentKind::Mutator).empty());
  for (const std::string& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    bool supported = true;
    for (const Buffer& p : f.params)
      supported &= p->dtype == DType::f32() || p->dtype == DType::i32();
    if (!supported) continue;
    // Schedule it a little so that the lowered program has splits, predicates, allocations.
    auto sch = std::make_shared<Schedule>(f);
    auto rule = host.create_schedule_rule("test.sdk.SplitBy4");
    for (BlockRV b : sch->all_blocks())
      rule->apply(sch, b);
    std::unique_ptr<PluginModule> module = target->build(sch->func());
    std::vector<NDArray> expected = abi_test::interpret_on_random(f);
    std::vector<NDArray> got = abi_test::make_args(f);
    module->run(abi_test::pointers(got));
    for (size_t i = 0; i < got.size(); ++i) {
      std::string why;
      EXPECT_TRUE(allclose(got[i], expected[i], 1e-4, 1e-4, &why)) << "param " << i << ": " << why;
    }
    std::vector<double> times = module->time(abi_test::pointers(got), 2, 0.0);
    ASSERT_EQ(times.size(), 2u);
    EXPECT_GT(times[0], 0.0);
  }
}

// ABI 1.8's prepacked params through the SDK and the host: the test module takes matmul's A
// packed (its elements reversed) and gives the interpreter's result; a param it offers but
// fails to pack is a PluginError naming the module's reason.
TEST_F(SdkPlugin, ModuleTakesAParamPacked) {
  Function f = make_workload("matmul(M=4,N=5,K=3)");
  std::unique_ptr<PluginModule> module = host.create_target("test.sdk.TreeTarget")->build(f);
  std::optional<PluginModule::PackedLayout> a = module->packed_layout(0);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes, 4u * 3u * 4u);
  EXPECT_EQ(a->key, "reversed 48");
  EXPECT_FALSE(module->packed_layout(2)) << "the output is not offered";
  std::vector<NDArray> got = abi_test::make_args(f);
  std::vector<uint32_t> packed(a->bytes / 4);
  module->pack(0, got[0], packed.data());
  EXPECT_NE(std::memcmp(packed.data(), got[0].data(), a->bytes), 0) << "a layout of its own";
  NDArray view(got[0].dtype(), got[0].shape(), packed.data());
  std::vector<NDArray*> args = abi_test::pointers(got);
  args[0] = &view;
  module->run_packed(args, {1, 0, 0});
  std::vector<NDArray> expected = abi_test::interpret_on_random(f);
  std::string why;
  EXPECT_TRUE(allclose(got[2], expected[2], 1e-5, 1e-5, &why)) << why;
  ASSERT_TRUE(module->packed_layout(1));
  try {
    module->pack(1, got[1], packed.data());
    ADD_FAILURE() << "param 1 was packed";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("test: no packing for param 1"), std::string::npos)
        << e.what();
  }
}

TEST_F(SdkPlugin, ModuleOutlivesTheTargetAndTheHost) {
  Function f = make_workload("matmul(M=4,N=4,K=4)");
  std::unique_ptr<PluginModule> module;
  {
    PluginHost other;
    other.load(abi_test::good_dir() / "sdk_components.so");
    module = other.create_target("test.sdk.TreeTarget")->build(f);
  }
  std::vector<NDArray> got = abi_test::make_args(f);
  module->run(abi_test::pointers(got));
  std::vector<NDArray> expected = abi_test::interpret_on_random(f);
  EXPECT_TRUE(allclose(got[2], expected[2], 1e-5, 1e-5));
}

TEST_F(SdkPlugin, LayerBuildsTensorExpressions) {
  te::Tensor x = te::placeholder({3, 5}, DType::f32(), "x");
  std::vector<te::Tensor> outs = host.create_layer("test.sdk.ReluPlusOne")->forward({x});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].shape(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(outs[1].shape(), (std::vector<int64_t>{3}));
  Function f = te::build("layer", {x}, outs);
  std::vector<NDArray> args = abi_test::interpret_on_random(f);
  const NDArray& in = args[0];
  for (int64_t i = 0; i < 3; ++i) {
    double row = 0;
    for (int64_t j = 0; j < 5; ++j) {
      double v = in.get_double(i * 5 + j);
      EXPECT_FLOAT_EQ(static_cast<float>(args[1].get_double(i * 5 + j)),
                      static_cast<float>(std::max(v, 0.0) + 1.0));
      row += v;
    }
    EXPECT_NEAR(args[2].get_double(i), row, 1e-5);
  }
}

} // namespace
} // namespace mt
