// The standard CPU and GPU sets applied to every workload of the library: each design space,
// replayed with its own decisions and with freshly sampled ones, then post-processed, computes
// what the unscheduled function computes (reference interpreter, rtol 1e-4, atol 1e-5).
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "core/ir/printer.h"
#include "core/lower/lower.h"
#include "core/workload/library.h"
#include "std_rules_test_util.h"

namespace mt {
namespace {

using namespace std_rules_test;

struct Tally {
  int spaces = 0, ok = 0, replay_failed = 0, rejected = 0;
};

// Bounded: at most this many spaces per workload and samples per space keep the whole suite
// within tens of seconds on a loaded machine.
constexpr size_t kMaxSpaces = 12;
constexpr int kSamplesPerSpace = 3;

// MT_STD_RULES_STRESS=n multiplies the samples and design-space seeds by n (for hunting rare
// failures by hand; the default keeps the suite fast).
int stress() {
  const char* s = std::getenv("MT_STD_RULES_STRESS");
  int n = s ? std::atoi(s) : 1;
  return n > 0 ? n : 1;
}

// GPU: every top-level loop nest of the lowered program (a kernel) is bound to the grid.
std::string unbound_kernel(const Function& scheduled) {
  Function lowered = lower(scheduled);
  std::vector<Stmt> kernels;
  std::function<void(const Stmt&)> collect = [&](const Stmt& st) {
    if (!st) return;
    if (st->kind == StmtKind::Allocate)
      collect(as<AllocateNode>(st)->body);
    else if (st->kind == StmtKind::Seq)
      for (const Stmt& c : as<SeqNode>(st)->stmts)
        collect(c);
    else
      kernels.push_back(st);
  };
  collect(lowered.body);
  for (const Stmt& k : kernels) {
    bool loops = false, block_bound = false, thread_bound = false;
    visit_stmts(k, [&](const Stmt& st) {
      if (st->kind != StmtKind::For) return true;
      loops = true;
      const auto* f = as<ForNode>(st);
      block_bound = block_bound || f->thread_tag.rfind("blockIdx", 0) == 0;
      thread_bound = thread_bound || f->thread_tag.rfind("threadIdx", 0) == 0;
      return true;
    });
    if (loops && !(block_bound && thread_bound)) return print(k);
  }
  return {};
}

Tally check_workload(const std::string& spec, const ComponentSet& set, bool gpu) {
  SCOPED_TRACE(spec);
  Tally t;
  Instances in = instantiate(set);
  Function f = make_workload(spec);
  std::vector<NDArray> reference = run(f);
  std::vector<std::shared_ptr<Schedule>> spaces;
  for (int seed = 1; seed <= stress(); ++seed) {
    std::vector<std::shared_ptr<Schedule>> more = generate_design_spaces(f, in.rules, seed);
    EXPECT_FALSE(more.empty());
    if (more.size() > kMaxSpaces) more.resize(kMaxSpaces);
    spaces.insert(spaces.end(), more.begin(), more.end());
  }
  t.spaces = static_cast<int>(spaces.size());
  for (size_t si = 0; si < spaces.size(); ++si) {
    const Trace& trace = spaces[si]->trace();
    // The space itself (its own decisions) replays and, on CPU, always passes.
    {
      std::shared_ptr<Schedule> s;
      std::string why;
      SampleOutcome o = sample(f, trace, 7, true, in.postprocs, &s, &why);
      EXPECT_NE(o, SampleOutcome::ReplayFailed) << "space " << si << ": " << why;
      if (!gpu) {
        EXPECT_EQ(o, SampleOutcome::Ok) << "space " << si << ": " << why;
      }
      if (o == SampleOutcome::Ok) {
        std::string diff = compare(reference, s->func());
        EXPECT_EQ(diff, "") << "space " << si << " trace " << s->trace().to_json();
      }
    }
    for (int k = 0; k < kSamplesPerSpace * stress(); ++k) {
      std::shared_ptr<Schedule> s;
      SampleOutcome o = sample(f, trace, 1000 + 17 * k + si, false, in.postprocs, &s);
      if (o == SampleOutcome::ReplayFailed) ++t.replay_failed;
      if (o == SampleOutcome::Rejected) ++t.rejected;
      if (o != SampleOutcome::Ok) continue;
      ++t.ok;
      if (gpu) {
        EXPECT_EQ(unbound_kernel(s->func()), "") << "space " << si << " sample " << k;
      }
      std::string diff = compare(reference, s->func());
      EXPECT_EQ(diff, "") << "space " << si << " sample " << k << " trace " << s->trace().to_json();
    }
  }
  std::printf(
      "[ std_rules ] %-60s %s spaces %2d  samples ok %2d  replay-failed %2d  rejected %2d\n",
      spec.c_str(), gpu ? "gpu" : "cpu", t.spaces, t.ok, t.replay_failed, t.rejected);
  return t;
}

TEST(StdRulesDesignSpace, CpuSetSamplesAreCorrectOnEveryWorkload) {
  Tally total;
  for (const std::string& spec : test_workload_specs()) {
    Tally t = check_workload(spec, cpu_set(), false);
    total.ok += t.ok;
    total.replay_failed += t.replay_failed;
    // Most fresh samples must be usable, or the search would starve.
    EXPECT_GE(t.ok, (t.spaces * kSamplesPerSpace * stress()) / 2) << spec;
  }
  EXPECT_GT(total.ok, 0);
}

TEST(StdRulesDesignSpace, GpuSetSamplesAreCorrectOnEveryWorkload) {
  Tally total;
  for (const std::string& spec : test_workload_specs()) {
    Tally t = check_workload(spec, gpu_set(), true);
    total.ok += t.ok;
    total.rejected += t.rejected;
    EXPECT_EQ(t.replay_failed, 0) << spec; // no sampled compute locations on GPU
  }
  EXPECT_GT(total.ok, 0);
}

} // namespace
} // namespace mt
