// Each standard component on its own: what it does to a block (structure, annotations, loop
// kinds), checked against the host's view of the schedule, plus its refusals and errors.
#include <algorithm>
#include <map>
#include <set>

#include "core/ir/parser.h"
#include "core/schedule/analysis.h"
#include "core/workload/library.h"
#include "std_rules_test_util.h"

namespace mt {
namespace {

using namespace std_rules_test;

std::unique_ptr<PluginScheduleRule> rule(const std::string& name, const TuneAttributes& attrs,
                                         const std::string& config = {}) {
  auto r = host().create_schedule_rule(name, config);
  r->initialize(attrs);
  return r;
}

std::unique_ptr<PluginPostproc> postproc(const std::string& name, const TuneAttributes& attrs) {
  auto p = host().create_postproc(name);
  p->initialize(attrs);
  return p;
}

// Applies one rule to every block (post-order), like the design-space generator.
std::vector<std::shared_ptr<Schedule>> apply_rule(const Function& f, PluginScheduleRule& r,
                                                  uint64_t seed = 1) {
  auto sch = std::make_shared<Schedule>(f, seed);
  std::vector<BlockRV> blocks = sch->all_blocks();
  std::vector<std::shared_ptr<Schedule>> spaces{sch};
  for (size_t k = blocks.size(); k-- > 0;) {
    std::vector<std::shared_ptr<Schedule>> next;
    for (auto& s : spaces) {
      if (!s->valid(blocks[k])) {
        next.push_back(s);
        continue;
      }
      for (auto& o : r.apply(s, blocks[k]))
        next.push_back(o);
    }
    spaces = next;
  }
  return spaces;
}

std::vector<std::string> block_names(const Function& f) {
  return block_names_in_order(f.body);
}

const Block* find(const Function& f, const std::string& name) {
  for (auto* br : collect_blocks(f.body))
    if (br->block->name == name) return br->block.get();
  return nullptr;
}

std::vector<const ForNode*> loops_with(const Function& f, ForKind kind) {
  std::vector<const ForNode*> out;
  visit_stmts(f.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::For && as<ForNode>(s)->for_kind == kind) out.push_back(as<ForNode>(s));
    return true;
  });
  return out;
}

std::vector<const ForNode*> enclosing_loops(const Function& f, const std::string& block) {
  return find_block(f.body, block)->loops();
}

// The space's trace replayed with every decision drawn afresh from `seed`, as the search
// samples it; null (the reason reported) when a primitive refuses.
std::shared_ptr<Schedule> resample(const Function& f, const Schedule& space, uint64_t seed) {
  std::shared_ptr<Schedule> s;
  std::string why;
  if (sample(f, space.trace(), seed, false, {}, &s, &why) == SampleOutcome::Ok) return s;
  ADD_FAILURE() << "seed " << seed << ": " << why;
  return nullptr;
}

const TuneAttributes kCpu = cpu_set().attrs;
const TuneAttributes kGpu = gpu_set().attrs;

TEST(StdRulesAutoInline, ElementwiseChainCollapsesIntoTheOutput) {
  Function f = make_workload("elementwise(M=5,N=7,ops=sub_sigmoid_exp_gelu_mul)");
  ASSERT_GT(block_names(f).size(), 1u);
  auto spaces = apply_rule(f, *rule("std.AutoInline", kCpu));
  ASSERT_EQ(spaces.size(), 1u);
  EXPECT_EQ(block_names(spaces[0]->func()).size(), 1u);
  EXPECT_EQ(compare(run(f), spaces[0]->func()), "");
}

// GPU (and CPU when configured so): the padding is inlined into the convolution; every block
// left is a reduction or writes an output.
TEST(StdRulesAutoInline, PaddingIsInlinedAndReductionsStay) {
  Function f = make_workload("conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1)");
  for (auto [target, config] : {std::pair<const TuneAttributes*, const char*>{&kGpu, ""},
                                {&kCpu, R"({"disallow_if_then_else": false})"}}) {
    auto spaces = apply_rule(f, *rule("std.AutoInline", *target, config));
    ASSERT_EQ(spaces.size(), 1u);
    std::vector<std::string> names = block_names(spaces[0]->func());
    std::vector<bool> outs = spaces[0]->func().output_mask();
    for (const std::string& n : names) {
      const Block* b = find(spaces[0]->func(), n);
      bool writes_output = false;
      for (size_t i = 0; i < f.params.size(); ++i)
        writes_output = writes_output || (outs[i] && block_writes_buffer(*b, f.params[i].get()));
      EXPECT_TRUE(is_reduction_block(*b) || writes_output) << n;
    }
    EXPECT_LT(names.size(), block_names(f).size());
    EXPECT_EQ(compare(run(f), spaces[0]->func()), "");
  }
}

// CPU default (MetaSchedule's disallow_if_then_else): the padding, a conditional value, stays
// a block of its own, so that the convolution reads a padded copy without guards.
TEST(StdRulesAutoInline, CpuKeepsConditionalPaddingApart) {
  Function f = make_workload("conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1)");
  auto spaces = apply_rule(f, *rule("std.AutoInline", kCpu));
  ASSERT_EQ(spaces.size(), 1u);
  EXPECT_EQ(block_names(spaces[0]->func()), block_names(f));
  EXPECT_EQ(compare(run(f), spaces[0]->func()), "");
  EXPECT_THROW(host().create_schedule_rule("std.AutoInline", R"({"disallow_if_then_else": 3})"),
               PluginError);
}

// Softmax's exp feeds two consumers (the row sum and the normalisation): on CPU it stays a block
// of its own, computed once; on GPU (or configured so) it is inlined into both. A math call with
// one consumer (the elementwise chain above) is inlined on CPU all the same.
TEST(StdRulesAutoInline, CpuComputesAMathCallFeedingTwoConsumersOnce) {
  Function f = make_workload("softmax(M=6,N=10)");
  auto has = [](const Function& g, const std::string& name) {
    std::vector<std::string> names = block_names(g);
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  ASSERT_TRUE(has(f, "softmax_exp"));
  std::vector<NDArray> ref = run(f);
  auto cpu = apply_rule(f, *rule("std.AutoInline", kCpu));
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_TRUE(has(cpu[0]->func(), "softmax_exp"));
  EXPECT_EQ(compare(ref, cpu[0]->func()), "");
  for (auto [target, config] : {std::pair<const TuneAttributes*, const char*>{&kGpu, ""},
                                {&kCpu, R"({"disallow_recomputed_math": false})"}}) {
    auto spaces = apply_rule(f, *rule("std.AutoInline", *target, config));
    ASSERT_EQ(spaces.size(), 1u);
    EXPECT_FALSE(has(spaces[0]->func(), "softmax_exp")) << config;
    EXPECT_EQ(compare(ref, spaces[0]->func()), "");
  }
  EXPECT_THROW(
      host().create_schedule_rule("std.AutoInline", R"({"disallow_recomputed_math": "yes"})"),
      PluginError);
}

TEST(StdRulesAutoInline, EpilogueIsReverseInlinedIntoItsProducer) {
  Function f = make_workload("dense(M=8,N=32,K=16)"); // matmul + bias + gelu
  auto spaces = apply_rule(f, *rule("std.AutoInline", kCpu));
  ASSERT_EQ(spaces.size(), 1u);
  std::vector<std::string> names = block_names(spaces[0]->func());
  EXPECT_EQ(names.size(), 2u) << "the reduction and one fused epilogue";
  EXPECT_EQ(compare(run(f), spaces[0]->func()), "");
}

TEST(StdRulesMultiLevelTiling, CpuForksWriteCacheLevelsAndTilesSSRSRS) {
  Function f = make_workload("matmul(M=32,N=24,K=16)");
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu,
                                    R"({"read_reuse": "none", "padded_inner_factors": [],
                                        "register_tile": false})"));
  ASSERT_EQ(spaces.size(), 3u) << "no cache, cache at level 1, cache at level 2";
  std::vector<NDArray> ref = run(f);
  std::string block = block_names(f)[0];
  for (size_t i = 0; i < spaces.size(); ++i) {
    const Function& g = spaces[i]->func();
    const Block* b = find(g, block);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(std::get<std::string>(b->annotations.at("meta_schedule.tiling_structure")), "SSRSRS");
    // 2 spatial loops x 4 levels + 1 reduction loop x 2 levels.
    EXPECT_EQ(enclosing_loops(g, block).size(), 10u);
    EXPECT_EQ(block_names(g).size(), i == 0 ? 1u : 2u);
    EXPECT_EQ(compare(ref, g), "");
  }
  // The write-back sits under the first / second spatial level (2 / 4 loops deep).
  for (size_t i = 1; i < 3; ++i) {
    std::vector<std::string> names = block_names(spaces[i]->func());
    std::string cache = names[0] == block ? names[1] : names[0];
    auto loops = enclosing_loops(spaces[i]->func(), cache);
    EXPECT_EQ(loops.size(), 2 * i + 2) << cache; // outer tile loops + its own two
  }
}

