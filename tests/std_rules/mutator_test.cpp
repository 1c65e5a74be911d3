// The mutators applied to sampled traces of the standard design spaces: each changes exactly
// one decision in its own way, and the mutated trace, replayed with its decisions and
// post-processed, still computes the right result whenever the schedule accepts it.
#include <cstdio>
#include <map>
#include <set>

#include "core/workload/library.h"
#include "std_rules_test_util.h"

namespace mt {
namespace {

using namespace std_rules_test;

// Indices of the instructions whose decision differs.
std::vector<size_t> changed_decisions(const Trace& a, const Trace& b) {
  std::vector<size_t> out;
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a.instructions()[i].decision != b.instructions()[i].decision) out.push_back(i);
  return out;
}

struct MutatorStats {
  int applied = 0, replay_ok = 0, replay_failed = 0;
};

void run_mutators(const ComponentSet& set, const std::vector<std::string>& specs,
                  std::map<std::string, MutatorStats>& stats) {
  Instances in = instantiate(set);
  RandomEngine rng(99);
  for (const std::string& spec : specs) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    std::vector<NDArray> reference = run(f);
    std::vector<std::shared_ptr<Schedule>> spaces = generate_design_spaces(f, in.rules, 3);
    if (spaces.size() > 4) spaces.resize(4);
    for (size_t si = 0; si < spaces.size(); ++si) {
      // A sampled trace (rules only, fresh decisions) is what a search mutates.
      auto sampled = std::make_shared<Schedule>(f, 50 + si);
      try {
        spaces[si]->trace().apply_to(*sampled, false);
      } catch (const ScheduleError&) {
        continue;
      }
      const Trace& base = sampled->trace();
      for (size_t m = 0; m < in.mutators.size(); ++m) {
        const std::string& name = set.mutators[m];
        SCOPED_TRACE(name);
        std::optional<Trace> mutated = in.mutators[m]->apply(base, rng);
        if (!mutated) continue;
        MutatorStats& st = stats[name];
        ++st.applied;
        std::vector<size_t> changed = changed_decisions(base, *mutated);
        ASSERT_EQ(changed.size(), 1u) << "a mutation changes exactly one decision";
        const Instruction& before = base.instructions()[changed[0]];
        const Instruction& after = mutated->instructions()[changed[0]];
        if (name == "std.MutateTileSize") {
          ASSERT_EQ(after.kind, "sample_perfect_tile");
          int64_t p0 = 1, p1 = 1;
          for (int64_t x : *before.decision)
            p0 *= x;
          for (int64_t x : *after.decision)
            p1 *= x;
          EXPECT_EQ(p0, p1) << "the tiling stays perfect";
          int64_t max_inner = std::get<int64_t>(after.attrs[1]);
          if (max_inner > 0) {
            EXPECT_LE(after.decision->back(), max_inner);
          }
        } else if (name == "std.MutateComputeLocation") {
          EXPECT_EQ(after.kind, "sample_compute_location");
        } else {
          EXPECT_EQ(after.kind, "sample_categorical");
          auto cands = std::get<std::vector<int64_t>>(after.attrs[0]);
          EXPECT_GE((*after.decision)[0], 0);
          EXPECT_LT((*after.decision)[0], static_cast<int64_t>(cands.size()));
        }
        std::shared_ptr<Schedule> s;
        std::string why;
        SampleOutcome o = sample(f, *mutated, 5, true, in.postprocs, &s, &why);
        if (o == SampleOutcome::ReplayFailed) {
          ++st.replay_failed;
          continue;
        }
        if (o == SampleOutcome::Rejected) continue;
        ++st.replay_ok;
        EXPECT_EQ(compare(reference, s->func()), "") << s->trace().to_json();
        // The decisions that feed annotations reach the program.
        if (name == "std.MutateUnroll") {
          auto cands = std::get<std::vector<int64_t>>(after.attrs[0]);
          int64_t want = cands[static_cast<size_t>((*after.decision)[0])];
          if (want > 0) {
            std::set<int64_t> seen;
            visit_stmts(s->func().body, [&](const Stmt& x) {
              if (x->kind == StmtKind::For) {
                auto& anns = as<ForNode>(x)->annotations;
                auto it = anns.find("pragma_auto_unroll_max_step");
                if (it != anns.end()) seen.insert(std::get<int64_t>(it->second));
              }
              return true;
            });
            // With several annotated blocks in one nest (a producer computed at its consumer's
            // loops: the CPU keeps padding as a block of its own) one block's annotation is
            // applied for the nest, and the mutated one may be the other's.
            size_t unroll_sites = 0;
            std::set<int64_t> chosen; // every site's depth: the one applied is among them
            for (const Instruction& inst : mutated->instructions())
              if (inst.kind == "sample_categorical" &&
                  std::get<std::vector<int64_t>>(inst.attrs[0]) == cands) {
                ++unroll_sites;
                chosen.insert(cands[static_cast<size_t>((*inst.decision)[0])]);
              }
            if (unroll_sites == 1) {
              EXPECT_TRUE(seen.count(want)) << "unroll depth " << want << " not applied";
            } else if (seen.empty()) {
              EXPECT_TRUE(chosen.count(0)) << "no unroll depth applied, and every site has one";
            } else {
              for (int64_t d : seen)
                EXPECT_TRUE(chosen.count(d)) << "unroll depth " << d << " no site chose";
            }
          }
        }
      }
    }
  }
}

