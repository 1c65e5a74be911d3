// What a schedule rule costs when it runs as a plugin: the same rule (split the outermost
// loop by 4) applied directly in C++, through the ABI from a plain C plugin and through the
// C++ SDK -- each on a fresh copy of a schedule -- next to one search sample (replaying a
// trace with fresh decisions and lowering the result). The ABI's share is the difference
// between the plugin rows and the direct row.
#include <benchmark/benchmark.h>

#include <memory>

#include "core/lower/lower.h"
#include "core/plugin/plugin_host.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"

namespace {

const char* kWorkload = "matmul(M=128,N=128,K=128)";

mt::PluginHost& host() {
  static mt::PluginHost* h = [] {
    auto* p = new mt::PluginHost();
    p->discover({MT_BENCH_PLUGIN_DIR});
    return p;
  }();
  return *h;
}

void BM_RuleDirect(benchmark::State& state) {
  mt::Schedule base(mt::make_workload(kWorkload));
  mt::BlockRV block = base.all_blocks()[0];
  for (auto _ : state) {
    std::unique_ptr<mt::Schedule> sch = base.copy();
    std::vector<mt::LoopRV> loops = sch->get_loops(block);
    sch->split(loops[0], {int64_t(-1), int64_t(4)});
    benchmark::DoNotOptimize(sch.get());
  }
}
BENCHMARK(BM_RuleDirect);

void rule_through_abi(benchmark::State& state, const char* name) {
  auto rule = host().create_schedule_rule(name);
  mt::Schedule base(mt::make_workload(kWorkload));
  mt::BlockRV block = base.all_blocks()[0];
  for (auto _ : state) {
    std::shared_ptr<mt::Schedule> sch = base.copy();
    auto out = rule->apply(sch, block);
    benchmark::DoNotOptimize(out.data());
  }
}
void BM_RuleThroughAbiC(benchmark::State& state) {
  rule_through_abi(state, "test.c.SplitBy4");
}
void BM_RuleThroughAbiSdk(benchmark::State& state) {
  rule_through_abi(state, "test.sdk.SplitBy4");
}
BENCHMARK(BM_RuleThroughAbiC);
BENCHMARK(BM_RuleThroughAbiSdk);

// The copy alone, to read the rows above without it.
void BM_ScheduleCopy(benchmark::State& state) {
  mt::Schedule base(mt::make_workload(kWorkload));
  base.all_blocks();
  for (auto _ : state)
    benchmark::DoNotOptimize(base.copy());
}
BENCHMARK(BM_ScheduleCopy);

// One search sample: replay a sampled tiling with fresh decisions, then lower.
void BM_SearchSample(benchmark::State& state) {
  mt::Function f = mt::make_workload(kWorkload);
  mt::Schedule design(f);
  mt::BlockRV block = design.all_blocks()[0];
  std::vector<mt::LoopRV> loops = design.get_loops(block);
  for (mt::LoopRV l : loops) {
    std::vector<mt::ExprRV> t = design.sample_perfect_tile(l, 2, 16);
    design.split(l, {t[0], t[1]});
  }
  uint64_t seed = 1;
  for (auto _ : state) {
    mt::Schedule sample(f, seed++);
    design.trace().apply_to(sample, /*use_decisions=*/false);
    benchmark::DoNotOptimize(mt::lower(sample.func()).body.get());
  }
}
BENCHMARK(BM_SearchSample);

} // namespace

BENCHMARK_MAIN();