TEST(StdRulesMultiLevelTiling, GpuBindsLevelsAndStagesInputsInSharedMemory) {
  Function f = make_workload("matmul(M=32,N=24,K=16)");
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kGpu));
  ASSERT_EQ(spaces.size(), 1u);
  const Function& g = spaces[0]->func();
  std::string block = block_names(f)[0];
  EXPECT_EQ(std::get<std::string>(find(g, block)->annotations.at("meta_schedule.tiling_structure")),
            "SSSRRSRS");
  std::multiset<std::string> tags;
  for (const ForNode* l : loops_with(g, ForKind::ThreadBinding))
    tags.insert(l->thread_tag);
  EXPECT_EQ(tags.count("blockIdx.x"), 1u);
  EXPECT_EQ(tags.count("vthread"), 1u);
  EXPECT_EQ(tags.count("threadIdx.x"), 1u);
  int shared = 0, local = 0, fetch = 0;
  for (const Buffer& b : g.buffers) {
    shared += b->scope == "shared";
    local += b->scope == "local";
  }
  for (auto* br : collect_blocks(g.body))
    fetch += br->block->annotations.count("meta_schedule.cooperative_fetch") ? 1 : 0;
  EXPECT_EQ(shared, 2) << "both inputs staged";
  EXPECT_EQ(local, 1) << "the result accumulates in a local cache";
  EXPECT_EQ(fetch, 2);
  EXPECT_EQ(compare(run(f), g), "");
}

TEST(StdRulesMultiLevelTiling, BlocksWithoutReuseAreLeftAlone) {
  for (const char* spec : {"softmax(M=8,N=33)", "elementwise(M=8,N=16)", "norm(B=2,M=8,N=16)"}) {
    Function f = make_workload(spec);
    auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu));
    ASSERT_EQ(spaces.size(), 1u) << spec;
    EXPECT_EQ(spaces[0]->trace().size(), 1u) << spec << ": only the driver's lookup";
  }
}

// A decode step's attention context with the heads' channels as one flat axis k: each head's
// probabilities are read by all of its channels (probs[k // 8, j]), a reuse along k that
// only a division shows -- tiled like any reduction with reuse (on Sapphire Rapids the
// Llama decode step's went from 0.114 ms to 0.002 ms). Under a modulo, or a division by 1,
// every k reads its own element: no reuse.
TEST(StdRulesMultiLevelTiling, AnInputReadThroughADivisionIsReused) {
  auto context = [](const std::string& probs_index) {
    return parse_function(
        R"(func context(values: f32[1, 16, 8], probs: f32[1, 3, 1, 16], out: f32[1, 1, 24]) {
  for i in 1 {
    for j in 1 {
      for k in 24 {
        for j_1 in 16 {
          block out(vi: S[1] = i, vj: S[1] = j, vk: S[24] = k, vj_1: R[16] = j_1) {
            init { out[vi, vj, vk] = 0f32 }
            out[vi, vj, vk] = out[vi, vj, vk] + probs[vi, )" +
        probs_index + R"(, vj, vj_1] * values[vi, vj_1, vk // 8 // 3 * 8 + vk % 8]
          }
        }
      }
    }
  }
})");
  };
  Function f = context("vk // 8");
  std::vector<NDArray> ref = run(f);
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu));
  ASSERT_GE(spaces.size(), 1u);
  for (const auto& space : spaces) {
    ASSERT_TRUE(find(space->func(), "out")->annotations.count("meta_schedule.tiling_structure"));
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      std::shared_ptr<Schedule> s = resample(f, *space, seed);
      ASSERT_TRUE(s);
      EXPECT_EQ(compare(ref, s->func()), "") << "seed " << seed;
    }
  }
  for (const char* index : {"vk % 3", "vk // 1 % 3"}) {
    auto untouched = apply_rule(context(index), *rule("std.MultiLevelTiling", kCpu));
    ASSERT_EQ(untouched.size(), 1u) << index;
    EXPECT_EQ(untouched[0]->trace().size(), 1u) << index << ": only the driver's lookup";
  }
}

TEST(StdRulesMultiLevelTiling, CpuMayStageInputsIntoPackedCaches) {
  Function f = make_workload("matmul(M=32,N=24,K=16)");
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu,
                                    R"({"read_levels": [2], "read_inputs": "all",
                                        "padded_inner_factors": [], "register_tile": false})"));
  // Each of the 3 write-reuse spaces without and with both inputs staged at level 2.
  ASSERT_EQ(spaces.size(), 6u);
  std::vector<NDArray> ref = run(f);
  size_t staged = 0;
  for (const auto& sp : spaces) {
    const Function& g = sp->func();
    size_t extra = block_names(g).size() - block_names(f).size();
    int caches = 0;
    for (const Buffer& b : g.buffers)
      caches += b->name == "A_global" || b->name == "B_global";
    if (extra >= 2 && caches == 2) ++staged;
    EXPECT_EQ(compare(ref, g), "");
  }
  EXPECT_EQ(staged, 3u);
}

// The CPU default stages only the vector-loaded input (B, indexed by the vectorized j), as a
// panel per column block (level 1) or per tile (level 2); A, read one broadcast per row, is
// left alone. Every space computes the same numbers.
TEST(StdRulesMultiLevelTiling, CpuStagesTheVectorLoadedInputAtLevelsOneAndTwo) {
  Function f = make_workload("matmul(M=32,N=24,K=16)");
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu,
                                    R"({"padded_inner_factors": [], "register_tile": false})"));
  ASSERT_EQ(spaces.size(), 9u) << "3 write-reuse spaces x (no staging, level 1, level 2)";
  std::vector<NDArray> ref = run(f);
  std::map<size_t, size_t> depth_count; // loops above B's copy -> spaces
  for (const auto& sp : spaces) {
    const Function& g = sp->func();
    EXPECT_EQ(compare(ref, g), "");
    for (const Buffer& b : g.buffers)
      EXPECT_NE(b->name, "A_global") << "A is never staged by default";
    for (const std::string& n : block_names(g)) {
      bool is_b_copy = false;
      for (const Buffer& b : g.buffers)
        is_b_copy =
            is_b_copy || (b->name == "B_global" && block_writes_buffer(*find(g, n), b.get()));
      if (is_b_copy) ++depth_count[enclosing_loops(g, n).size() - 2]; // minus its own 2 loops
    }
  }
  // Level 1 = under i0 j0 (2 loops), level 2 = under i0 j0 i1 j1 (4), in each write space.
  EXPECT_EQ(depth_count, (std::map<size_t, size_t>{{2, 3}, {4, 3}}));
}

// With read_location "sampled", each staged input goes to its own sampled location, so a sample of
// the space may put A and B at different levels (or at the root, or not stage one: inline).
// Whatever is drawn computes the same numbers.
TEST(StdRulesMultiLevelTiling, CpuStagedInputsGoWhereTheirSampledLocationSays) {
  Function f = make_workload("matmul(M=32,N=24,K=16)");
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu,
                                    R"({"read_location": "sampled", "read_inputs": "all",
                                        "padded_inner_factors": [], "register_tile": false})"));
  ASSERT_EQ(spaces.size(), 6u) << "3 write-reuse spaces, each without and with staging";
  std::vector<NDArray> ref = run(f);
  size_t sampled_spaces = 0;
  std::set<std::vector<int64_t>> placements;
  for (const auto& sp : spaces) {
    size_t sites = 0;
    for (const auto& inst : sp->trace().instructions())
      sites += inst.kind == "sample_compute_location";
    if (sites == 0) continue;
    ++sampled_spaces;
    EXPECT_EQ(sites, 2u) << "one location per input";
    // Replayed with fresh draws: the locations vary, the numbers do not.
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      Schedule again(f, seed);
      try {
        sp->trace().apply_to(again, /*use_decisions=*/false);
      } catch (const ScheduleError&) {
        continue; // a draw the schedule refuses costs that sample only
      }
      std::vector<int64_t> where;
      for (const auto& inst : again.trace().instructions())
        if (inst.kind == "sample_compute_location") where.push_back(inst.decision->at(0));
      placements.insert(where);
      EXPECT_EQ(compare(ref, again.func()), "") << "seed " << seed;
    }
  }
  EXPECT_EQ(sampled_spaces, 3u);
  EXPECT_GT(placements.size(), 3u) << "the draws hardly differ";
}