TEST(StdRulesMutators, CpuMutatorsKeepSchedulesCorrect) {
  std::map<std::string, MutatorStats> stats;
  run_mutators(cpu_set(),
               {"matmul(M=32,N=24,K=16)", "softmax(M=8,N=33)", "dense(M=8,N=32,K=16)",
                "conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1)",
                "layernorm(M=8,N=32)"},
               stats);
  for (const char* m : {"std.MutateTileSize", "std.MutateComputeLocation", "std.MutateUnroll",
                        "std.MutateParallel"}) {
    SCOPED_TRACE(m);
    EXPECT_GT(stats[m].applied, 0) << "never applicable";
    std::printf("[ std_rules ] %-28s applied %2d  replay ok %2d  replay failed %2d\n", m,
                stats[m].applied, stats[m].replay_ok, stats[m].replay_failed);
  }
  EXPECT_GT(stats["std.MutateTileSize"].replay_ok, 0);
  EXPECT_GT(stats["std.MutateUnroll"].replay_ok, 0);
  EXPECT_GT(stats["std.MutateParallel"].replay_ok, 0);
}

TEST(StdRulesMutators, GpuMutatorsKeepSchedulesCorrect) {
  std::map<std::string, MutatorStats> stats;
  run_mutators(gpu_set(), {"matmul(M=32,N=24,K=16)", "softmax(M=8,N=33)", "elementwise(M=8,N=16)"},
               stats);
  for (const char* m : {"std.MutateTileSize", "std.MutateUnroll", "std.MutateThreadBinding"}) {
    SCOPED_TRACE(m);
    EXPECT_GT(stats[m].applied, 0) << "never applicable";
    EXPECT_EQ(stats[m].replay_failed, 0);
    std::printf("[ std_rules ] %-28s applied %2d  replay ok %2d  replay failed %2d\n", m,
                stats[m].applied, stats[m].replay_ok, stats[m].replay_failed);
  }
}

// On a device with room for deep pipelines, the tensor-core space samples the k loop's depth;
// the mutator re-chooses that decision, and the post-processed program is pipelined as deep as
// the new decision says (std.RewriteSoftwarePipeline) and still computes the right result.
TEST(StdRulesMutators, MutatePipelineStagesChangesTheDepthTheProgramIsPipelinedWith) {
  ComponentSet set = gpu_set();
  set.attrs["max_shared_memory_per_block"] = int64_t{163 * 1024}; // sm_80's opt-in
  set.mutators = {"std.MutatePipelineStages"};
  Instances in = instantiate(set);
  Function f = make_workload("matmul(M=64,N=64,K=64,dtype=f16,out_dtype=f32)");
  std::vector<NDArray> reference = run(f);
  RandomEngine rng(7);
  std::set<int64_t> applied;
  int checked = 0;
  for (const auto& space : generate_design_spaces(f, in.rules, 1)) {
    if (space->trace().to_json().find("wmma.mma") == std::string::npos) continue;
    for (uint64_t seed = 0; seed < 12; ++seed) {
      auto sampled = std::make_shared<Schedule>(f, 300 + seed);
      space->trace().apply_to(*sampled, false);
      std::optional<Trace> mutated = in.mutators[0]->apply(sampled->trace(), rng);
      ASSERT_TRUE(mutated.has_value()) << "no sampled depth to change";
      std::vector<size_t> changed = changed_decisions(sampled->trace(), *mutated);
      ASSERT_EQ(changed.size(), 1u);
      const Instruction& after = mutated->instructions()[changed[0]];
      ASSERT_EQ(after.kind, "sample_categorical");
      auto cands = std::get<std::vector<int64_t>>(after.attrs[0]);
      EXPECT_EQ(cands, (std::vector<int64_t>{2, 3, 4}));
      int64_t want = cands[static_cast<size_t>((*after.decision)[0])];
      std::shared_ptr<Schedule> s;
      if (sample(f, *mutated, 5, true, in.postprocs, &s) != SampleOutcome::Ok) continue;
      std::vector<int64_t> depths;
      visit_stmts(s->func().body, [&](const Stmt& x) {
        if (x->kind == StmtKind::For)
          if (auto it = as<ForNode>(x)->annotations.find("software_pipeline_stages");
              it != as<ForNode>(x)->annotations.end())
            depths.push_back(std::get<int64_t>(it->second));
        return true;
      });
      EXPECT_EQ(depths, std::vector<int64_t>{want}) << mutated->to_json();
      EXPECT_EQ(compare(reference, s->func()), "") << s->trace().to_json();
      applied.insert(want);
      ++checked;
    }
  }
  std::printf("[ std_rules ] std.MutatePipelineStages: %d mutated samples checked, depths",
              checked);
  for (int64_t d : applied)
    std::printf(" %lld", static_cast<long long>(d));
  std::printf("\n");
  EXPECT_GE(checked, 6);
  EXPECT_GE(applied.size(), 2u);
}

TEST(StdRulesMutators, MutatorsWithNothingToChangeReturnNothing) {
  // A trace with no sampling instructions at all.
  Function f = make_workload("elementwise(M=8,N=16)");
  Schedule s(f);
  s.get_loops(s.all_blocks()[0]);
  RandomEngine rng(1);
  for (const char* m :
       {"std.MutateTileSize", "std.MutateComputeLocation", "std.MutateUnroll", "std.MutateParallel",
        "std.MutateThreadBinding", "std.MutatePipelineStages"}) {
    EXPECT_FALSE(host().create_mutator(m)->apply(s.trace(), rng).has_value()) << m;
  }
}

} // namespace
} // namespace mt