// A row loop whose extent 6 does not divide also gets a space with a 6-row innermost tile
// (AVX2's 6 x 16 register tile): the loop is padded to a multiple of 6, the block guards the
// edge, and the numbers stay those of the reference.
TEST(StdRulesMultiLevelTiling, CpuPadsTheRowLoopForASixRowRegisterTile) {
  Function f = make_workload("matmul(M=32,N=24,K=16)");
  auto spaces = apply_rule(
      f, *rule("std.MultiLevelTiling", kCpu, R"({"read_reuse": "none", "register_tile": false})"));
  ASSERT_EQ(spaces.size(), 6u) << "perfect and padded tiling, each with 3 write-reuse choices";
  std::vector<NDArray> ref = run(f);
  std::string block = block_names(f)[0];
  size_t padded = 0;
  for (const auto& sp : spaces) {
    const Function& g = sp->func();
    EXPECT_EQ(compare(ref, g), "");
    auto loops = enclosing_loops(g, block);
    ASSERT_EQ(loops.size(), 10u);
    // Levels: i0 j0 i1 j1 k0 i2 j2 k1 i3 j3; the row loop's pieces are i0, i1, i2, i3.
    int64_t rows = loops[0]->extent * loops[2]->extent * loops[5]->extent * loops[8]->extent;
    if (loops[8]->extent == 6) {
      ++padded;
      EXPECT_EQ(rows, 36) << "32 rows padded to 6 x 6";
    } else {
      EXPECT_EQ(rows, 32);
    }
  }
  EXPECT_EQ(padded, 3u);
}

// register_tile (CPU default: for blocks without channel lanes): spaces whose innermost spatial
// level is a register tile -- 3 to 8 rows (or the padded 6) by one or two whole vectors along
// the innermost axis, every other spatial loop 1 there. Their own and sampled decisions compute
// the reference's numbers.
// Unset, register_tile is on for matmul-like blocks (no channel-lane space) and off for
// convolutions (their channel-lane spaces are the register tiles).
TEST(StdRulesMultiLevelTiling, CpuRegisterTileByDefaultOnlyWithoutChannelLanes) {
  auto count = [](const std::string& spec, const char* config) {
    return apply_rule(make_workload(spec), *rule("std.MultiLevelTiling", kCpu, config)).size();
  };
  const char* unset = R"({"read_reuse": "none"})";
  const char* off = R"({"read_reuse": "none", "register_tile": false})";
  const char* on = R"({"read_reuse": "none", "register_tile": true})";
  for (const char* spec : {"matmul(M=32,N=48,K=16)", "dense(M=10,N=16,K=12,bias=1,act=gelu)"}) {
    EXPECT_EQ(count(spec, unset), count(spec, on)) << spec;
    EXPECT_GT(count(spec, unset), count(spec, off)) << spec;
  }
  const char* conv = "conv2d(N=1,C=8,H=10,W=16,F=16,KH=3,KW=3,stride=1,padding=1)";
  EXPECT_EQ(count(conv, unset), count(conv, off));
  EXPECT_GT(count(conv, on), count(conv, off));
  // The GPU form has no CPU register tile.
  Function f = make_workload("matmul(M=32,N=48,K=16)");
  EXPECT_EQ(apply_rule(f, *rule("std.MultiLevelTiling", kGpu)).size(), 1u);
}

// Whether a MultiLevelTiling space is a register-tile one: those draw their rows and lanes
// with sample_categorical; the free spaces only with sample_perfect_tile.
bool draws_tile_shape(const Schedule& space) {
  for (const auto& inst : space.trace().instructions())
    if (inst.kind == "sample_categorical") return true;
  return false;
}

TEST(StdRulesMultiLevelTiling, CpuRegisterTileSpacesHaveRowsByWholeVectors) {
  for (const char* spec : {"matmul(M=32,N=48,K=16)", "batch_matmul(B=3,M=20,N=32,K=8)",
                           "dense(M=10,N=16,K=12,bias=1,act=gelu)"}) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    std::vector<NDArray> ref = run(f);
    std::string block = block_names(f)[0];
    auto with = apply_rule(
        f, *rule("std.MultiLevelTiling", kCpu, R"({"read_reuse": "none", "register_tile": true})"));
    auto without = apply_rule(f, *rule("std.MultiLevelTiling", kCpu,
                                       R"({"read_reuse": "none", "register_tile": false})"));
    EXPECT_GT(with.size(), without.size());
    size_t tiles = 0;
    for (const auto& sp : with) {
      const Function& g = sp->func();
      EXPECT_EQ(compare(ref, g), "");
      if (!draws_tile_shape(*sp)) continue;
      ++tiles;
      for (uint64_t seed = 0; seed <= 4; ++seed) {
        std::shared_ptr<Schedule> s = sp;
        std::string why;
        if (seed > 0) { // 0: the space's own decisions
          ASSERT_EQ(sample(f, sp->trace(), seed, false, {}, &s, &why), SampleOutcome::Ok) << why;
        }
        EXPECT_EQ(compare(ref, s->func()), "") << s->trace().to_json();
        std::vector<const ForNode*> l = enclosing_loops(s->func(), block);
        ASSERT_GE(l.size(), 3u);
        int64_t lanes = l.back()->extent, rows = l[l.size() - 2]->extent;
        EXPECT_TRUE(lanes == 8 || lanes == 16) << lanes;
        EXPECT_TRUE(rows >= 3 && rows <= 8) << rows;
        // batch_matmul's b is a unit loop of the register level (its third loop from last).
        if (std::string(spec).rfind("batch", 0) == 0) {
          EXPECT_EQ(l[l.size() - 3]->extent, 1);
        }
      }
    }
    EXPECT_GE(tiles, 3u) << "a register tile in each write-reuse space";
  }
}

// A register tile of R rows by V vectors needs R x V accumulators, V loaded vectors and a
// broadcast: R x V + V + 1 vector registers, or LLVM spills. Two vectors where a row count
// fits with them, else one: output width 14 divides only by 7 among the row counts, so on
// AVX2 (16 registers) the tile is 7 x 1 vector, never 7 x 2 (17); told 32 registers
// (AVX-512), 7 x 2. Every draw of every space -- re-sampled, as the search does -- fits, and
// computes the interpreter's numbers.
TEST(StdRulesMultiLevelTiling, CpuRegisterTilesFitTheVectorRegisters) {
  struct Case {
    const char* spec;
    int64_t registers;
  };
  for (const Case& c : {Case{"conv2d(N=1,C=4,H=3,W=14,F=16,KH=3,KW=3,stride=1,padding=1)", 16},
                        Case{"conv2d(N=1,C=4,H=3,W=14,F=16,KH=3,KW=3,stride=1,padding=1)", 32},
                        Case{"matmul(M=24,N=32,K=8)", 16}}) {
    SCOPED_TRACE(std::string(c.spec) + " with " + std::to_string(c.registers) + " registers");
    Function f = make_workload(c.spec);
    std::vector<NDArray> ref = run(f);
    std::string block = block_names(f).back();
    TuneAttributes attrs = kCpu;
    attrs["vector_registers"] = c.registers;
    auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", attrs,
                                      R"({"read_reuse": "none", "write_reuse": "none",
                                          "padded_inner_factors": [], "channel_lanes": true})"));
    std::set<std::pair<int64_t, int64_t>> shapes; // (rows, lanes) drawn
    for (const auto& sp : spaces) {
      if (!draws_tile_shape(*sp)) continue;
      for (uint64_t seed = 1; seed <= 40; ++seed) {
        std::shared_ptr<Schedule> s = resample(f, *sp, seed);
        ASSERT_TRUE(s);
        EXPECT_EQ(compare(ref, s->func()), "") << s->trace().to_json();
        std::vector<const ForNode*> l = enclosing_loops(s->func(), block);
        ASSERT_GE(l.size(), 2u);
        int64_t lanes = l.back()->extent, rows = l[l.size() - 2]->extent;
        // A convolution's innermost level is [.., y, x, f]: its rows may span y and x.
        if (std::string(c.spec).rfind("conv2d", 0) == 0) rows *= l[l.size() - 3]->extent;
        int64_t vectors = lanes / 8;
        EXPECT_LE(rows * vectors + vectors + 1, c.registers) << rows << " x " << lanes;
        shapes.insert({rows, lanes});
      }
    }
    std::string drawn;
    for (auto [r, l] : shapes)
      drawn += " " + std::to_string(r) + "x" + std::to_string(l);
    if (std::string(c.spec).rfind("conv2d", 0) == 0) {
      // Width 14: 7 x 2 vectors with 32 registers; with 16, where 7 x 2 does not fit and
      // 7 x 1 would hold only 7 accumulators, 3 rows of y times 2 of x by 2 vectors.
      EXPECT_TRUE(shapes.count({c.registers >= 17 ? 7 : 6, 16})) << drawn;
      EXPECT_EQ(shapes.size(), 1u) << drawn;
    } else {
      // 24 rows: 3, 4 or 6 of two vectors (8 of them would spill).
      EXPECT_TRUE(shapes.count({3, 16}) && shapes.count({4, 16}) && shapes.count({6, 16})) << drawn;
      EXPECT_EQ(shapes.size(), 3u) << drawn;
    }
  }
}

// A convolution's spaces on CPU are its channel-lane register tiles only (the free tiles are
// dropped unless asked for); a matmul keeps its free spaces next to its register tiles; each
// space computes the interpreter's numbers.
TEST(StdRulesMultiLevelTiling, CpuConvolutionsKeepOnlyChannelLaneSpacesByDefault) {
  auto spaces = [](const std::string& spec, const char* config) {
    return apply_rule(make_workload(spec), *rule("std.MultiLevelTiling", kCpu, config));
  };
  const char* conv = "conv2d(N=1,C=8,H=6,W=12,F=16,KH=3,KW=3,stride=1,padding=1)";
  Function f = make_workload(conv);
  std::vector<NDArray> ref = run(f);
  auto unset = spaces(conv, R"({"read_reuse": "none"})");
  auto with_free = spaces(conv, R"({"read_reuse": "none", "free_tiles": true})");
  auto without = spaces(conv, R"({"read_reuse": "none", "free_tiles": false})");
  ASSERT_FALSE(unset.empty());
  EXPECT_EQ(unset.size(), without.size());
  EXPECT_GT(with_free.size(), unset.size());
  for (const auto& sp : unset) {
    EXPECT_TRUE(draws_tile_shape(*sp)) << sp->trace().to_json();
    EXPECT_EQ(compare(ref, sp->func()), "");
  }
  size_t free = 0;
  for (const auto& sp : with_free)
    free += draws_tile_shape(*sp) ? 0 : 1;
  EXPECT_GT(free, 0u);
  const char* mm = "matmul(M=24,N=32,K=8)";
  EXPECT_EQ(spaces(mm, R"({"read_reuse": "none"})").size(),
            spaces(mm, R"({"read_reuse": "none", "free_tiles": true})").size());
  EXPECT_GT(spaces(mm, R"({"read_reuse": "none"})").size(),
            spaces(mm, R"({"read_reuse": "none", "free_tiles": false})").size());
}

// dense reads weight[N, K] along N, the vectorized axis: the staged copy is transposed to
// [K, N] so that the register tile loads contiguous vectors; data[M, K] does not vary with N
// and keeps its layout. Every space still computes the same numbers.
TEST(StdRulesMultiLevelTiling, CpuPacksTheStagedWeightWithTheVectorAxisLast) {
  Function f = make_workload("dense(M=16,N=32,K=8,bias=0,act=none)");
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu,
                                    R"({"padded_inner_factors": [], "register_tile": false})"));
  std::vector<NDArray> ref = run(f);
  size_t packed = 0, data_staged = 0;
  for (const auto& sp : spaces) {
    const Function& g = sp->func();
    EXPECT_EQ(compare(ref, g), "");
    for (const Buffer& b : g.buffers) {
      if (b->name == "weight_global") {
        EXPECT_EQ(b->shape, (std::vector<int64_t>{8, 32})); // [K, N], was [N, K]
        ++packed;
      }
      if (b->name == "data_global") ++data_staged;
    }
    size_t layouts = 0;
    for (const auto& inst : sp->trace().instructions())
      layouts += inst.kind == "transform_layout";
    EXPECT_LE(layouts, 1u);
  }
  EXPECT_EQ(packed, 6u) << "3 write spaces x levels 1 and 2";
  EXPECT_EQ(data_staged, 0u) << "data[M, K] does not vary with N: read by broadcast, not staged";
}

// In a convolution the vectorized x indexes the input window, and so does y: six output rows
// would each load their own input vectors. The padded row loop is therefore the output
// channels f, which only the (broadcast) weights depend on: 6 channels x 16 columns share
// every input load.
TEST(StdRulesMultiLevelTiling, CpuPadsTheLoopTheVectorLoadsDoNotDependOn) {
  Function f = make_workload("conv2d(N=1,C=4,H=8,W=8,F=10,KH=3,KW=3,stride=1,padding=1)");
  auto spaces = apply_rule(
      f, *rule("std.MultiLevelTiling", kCpu, R"({"read_reuse": "none", "channel_lanes": false,
                                              "register_tile": false})"));
  std::vector<NDArray> ref = run(f);
  size_t padded = 0;
  for (const auto& sp : spaces) {
    const Function& g = sp->func();
    EXPECT_EQ(compare(ref, g), "");
    for (const std::string& n : block_names(g)) {
      auto loops = enclosing_loops(g, n);
      if (loops.size() != 22) continue; // the tiled conv: 4 spatial x 4 + 3 reduction x 2
      // Levels: [n f y x] [n f y x] [c kh kw] [n f y x] [c kh kw] [n f y x].
      int64_t f_product =
          loops[1]->extent * loops[5]->extent * loops[12]->extent * loops[19]->extent;
      if (loops[19]->extent == 6) {
        ++padded;
        EXPECT_EQ(f_product, 12) << "10 output channels padded to 2 x 6";
        EXPECT_NE(loops[20]->extent, 6) << "y is not the padded loop";
      } else {
        EXPECT_EQ(f_product, 10);
      }
    }
  }
  EXPECT_EQ(padded, 3u) << "one padded space per write-reuse choice";
}

// Whether the scheduled convolution `block` accumulates into a staged copy of its output with
// the F output channels last (the channel-lane spaces) instead of the output's [N, F, ...].
bool lanes_along_channels(const Function& g, const std::string& block, int64_t F) {
  for (const Buffer& b : g.buffers)
    if (b->name == block + "_global" && b->shape.size() >= 3 && b->shape.back() == F &&
        b->shape[1] != F)
      return true;
  return false;
}

// A convolution's innermost spatial x indexes its input through a window (x * stride + kx):
// vectors along x need stride 1 and widths that are multiples of the lanes. The channel-lane
// spaces run the lanes along the output channels f instead, which only the weight uses: the
// accumulators are staged with f last, the weight packed as [C, KH, KW, F], and the innermost
// level is the register tile alone -- at most 8 rows of x by one, two or four whole vectors
// of f. Stride and dilation no longer matter. Every such space computes what the unscheduled
// convolution computes; a matmul (no window) gets none.
TEST(StdRulesMultiLevelTiling, CpuConvolutionsGetSpacesWithLanesAlongOutputChannels) {
  struct Case {
    const char* spec;
    const char* block;
    std::vector<int64_t> packed_weight;
  };
  for (const Case& c :
       {Case{"conv2d(N=1,C=3,H=9,W=9,F=16,KH=3,KW=3,stride=2,padding=1)", "conv2d", {3, 3, 3, 16}},
        Case{"conv2d(N=1,C=4,H=7,W=7,F=16,KH=3,KW=3,stride=1,padding=2,dilation=2,bias=1,relu=1)",
             "conv2d",
             {4, 3, 3, 16}},
        Case{"conv1d(N=1,C=4,L=12,F=16,K=3,stride=2,padding=1)", "conv1d", {4, 3, 16}}}) {
    SCOPED_TRACE(c.spec);
    Function f = make_workload(c.spec);
    std::vector<NDArray> ref = run(f);
    auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu));
    size_t channel = 0;
    for (const auto& sp : spaces) {
      const Function& g = sp->func();
      EXPECT_EQ(compare(ref, g), "");
      if (!lanes_along_channels(g, c.block, 16)) continue;
      ++channel;
      bool packed = false;
      for (const Buffer& b : g.buffers)
        if (b->name == "weight_global") packed = packed || b->shape == c.packed_weight;
      EXPECT_TRUE(packed) << "the weight is packed with the output channels last";
      std::vector<const ForNode*> loops = enclosing_loops(g, c.block);
      ASSERT_GE(loops.size(), 3u);
      int64_t lanes = loops.back()->extent, rows = loops[loops.size() - 2]->extent;
      EXPECT_TRUE(lanes == 8 || lanes == 16) << "whole AVX2 vectors of f32, got " << lanes;
      EXPECT_LE(rows, 8);
      // The loops of the innermost level before the rows (n, and y in 2-D) are unit loops.
      size_t spatial = std::string(c.block) == "conv1d" ? 3 : 4;
      for (size_t k = loops.size() - spatial; k < loops.size() - 2; ++k)
        EXPECT_EQ(loops[k]->extent, 1) << "loop " << k << " of the register tile level";
      // Sampled decisions too (the categorical vector width, the tile sizes).
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        std::shared_ptr<Schedule> s;
        std::string why;
        ASSERT_EQ(sample(f, sp->trace(), seed, false, {}, &s, &why), SampleOutcome::Ok) << why;
        EXPECT_EQ(compare(ref, s->func()), "") << s->trace().to_json();
      }
    }
    EXPECT_GE(channel, 2u) << "write cache at levels 1 and 2, weight staged";
  }
  Function mm = make_workload("matmul(M=16,N=16,K=16)");
  for (const auto& sp : apply_rule(mm, *rule("std.MultiLevelTiling", kCpu)))
    for (const auto& inst : sp->trace().instructions())
      EXPECT_NE(inst.kind, "transform_layout") << "B is read along N already; C is never staged";
}

// Every channel-lane space is offered twice: as it is, and with the input it broadcasts (the
// pad block's output, [N, C, H+2p, W+2p]) written channels-last by the pad block, [N, H+2p,
// W+2p, C]. Both compute the interpreter's numbers, sampled and replayed from their traces; a
// convolution without a pad block (its input a function argument) and a space whose lanes run
// along the innermost axis keep the input's layout, and so does a rule told not to.
TEST(StdRulesMultiLevelTiling, CpuChannelLaneSpacesAlsoWriteTheInputChannelsLast) {
  auto pads = [](const Function& g) {
    std::vector<std::vector<int64_t>> shapes;
    for (const Buffer& b : g.buffers)
      if (b->name == "pad") shapes.push_back(b->shape);
    return shapes;
  };
  Function f = make_workload("conv2d(N=1,C=3,H=9,W=9,F=16,KH=3,KW=3,stride=2,padding=1)");
  std::vector<NDArray> ref = run(f);
  const std::vector<int64_t> nchw{1, 3, 11, 11}, nhwc{1, 11, 11, 3};
  ASSERT_EQ(pads(f), std::vector<std::vector<int64_t>>{nchw});
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu));
  size_t lane_spaces = 0, channels_last = 0;
  for (const auto& sp : spaces) {
    const Function& g = sp->func();
    if (!lanes_along_channels(g, "conv2d", 16)) continue;
    ++lane_spaces;
    ASSERT_EQ(pads(g).size(), 1u);
    if (pads(g)[0] == nhwc) {
      ++channels_last;
    } else {
      EXPECT_EQ(pads(g)[0], nchw);
    }
    EXPECT_EQ(compare(ref, g), "");
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      std::shared_ptr<Schedule> s;
      std::string why;
      ASSERT_EQ(sample(f, sp->trace(), seed, false, {}, &s, &why), SampleOutcome::Ok) << why;
      EXPECT_EQ(compare(ref, s->func()), "") << s->trace().to_json();
      std::shared_ptr<Schedule> again;
      ASSERT_EQ(sample(f, Trace::from_json(s->trace().to_json()), seed, true, {}, &again, &why),
                SampleOutcome::Ok)
          << why;
      EXPECT_EQ(pads(again->func()), pads(s->func()));
      EXPECT_EQ(compare(ref, again->func()), "");
    }
  }
  EXPECT_GE(lane_spaces, 2u);
  EXPECT_EQ(channels_last * 2, lane_spaces) << "each channel-lane space once more, channels last";

  auto off =
      apply_rule(f, *rule("std.MultiLevelTiling", kCpu, R"({"channels_last_input": false})"));
  EXPECT_EQ(off.size() + channels_last, spaces.size());
  for (const auto& sp : off)
    EXPECT_EQ(pads(sp->func()), std::vector<std::vector<int64_t>>{nchw});
  // The free spaces (lanes along the output width; kept only when asked for) load the input as
  // vectors along its width and keep its layout.
  size_t free = 0;
  for (const auto& sp :
       apply_rule(f, *rule("std.MultiLevelTiling", kCpu, R"({"free_tiles": true})"))) {
    if (lanes_along_channels(sp->func(), "conv2d", 16)) continue;
    ++free;
    EXPECT_EQ(pads(sp->func()), std::vector<std::vector<int64_t>>{nchw});
  }
  EXPECT_GT(free, 0u);

  // No pad block: conv1d without padding reads its argument, whose layout the caller owns --
  // no more spaces than without the option.
  Function unpadded = make_workload("conv1d(N=1,C=4,L=12,F=16,K=3,stride=1,padding=0)");
  EXPECT_EQ(
      apply_rule(unpadded, *rule("std.MultiLevelTiling", kCpu)).size(),
      apply_rule(unpadded, *rule("std.MultiLevelTiling", kCpu, R"({"channels_last_input": false})"))
          .size());
}

TEST(StdRulesMultiLevelTiling, BadConfigurationIsRefusedAtCreation) {
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTiling", R"({"structure": "SXS"})"),
               PluginError);
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTiling", R"({"strucutre": "SRS"})"),
               PluginError);
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTiling", "not json"), PluginError);
  EXPECT_THROW(
      host().create_schedule_rule("std.MultiLevelTiling", R"({"padded_inner_factors": [1]})"),
      PluginError);
  EXPECT_THROW(
      host().create_schedule_rule("std.MultiLevelTiling", R"({"padded_inner_factors": [1000]})"),
      PluginError);
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTiling", R"({"read_location": "x"})"),
               PluginError);
  EXPECT_THROW(host().create_schedule_rule("std.MultiLevelTiling", R"({"read_inputs": "x"})"),
               PluginError);
  auto custom = host().create_schedule_rule(
      "std.MultiLevelTiling",
      R"({"structure": "SRS", "write_reuse": "none", "read_reuse": "none",
          "padded_inner_factors": [], "register_tile": false})");
  Function f = make_workload("matmul(M=8,N=8,K=8)");
  auto spaces = apply_rule(f, *custom);
  ASSERT_EQ(spaces.size(), 1u);
  EXPECT_EQ(enclosing_loops(spaces[0]->func(), block_names(f)[0]).size(), 5u);
}

// The loops under each loop marked "amx.bf16": their extents, outermost first.
std::vector<std::vector<int64_t>> amx_nests(const Function& f) {
  std::vector<std::vector<int64_t>> out;
  visit_stmts(f.body, [&](const Stmt& s) {
    if (s->kind != StmtKind::For) return true;
    const ForNode* l = as<ForNode>(s);
    auto it = l->annotations.find("meta_schedule.tensor_intrinsic");
    if (it == l->annotations.end() || std::get<std::string>(it->second) != "amx.bf16") return true;
    std::vector<int64_t> extents;
    for (const ForNode* x = l; x;
         x = x->body->kind == StmtKind::For ? as<ForNode>(x->body) : nullptr)
      extents.push_back(x->extent);
    out.push_back(extents);
    return false;
  });
  return out;
}

TEST(StdRulesMultiLevelTilingAmx, TilesForAmxWhereTheTargetOffersItsTileProducts) {
  TuneAttributes amx = kCpu;
  amx["tile_products"] = std::string("amx.bf16");
  // Not offered (no -fpmath=bf16, or no AMX): the block is left to MultiLevelTiling.
  Function dense = make_workload("dense(M=64,N=64,K=64,bias=1,act=gelu)");
  auto plain = apply_rule(dense, *rule("std.MultiLevelTilingAmx", kCpu));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_TRUE(amx_nests(plain[0]->func()).empty());
  for (const std::string spec :
       {"dense(M=64,N=64,K=64,bias=1,act=gelu)", "batch_matmul(B=2,M=32,N=32,K=64)",
        "batch_matmul(B=1,M=32,N=32,K=64)", "matmul(M=32,N=64,K=96)"}) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    auto spaces = apply_rule(f, *rule("std.MultiLevelTilingAmx", amx));
    ASSERT_EQ(spaces.size(), 2u) << "the tiled space and the untouched one";
    EXPECT_TRUE(amx_nests(spaces[1]->func()).empty());
    std::vector<NDArray> ref = run(f);
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      std::shared_ptr<Schedule> s = resample(f, *spaces[0], seed);
      ASSERT_TRUE(s);
      const Function& g = s->func();
      // Each marked nest is one 16 x 16 x 32 tile product; the loops compute what the
      // workload does (the interpreter runs them).
      std::vector<std::vector<int64_t>> nests = amx_nests(g);
      ASSERT_FALSE(nests.empty());
      for (const auto& n : nests)
        EXPECT_EQ(n, (std::vector<int64_t>{16, 16, 32}));
      EXPECT_EQ(compare(ref, g), "");
    }
  }
  // dense's bias and GELU run in the write-back of each block of tiles (the cache's block,
  // under the parallel loop and the block loops), no longer on their own.
  auto spaces = apply_rule(dense, *rule("std.MultiLevelTilingAmx", amx));
  const Function& g = spaces[0]->func();
  EXPECT_FALSE(find_block(g.body, "bias_add").has_value());
  ASSERT_TRUE(find_block(g.body, "dense_global").has_value());
  EXPECT_GT(enclosing_loops(g, "dense_global").size(), 4u);
}

TEST(StdRulesMultiLevelTilingAmx, LeavesWhatIsNotOneTileAlone) {
  TuneAttributes amx = kCpu;
  amx["tile_products"] = std::string("amx.bf16");
  // k not a multiple of 32, j not of 16, no reduction.
  for (const std::string spec :
       {"matmul(M=32,N=32,K=48)", "matmul(M=32,N=24,K=64)", "softmax(M=32,N=64)"}) {
    Function f = make_workload(spec);
    auto spaces = apply_rule(f, *rule("std.MultiLevelTilingAmx", amx));
    ASSERT_EQ(spaces.size(), 1u) << spec;
    EXPECT_TRUE(amx_nests(spaces[0]->func()).empty()) << spec;
  }
  EXPECT_THROW(rule("std.MultiLevelTilingAmx", amx, R"({"enabled": "maybe"})"), std::exception);
  EXPECT_THROW(rule("std.MultiLevelTilingAmx", amx, R"({"max_tiles_per_axis": 0})"),
               std::exception);
  // "always" tiles without the target's word.
  auto forced = apply_rule(make_workload("matmul(M=32,N=32,K=32)"),
                           *rule("std.MultiLevelTilingAmx", kCpu, R"({"enabled": "always"})"));
  EXPECT_EQ(forced.size(), 2u);
}

TEST(StdRulesParallelVectorizeUnroll, AnnotatesAndThePostprocRewrites) {
  Function f = make_workload("elementwise(M=8,N=16)");
  auto in = instantiate(cpu_set());
  auto spaces = generate_design_spaces(f, in.rules, 1);
  ASSERT_EQ(spaces.size(), 1u);
  const Function& g = spaces[0]->func();
  std::vector<std::string> names = block_names(g);
  ASSERT_EQ(names.size(), 1u);
  const Block* b = find(g, names[0]);
  EXPECT_EQ(std::get<int64_t>(b->annotations.at("meta_schedule.parallel")), 16 * 4);
  // MetaSchedule's 64 lanes (the 32-byte vector of the test target is narrower).
  EXPECT_EQ(std::get<int64_t>(b->annotations.at("meta_schedule.vectorize")), 64);
  int64_t unroll = std::get<int64_t>(b->annotations.at("meta_schedule.unroll_explicit"));
  EXPECT_TRUE(unroll == 0 || unroll == 16 || unroll == 64 || unroll == 512);
  auto p = postproc("std.RewriteParallelVectorizeUnroll", kCpu);
  ASSERT_TRUE(p->apply(spaces[0]));
  const Function& h = spaces[0]->func();
  EXPECT_TRUE(find(h, names[0])->annotations.empty()) << "annotations consumed";
  auto par = loops_with(h, ForKind::Parallel);
  ASSERT_EQ(par.size(), 1u);
  EXPECT_EQ(par[0]->extent, 8) << "8 x 16 = 128 > 64: only the outer loop";
  auto vec = loops_with(h, ForKind::Vectorized);
  ASSERT_EQ(vec.size(), 1u) << "the inner 16 lanes fit in 64";
  EXPECT_EQ(vec[0]->extent, 16);
  if (unroll > 0) {
    EXPECT_EQ(std::get<int64_t>(par[0]->annotations.at("pragma_auto_unroll_max_step")), unroll);
  }
  EXPECT_EQ(compare(run(f), h), "");
}

// A loop longer than the width is split, its inner part vectorised, when the block writes
// along it (a row's elementwise work, a write-back with its epilogue); a transposing copy, whose
// vector stores would scatter, keeps its loop.
TEST(StdRulesParallelVectorizeUnroll, LongLoopsAreSplitWhereTheWriteIsContiguous) {
  Function f = make_workload("elementwise(M=2,N=200,ops=gelu)");
  auto in = instantiate(cpu_set());
  auto spaces = generate_design_spaces(f, in.rules, 1);
  ASSERT_EQ(spaces.size(), 1u);
  auto p = postproc("std.RewriteParallelVectorizeUnroll", kCpu);
  ASSERT_TRUE(p->apply(spaces[0]));
  auto vec = loops_with(spaces[0]->func(), ForKind::Vectorized);
  ASSERT_EQ(vec.size(), 1u);
  EXPECT_EQ(vec[0]->extent, 40) << "200 = 5 x 40: the most whole 8-lane vectors within 64";
  EXPECT_EQ(compare(run(f), spaces[0]->func()), "");

  Function d = make_workload("dense(M=2,N=8,K=96,bias=0,act=none)");
  auto sch = std::make_shared<Schedule>(d);
  BlockRV c = sch->all_blocks()[0];
  BlockRV w = sch->cache_read(c, 1, "global");
  sch->transform_layout(w, 0, {1, 0}); // the copy's inner loop (k, 96) writes the first index
  sch->annotate(w, "meta_schedule.vectorize", AnnValue{int64_t{64}});
  ASSERT_TRUE(p->apply(sch));
  EXPECT_TRUE(loops_with(sch->func(), ForKind::Vectorized).empty());
  EXPECT_EQ(compare(run(d), sch->func()), "");
}

TEST(StdRulesAddRFactor, ForksSmallReductionsIntoPartialResults) {
  Function f = make_workload("softmax(M=1,N=7)");
  auto spaces = apply_rule(f, *rule("std.AddRFactor", kCpu));
  ASSERT_GT(spaces.size(), 1u);
  EXPECT_EQ(block_names(spaces[0]->func()).size(), block_names(f).size()) << "original kept";
  bool rf = false;
  std::vector<NDArray> ref = run(f);
  for (auto& s : spaces) {
    for (const std::string& n : block_names(s->func()))
      rf = rf || n.find("_rf") != std::string::npos;
    EXPECT_EQ(compare(ref, s->func()), "");
  }
  EXPECT_TRUE(rf);
}

// A matrix-vector product (dense with M = 1: the weight streamed along k, used once) gets a
// space whose partial sums run along k in vector lanes: the rfactor block reads the weight in
// whole rows of lanes, the rows of a tile inside the reduction, the lanes innermost. It
// replaces the original space where nothing reuses the weight (M = 1) and joins it where rows
// do (M = 3); a sum of one input keeps its space too; reductions that reuse their input more,
// or read it strided along k, get none.
TEST(StdRulesVectorRFactor, StreamsTheWeightInVectorsAlongTheReduction) {
  auto r = rule("std.VectorRFactor", kCpu);
  for (auto [spec, kept] : {std::pair{"dense(M=1,N=24,K=64,bias=0,act=none)", false},
                            std::pair{"dense(M=3,N=16,K=32,bias=1,act=gelu)", true}}) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    std::vector<NDArray> ref = run(f);
    auto spaces = apply_rule(f, *r);
    ASSERT_EQ(spaces.size(), kept ? 2u : 1u);
    if (kept) {
      EXPECT_EQ(block_names(spaces[0]->func()), block_names(f)) << "original kept";
    }
    const Function& g = spaces.back()->func();
    const Buffer* partial = nullptr;
    for (const Buffer& b : g.buffers)
      if (b->name == "dense_rf") partial = &b;
    ASSERT_TRUE(partial);
    EXPECT_EQ((*partial)->scope, "local");
    // Innermost around the rfactor block: the lanes, then the tile's rows; a reduction outside.
    std::vector<const ForNode*> loops = find_block(g.body, "dense_rf")->loops();
    ASSERT_GE(loops.size(), 3u);
    const BlockRealizeNode* rf = nullptr;
    for (auto* br : collect_blocks(g.body))
      if (br->block->name == "dense_rf") rf = br;
    ASSERT_TRUE(rf);
    auto drives = [&](const ForNode* l) {
      std::vector<size_t> out;
      for (size_t i = 0; i < rf->iter_values.size(); ++i)
        if (uses_var(rf->iter_values[i], l->loop_var.get())) out.push_back(i);
      return out;
    };
    size_t n = rf->block->iter_vars.size(); // [i, j, lane, ko]
    EXPECT_EQ(drives(loops.back()), std::vector<size_t>{n - 2}) << "the lanes innermost";
    EXPECT_EQ(rf->block->iter_vars[n - 2].kind, IterKind::Spatial);
    EXPECT_EQ(rf->block->iter_vars[n - 2].extent % 8, 0);
    bool reduction_outside_rows = false;
    for (size_t l = 0; l + 1 < loops.size(); ++l)
      if (drives(loops[l]) == std::vector<size_t>{n - 1})
        for (size_t m = l + 1; m + 1 < loops.size(); ++m)
          reduction_outside_rows =
              reduction_outside_rows || drives(loops[m]) == std::vector<size_t>{1};
    EXPECT_TRUE(reduction_outside_rows);
    for (auto& s : spaces)
      EXPECT_EQ(compare(ref, s->func()), "");
  }
  // Read along k in another dimension than the last (matmul's B[K, N]), or k not a multiple
  // of the lanes: no such space.
  for (const char* spec : {"matmul(M=1,N=16,K=32)", "dense(M=1,N=16,K=12,bias=0,act=none)"}) {
    SCOPED_TRACE(spec);
    EXPECT_EQ(apply_rule(make_workload(spec), *r).size(), 1u);
  }
  // Reused more than max_reuse (4) times: the reused loop is tiled (below), unless told not to.
  EXPECT_EQ(apply_rule(make_workload("dense(M=5,N=16,K=32,bias=0,act=none)"), *r).size(), 2u);
  EXPECT_EQ(apply_rule(make_workload("dense(M=5,N=16,K=32,bias=0,act=none)"),
                       *rule("std.VectorRFactor", kCpu, R"({"tile_reuse": false})"))
                .size(),
            1u);
  EXPECT_EQ(apply_rule(make_workload("dense(M=5,N=16,K=32,bias=0,act=none)"),
                       *rule("std.VectorRFactor", kCpu, R"({"max_reuse": 6})"))
                .size(),
            2u);
  EXPECT_EQ(apply_rule(make_workload("dense(M=1,N=24,K=64,bias=0,act=none)"),
                       *rule("std.VectorRFactor", kCpu, R"({"keep_original": "always"})"))
                .size(),
            2u);
  // A row sum (norm's sum of squares over [B, M, N]: one input along its last axis) keeps its
  // space beside the new one.
  EXPECT_EQ(apply_rule(make_workload("norm(B=2,M=3,N=32)"), *r).size(), 2u);
  EXPECT_THROW(rule("std.VectorRFactor", kCpu, R"({"keep_original": "sometimes"})"),
               std::exception);
}

// Rows of x that reuse W more than max_reuse times (a linear on a whole prompt) tile their
// loop: the partial sums are computed under its outer part u0, inside j0, for an m x r
// register tile -- the reduction outside, then the m rows of x, the r rows of W, the lanes --
// whose accumulators and operands fit the target's vector registers, with the interpreter's
// results under every sample.
TEST(StdRulesVectorRFactor, TilesTheRowsThatReuseTheWeight) {
  for (auto [spec, regs] : {std::pair{"dense(M=12,N=24,K=64,bias=1,act=gelu)", int64_t{16}},
                            std::pair{"dense(M=12,N=24,K=64,bias=1,act=gelu)", int64_t{32}},
                            std::pair{"dense(M=16,N=40,K=32,bias=0,act=none)", int64_t{16}}}) {
    SCOPED_TRACE(std::string(spec) + " with " + std::to_string(regs) + " registers");
    TuneAttributes attrs = kCpu;
    attrs["vector_registers"] = regs;
    Function f = make_workload(spec);
    std::vector<NDArray> ref = run(f);
    auto spaces = apply_rule(f, *rule("std.VectorRFactor", attrs));
    ASSERT_EQ(spaces.size(), 2u) << "MultiLevelTiling's space kept beside it";
    std::set<std::pair<int64_t, int64_t>> tiles;
    std::set<int64_t> blocks;
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      SCOPED_TRACE(seed);
      std::shared_ptr<Schedule> s = resample(f, *spaces.back(), seed);
      ASSERT_TRUE(s);
      const Function& g = s->func();
      EXPECT_EQ(compare(ref, g), "");
      const BlockRealizeNode* rf = nullptr;
      for (auto* br : collect_blocks(g.body))
        if (br->block->name == "dense_rf") rf = br;
      ASSERT_TRUE(rf);
      std::vector<const ForNode*> loops = find_block(g.body, "dense_rf")->loops();
      auto drives = [&](const ForNode* l) {
        std::vector<size_t> out;
        for (size_t i = 0; i < rf->iter_values.size(); ++i)
          if (uses_var(rf->iter_values[i], l->loop_var.get())) out.push_back(i);
        return out;
      };
      // [i, j, lane, ko]: innermost the lanes, then j's rows, i's rows, the reduction.
      ASSERT_GE(loops.size(), 4u);
      size_t n = loops.size();
      EXPECT_EQ(drives(loops[n - 1]), std::vector<size_t>{2});
      EXPECT_EQ(drives(loops[n - 2]), std::vector<size_t>{1});
      EXPECT_EQ(drives(loops[n - 3]), std::vector<size_t>{0});
      EXPECT_EQ(drives(loops[n - 4]), std::vector<size_t>{3});
      const int64_t m = loops[n - 3]->extent, rows = loops[n - 2]->extent;
      EXPECT_GE(m, 2);
      EXPECT_LE(m * rows + rows + 1, regs) << m << " x " << rows;
      tiles.insert({m, rows});
      // Outside the tile: j0, u0, jb -- a loop over i's tiles (u0) inside one over blocks of
      // j's (j0), and inside it the block's tiles (jb), the partial sums computed under jb.
      ASSERT_GE(n, 7u);
      EXPECT_EQ(drives(loops[n - 5]), std::vector<size_t>{1}) << "jb";
      EXPECT_EQ(drives(loops[n - 6]), std::vector<size_t>{0}) << "u0";
      bool j0_outside = false;
      for (size_t a = 0; a + 6 < n; ++a)
        j0_outside = j0_outside || drives(loops[a]) == std::vector<size_t>{1};
      EXPECT_TRUE(j0_outside);
      blocks.insert(loops[n - 5]->extent);
    }
    EXPECT_GT(tiles.size(), 1u) << "the tile is drawn, not fixed";
    EXPECT_GT(blocks.size(), 1u) << "the block of W's tiles is drawn, not fixed";
  }
}

// A reduction so long that one tile of W (r rows of k) is over the block limit (256 KB)
// still gets the tiled space, with blocks of one tile.
TEST(StdRulesVectorRFactor, ALongReductionKeepsBlocksOfOneTile) {
  TuneAttributes attrs = kCpu;
  attrs["vector_registers"] = int64_t{16};
  Function f = make_workload("dense(M=8,N=6,K=24576,bias=0,act=none)");
  auto spaces = apply_rule(f, *rule("std.VectorRFactor", attrs));
  ASSERT_EQ(spaces.size(), 2u);
  std::vector<NDArray> ref = run(f);
  std::shared_ptr<Schedule> s = resample(f, *spaces.back(), 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(compare(ref, s->func()), "");
}

// A model's linear carries its batch of one as a loop: [1, seq, features]. That loop reuses
// nothing; the sequence loop is the one tiled, and every sample computes the interpreter's
// numbers.
TEST(StdRulesVectorRFactor, ABatchOfOneDoesNotStopTheTiling) {
  Function f = parse_function(R"(func q_proj(w: f32[40, 32], x: f32[1, 12, 32], y: f32[1, 12, 40]) {
  for i in 1 {
    for j in 12 {
      for k in 40 {
        for k_1 in 32 {
          block y(vi: S[1] = i, vj: S[12] = j, vk: S[40] = k, vk_1: R[32] = k_1) {
            init { y[vi, vj, vk] = 0f32 }
            y[vi, vj, vk] = y[vi, vj, vk] + x[vi, vj, vk_1] * w[vk, vk_1]
          }
        }
      }
    }
  }
})");
  std::vector<NDArray> ref = run(f);
  auto spaces = apply_rule(f, *rule("std.VectorRFactor", kCpu));
  ASSERT_EQ(spaces.size(), 2u);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    std::shared_ptr<Schedule> s = resample(f, *spaces.back(), seed);
    ASSERT_TRUE(s);
    EXPECT_EQ(compare(ref, s->func()), "");
    // Under the partial sums' block: the reduction, then j's rows (m >= 2), k's, the lanes.
    std::vector<const ForNode*> loops = find_block(s->func().body, "y_rf")->loops();
    ASSERT_GE(loops.size(), 4u);
    EXPECT_GE(loops[loops.size() - 3]->extent, 2);
  }
}

TEST(StdRulesCrossThreadReduction, BindsTheReductionToThreads) {
  Function f = make_workload("softmax(M=8,N=33)");
  auto spaces = apply_rule(f, *rule("std.CrossThreadReduction", kGpu));
  ASSERT_GT(spaces.size(), 1u);
  std::vector<NDArray> ref = run(f);
  bool bound_reduction = false;
  for (auto& s : spaces) {
    for (auto* br : collect_blocks(s->func().body)) {
      if (!is_reduction_block(*br->block)) continue;
      for (const ForNode* l : find_block(s->func().body, br->block->name)->loops())
        if (l->thread_tag == "threadIdx.x")
          for (size_t i = 0; i < br->iter_values.size(); ++i)
            bound_reduction =
                bound_reduction || (br->block->iter_vars[i].kind == IterKind::Reduce &&
                                    uses_var(br->iter_values[i], l->loop_var.get()));
    }
    EXPECT_EQ(compare(ref, s->func()), "");
  }
  EXPECT_TRUE(bound_reduction);
}

TEST(StdRulesAutoBind, BindsEveryLoopNest) {
  Function f = make_workload("elementwise(M=8,N=16)");
  auto spaces = apply_rule(f, *rule("std.AutoBind", kGpu));
  ASSERT_EQ(spaces.size(), 1u);
  const Function& g = spaces[0]->func();
  for (const std::string& n : block_names(g)) {
    std::set<std::string> tags;
    for (const ForNode* l : enclosing_loops(g, n))
      tags.insert(l->thread_tag);
    EXPECT_TRUE(tags.count("blockIdx.x") && tags.count("threadIdx.x")) << n;
  }
  EXPECT_EQ(compare(run(f), g), "");
}

TEST(StdRulesRandomComputeLocation, MovesProducersUnderConsumers) {
  Function f = make_workload("layernorm(M=8,N=32)");
  auto r = rule("std.RandomComputeLocation", kCpu);
  std::vector<NDArray> ref = run(f);
  bool moved = false;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    auto spaces = apply_rule(f, *r, seed);
    ASSERT_EQ(spaces.size(), 1u);
    const Function& g = spaces[0]->func();
    const auto* root = g.body->kind == StmtKind::Seq ? as<SeqNode>(g.body) : nullptr;
    size_t items = root ? root->stmts.size() : 1;
    moved = moved || items < block_names(g).size();
    EXPECT_EQ(compare(ref, g), "") << spaces[0]->trace().to_json();
  }
  EXPECT_TRUE(moved) << "some seed places a producer under a consumer loop";
}

// Softmax's exp feeds the row sum and the normalisation: a drawn location may be the root or
// any loop of its consumers, never "inline" (that would compute exp twice per element). Seeds
// enough that the unconstrained draw inlines it at least once (4 locations and inline here).
TEST(StdRulesRandomComputeLocation, NeverInlinesAMathCallFeedingTwoConsumers) {
  Function f = make_workload("softmax(M=6,N=10)");
  auto r = rule("std.RandomComputeLocation", kCpu);
  std::vector<NDArray> ref = run(f);
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    auto spaces = apply_rule(f, *r, seed);
    ASSERT_EQ(spaces.size(), 1u);
    const Function& g = spaces[0]->func();
    ASSERT_NE(find(g, "softmax_exp"), nullptr) << "seed " << seed << spaces[0]->trace().to_json();
    EXPECT_EQ(compare(ref, g), "") << spaces[0]->trace().to_json();
  }
}

TEST(StdRulesRewriteReductionBlock, SplitsInitFromUpdate) {
  Function f = make_workload("matmul(M=32,N=24,K=16)");
  auto spaces = apply_rule(f, *rule("std.MultiLevelTiling", kCpu));
  auto p = postproc("std.RewriteReductionBlock", kCpu);
  for (auto& s : spaces) {
    ASSERT_TRUE(p->apply(s));
    for (auto* br : collect_blocks(s->func().body))
      EXPECT_EQ(br->block->init, nullptr) << br->block->name;
    EXPECT_EQ(compare(run(f), s->func()), "");
  }
}

TEST(StdRulesVerifyGPUCode, RejectsTooManyThreadsAndTooMuchSharedMemory) {
  auto verify = postproc("std.VerifyGPUCode", kGpu);
  {
    auto s = std::make_shared<Schedule>(make_workload("elementwise(M=64,N=64)"));
    BlockRV b = s->all_blocks().back();
    std::vector<LoopRV> loops = s->get_loops(b);
    LoopRV fused = s->fuse(loops);
    auto parts = s->split(fused, {int64_t{-1}, int64_t{2048}});
    s->bind(parts[0], "blockIdx.x");
    s->bind(parts[1], "threadIdx.x");
    std::string reason;
    EXPECT_FALSE(verify->apply(s, &reason));
    EXPECT_NE(reason.find("threads per block"), std::string::npos) << reason;
    EXPECT_NE(reason.find("1024"), std::string::npos) << reason;
  }
  {
    // A 128 x 128 f32 input staged whole in shared memory: 64 KiB.
    auto s = std::make_shared<Schedule>(make_workload("matmul(M=128,N=128,K=128)"));
    BlockRV b = s->all_blocks()[0];
    s->cache_read(b, 0, "shared");
    std::string reason;
    EXPECT_FALSE(verify->apply(s, &reason));
    EXPECT_NE(reason.find("shared memory"), std::string::npos) << reason;
  }
  {
    auto s = std::make_shared<Schedule>(make_workload("matmul(M=16,N=16,K=16)"));
    EXPECT_TRUE(verify->apply(s));
  }
}

TEST(StdRulesDisallowDynamicLoop, AcceptsStaticPrograms) {
  auto p = postproc("std.DisallowDynamicLoop", kCpu);
  for (const std::string& spec : test_workload_specs()) {
    auto s = std::make_shared<Schedule>(make_workload(spec));
    std::string reason;
    EXPECT_TRUE(p->apply(s, &reason)) << spec << ": " << reason;
  }
}

TEST(StdRules, EveryComponentIsRegistered) {
  std::set<std::string> names;
  for (const ComponentInfo& c : host().components())
    names.insert(c.name);
  for (const auto& set : {cpu_set(), gpu_set()})
    for (const auto* list : {&set.rules, &set.postprocs, &set.mutators})
      for (const std::string& n : *list)
        EXPECT_TRUE(names.count(n)) << n;
  EXPECT_TRUE(names.count("std.MutateThreadBinding"));
}

TEST(StdRules, DesignSpacesAreDeterministic) {
  Function f = make_workload("dense(M=8,N=32,K=16)");
  auto a = instantiate(cpu_set());
  auto b = instantiate(cpu_set());
  auto sa = generate_design_spaces(f, a.rules, 21);
  auto sb = generate_design_spaces(f, b.rules, 21);
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i)
    EXPECT_EQ(sa[i]->trace().to_json(), sb[i]->trace().to_json());
}

} // namespace
} // namespace mt
