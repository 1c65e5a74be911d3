// Tests of lowering's automatic unrolling (core/lower/auto_unroll.cpp): the unroll depth that
// std.ParallelVectorizeUnroll samples changes the lowered program -- which loops are unrolled,
// explicitly or by hint -- by MetaSchedule's rule, parallel / vectorized / thread-bound loops
// are left alone, and every variant computes what the unscheduled function computes (the
// reference interpreter, and a double-precision matmul written here).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/ir/printer.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/runtime/arguments.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/random_schedule.h"
#include "core/workload/library.h"
#include "tiled_matmul_schedule.h"

namespace mt {
namespace {

using unroll_test::kExplicit;
using unroll_test::kMaxStep;
using unroll_test::tiled_matmul;

bool hinted(const ForNode* f) {
  return f->annotations.count(kUnrollHintAnnotation) != 0;
}
bool unrolled(const ForNode* f) {
  return f->for_kind == ForKind::Unrolled || hinted(f);
}

struct Counts {
  int unrolled = 0; // loops of kind Unrolled
  int hinted = 0;   // serial loops with the unroll hint
  int64_t straight_line_stores =
      0; // stores, each times the extents of the unrolled loops around it
};

void count(const Stmt& s, int64_t factor, Counts* c) {
  if (!s) return;
  if (s->kind == StmtKind::Store) {
    c->straight_line_stores += factor;
    return;
  }
  if (s->kind == StmtKind::For) {
    auto* f = as<ForNode>(s);
    c->unrolled += f->for_kind == ForKind::Unrolled;
    c->hinted += hinted(f);
    count(f->body, unrolled(f) ? factor * f->extent : factor, c);
    return;
  }
  for (const Stmt& ch : children(s))
    count(ch, factor, c);
}

Counts count(const Function& f) {
  Counts c;
  count(f.body, 1, &c);
  return c;
}


std::vector<NDArray> run(const Function& f) {
  std::vector<NDArray> args = make_arguments(f, {.seed = 7, .lo = -1.0, .hi = 1.0});
  interpret(f, pointers(args));
  return args;
}

void expect_matmul(const Function& f) {
  std::vector<NDArray> args = run(f);
  const float* a = args[0].data_as<float>();
  const float* b = args[1].data_as<float>();
  const float* c = args[2].data_as<float>();
  for (int64_t x = 0; x < 64; ++x)
    for (int64_t y = 0; y < 64; ++y) {
      double want = 0;
      for (int64_t z = 0; z < 64; ++z)
        want += double(a[x * 64 + z]) * double(b[z * 64 + y]);
      ASSERT_NEAR(c[x * 64 + y], want, 1e-4) << "C[" << x << ", " << y << "]";
    }
}

// The steps of each loop: ii 8 x 1 vector store = 8, ki 4 x 8 = 32, ko 16 x 32 = 512, jo
// 8 + 512 = 520; the init's ii is 8. So depth 16 unrolls both ii, 64 adds ki, 512 adds ko;
// jo (520) and the parallel io never.
TEST(AutoUnroll, DepthDecidesWhichInnermostLoopsAreUnrolled) {
  struct Want {
    int64_t depth;
    int unrolled;
    int64_t straight_line_stores;
  };
  std::set<std::string> programs;
  for (Want w : {Want{0, 0, 2}, Want{16, 2, 16}, Want{64, 3, 40}, Want{512, 4, 520}}) {
    SCOPED_TRACE("depth " + std::to_string(w.depth));
    Function low = lower(tiled_matmul(w.depth, 1));
    Counts c = count(low);
    EXPECT_EQ(c.unrolled, w.unrolled) << print(low);
    EXPECT_EQ(c.hinted, 0);
    EXPECT_EQ(c.straight_line_stores, w.straight_line_stores) << print(low);
    programs.insert(print(low));
    ASSERT_EQ(low.body->kind, StmtKind::For);
    EXPECT_EQ(as<ForNode>(low.body)->for_kind, ForKind::Parallel);
    int vectorized = 0;
    visit_stmts(low.body, [&](const Stmt& s) {
      vectorized += s->kind == StmtKind::For && as<ForNode>(s)->for_kind == ForKind::Vectorized;
      return true;
    });
    EXPECT_EQ(vectorized, 2);
    expect_matmul(low);
  }
  EXPECT_EQ(programs.size(), 4u) << "every depth gives its own program";
}

TEST(AutoUnroll, ImplicitRequestLeavesSerialLoopsWithTheHint) {
  for (int64_t depth : {16, 64, 512}) {
    Function exp = lower(tiled_matmul(depth, 1));
    Function imp = lower(tiled_matmul(depth, 0));
    Counts e = count(exp), i = count(imp);
    EXPECT_EQ(i.unrolled, 0) << print(imp);
    EXPECT_EQ(i.hinted, e.unrolled) << print(imp);
    EXPECT_EQ(i.straight_line_stores, e.straight_line_stores);
    expect_matmul(imp);
  }
}

TEST(AutoUnroll, SwitchedOffByOptionAndEnvironment) {
  Function sched = tiled_matmul(512, 1);
  Function off = lower(sched, LowerOptions{.auto_unroll = false});
  EXPECT_EQ(count(off).unrolled, 0);
  ASSERT_EQ(setenv("METATUNE_DISABLE_AUTO_UNROLL", "1", 1), 0);
  EXPECT_TRUE(auto_unroll_disabled_by_environment());
  Function env_off = lower(sched);
  ASSERT_EQ(unsetenv("METATUNE_DISABLE_AUTO_UNROLL"), 0);
  EXPECT_EQ(print(env_off), print(off));
  ASSERT_EQ(setenv("METATUNE_DISABLE_AUTO_UNROLL", "0", 1), 0);
  EXPECT_FALSE(auto_unroll_disabled_by_environment());
  ASSERT_EQ(unsetenv("METATUNE_DISABLE_AUTO_UNROLL"), 0);
  EXPECT_FALSE(auto_unroll_disabled_by_environment());
  EXPECT_EQ(count(lower(sched)).unrolled, 4);
}

// Hand-made loop programs for the rule's corners.
struct Nest {
  Buffer out = make_buffer("out", DType::f32(), {4096});
  Expr a = make_var("a"), b = make_var("b"), c = make_var("c");
  Stmt store(Expr idx) { return make_store(out, {std::move(idx)}, float_imm(1.0)); }
  static Annotations request(int64_t depth, int64_t explicit_unroll = 1) {
    return {{kMaxStep, AnnValue(depth)}, {kExplicit, AnnValue(explicit_unroll)}};
  }
};

const ForNode* loop_of(const Stmt& s, const std::string& var) {
  const ForNode* found = nullptr;
  visit_stmts(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::For && as<ForNode>(x)->loop_var->name == var) found = as<ForNode>(x);
    return !found;
  });
  return found;
}

TEST(AutoUnroll, ParallelAndThreadLoopsStayAndKeepTheirParentsRolled) {
  for (ForKind inner : {ForKind::Parallel, ForKind::ThreadBinding}) {
    Nest n;
    Stmt body = make_for(n.a, 4,
                         make_for(n.b, 4, make_for(n.c, 2, n.store(n.a * 8 + n.b * 2 + n.c)), inner,
                                  inner == ForKind::ThreadBinding ? "threadIdx.x" : ""),
                         ForKind::Serial, {}, Nest::request(1024));
    Stmt out = auto_unroll(body);
    EXPECT_EQ(loop_of(out, "a")->for_kind, ForKind::Serial) << print(out);
    EXPECT_EQ(loop_of(out, "b")->for_kind, inner);
    EXPECT_EQ(loop_of(out, "c")->for_kind, ForKind::Unrolled);
  }
}

TEST(AutoUnroll, VectorizedLoopsStayAndCountAsOneStatement) {
  Nest n;
  // a (4) { b (vectorized 64) { store } }: 4 steps although 256 elements.
  Stmt body = make_for(n.a, 4, make_for(n.b, 64, n.store(n.a * 64 + n.b), ForKind::Vectorized),
                       ForKind::Serial, {}, Nest::request(4));
  Stmt out = auto_unroll(body);
  EXPECT_EQ(loop_of(out, "a")->for_kind, ForKind::Unrolled) << print(out);
  EXPECT_EQ(loop_of(out, "b")->for_kind, ForKind::Vectorized);
}

TEST(AutoUnroll, NothingOutsideARequestAndTheInnerRequestWins) {
  Nest n;
  Expr d = make_var("d");
  Stmt inner =
      make_for(n.c, 4, make_for(d, 2, n.store(n.c * 2 + d)), ForKind::Serial, {}, Nest::request(0));
  Stmt body = make_seq({make_for(n.a, 2, n.store(n.a)),
                        make_for(n.b, 8, inner, ForKind::Serial, {}, Nest::request(4096))});
  Stmt out = auto_unroll(body);
  EXPECT_EQ(loop_of(out, "a")->for_kind, ForKind::Serial) << print(out);
  EXPECT_EQ(loop_of(out, "c")->for_kind, ForKind::Serial);
  EXPECT_EQ(loop_of(out, "d")->for_kind, ForKind::Serial);
  EXPECT_EQ(loop_of(out, "b")->for_kind, ForKind::Serial); // loops stay below it
}

TEST(AutoUnroll, ScheduledUnrollCountsAndSequencesAddUp) {
  Nest n;
  // a (2) { b (unrolled 4) { store }; c (3) { store } }: b counts 4, c 3, a 2 x 7 = 14.
  Stmt body = make_for(n.a, 2,
                       make_seq({make_for(n.b, 4, n.store(n.b), ForKind::Unrolled),
                                 make_for(n.c, 3, n.store(n.c + 4))}),
                       ForKind::Serial, {}, Nest::request(13));
  Stmt out = auto_unroll(body);
  EXPECT_EQ(loop_of(out, "b")->for_kind, ForKind::Unrolled);
  EXPECT_EQ(loop_of(out, "c")->for_kind, ForKind::Unrolled);
  EXPECT_EQ(loop_of(out, "a")->for_kind, ForKind::Serial) << print(out); // 14 > 13
  EXPECT_EQ(loop_of(auto_unroll(with_annotations(body, Nest::request(14))), "a")->for_kind,
            ForKind::Unrolled);
}

TEST(AutoUnroll, AtMostEightUnrolledLoopsNest) {
  Nest n;
  std::vector<Expr> vars;
  Stmt s = n.store(int_imm(0));
  for (int level = 0; level < 10; ++level) {
    vars.push_back(make_var("v" + std::to_string(level)));
    s = make_for(vars.back(), 1, s, ForKind::Serial, {},
                 level == 9 ? Nest::request(1000) : Annotations{});
  }
  Stmt out = auto_unroll(s);
  for (int level = 0; level < 10; ++level)
    EXPECT_EQ(loop_of(out, "v" + std::to_string(level))->for_kind,
              level < 8 ? ForKind::Unrolled : ForKind::Serial)
        << "level " << level << "\n"
        << print(out);
}

// ---- random schedules -------------------------------------------------------------------

// The rule restated top-down on the result: a loop that was serial is unrolled exactly when it
// is under a request of N > 0, no loop below it stays a loop, the stores below it times the
// unrolled extents between (its own included) are at most N, and it completes at most 8 nested
// unrolled loops. Loops of other kinds keep their kind.
class RuleCheck {
public:
  void check(const Stmt& after, const Stmt& before, int64_t max_step, bool explicit_unroll) {
    if (!after) return;
    ASSERT_TRUE(before);
    ASSERT_EQ(after->kind, before->kind);
    if (after->kind != StmtKind::For) {
      std::vector<Stmt> a = children(after), b = children(before);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        check(a[i], b[i], max_step, explicit_unroll);
      return;
    }
    auto* fa = as<ForNode>(after);
    auto* fb = as<ForNode>(before);
    if (auto it = fb->annotations.find(kMaxStep); it != fb->annotations.end())
      if (auto* v = std::get_if<int64_t>(&it->second)) max_step = *v;
    if (auto it = fb->annotations.find(kExplicit); it != fb->annotations.end())
      if (auto* v = std::get_if<int64_t>(&it->second)) explicit_unroll = *v != 0;
    if (fb->for_kind != ForKind::Serial) {
      EXPECT_EQ(fa->for_kind, fb->for_kind);
      EXPECT_FALSE(hinted(fa));
    } else {
      bool want = max_step > 0 && !rolled_below(fa->body) && nesting(fa->body) < 8 &&
                  fa->extent * stores(fa->body) <= max_step;
      EXPECT_EQ(unrolled(fa), want) << "loop " << fa->loop_var->name << " under depth " << max_step;
      if (want) {
        EXPECT_EQ(fa->for_kind == ForKind::Unrolled, explicit_unroll);
      }
      ++(want ? unrolled_ : rolled_);
    }
    check(fa->body, fb->body, max_step, explicit_unroll);
  }
  int unrolled_ = 0, rolled_ = 0;

private:
  static int64_t stores(const Stmt& s) {
    Counts c;
    count(s, 1, &c);
    return c.straight_line_stores;
  }
  static bool rolled_below(const Stmt& s) {
    bool found = false;
    visit_stmts(s, [&](const Stmt& x) {
      if (x->kind == StmtKind::For && !unrolled(as<ForNode>(x)) &&
          as<ForNode>(x)->for_kind != ForKind::Vectorized)
        found = true;
      return !found;
    });
    return found;
  }
  static int nesting(const Stmt& s) {
    if (!s) return 0;
    int deepest = 0;
    for (const Stmt& c : children(s))
      deepest = std::max(deepest, nesting(c));
    return deepest + (s->kind == StmtKind::For && unrolled(as<ForNode>(s)));
  }
};

// Random schedules of every library workload, each root nest's outermost loop given a random
// depth and mode: the lowered program follows the rule and computes the unscheduled result.
TEST(AutoUnroll, RandomSchedulesFollowTheRuleAndMatchTheInterpreter) {
  constexpr int kSchedules = 12;
  int unrolled = 0, rolled = 0;
  for (const std::string& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    std::vector<NDArray> ref = run(f);
    std::vector<bool> outs = f.output_mask();
    for (int seed = 1; seed <= kSchedules; ++seed) {
      Schedule sch(f, static_cast<uint64_t>(seed));
      apply_random_primitives(sch, 8);
      RandomEngine& r = sch.rng();
      for (BlockRV b : sch.all_blocks()) {
        std::vector<LoopRV> loops = sch.get_loops(b);
        if (loops.empty()) continue;
        static const int64_t depths[] = {0, 16, 64, 512};
        sch.annotate(loops.front(), kMaxStep, AnnValue(depths[r.uniform_int(0, 4)]));
        sch.annotate(loops.front(), kExplicit, AnnValue(r.uniform_int(0, 2)));
      }
      Function low = lower(sch.func());
      Function plain = lower(sch.func(), LowerOptions{.auto_unroll = false});
      RuleCheck rule;
      rule.check(low.body, plain.body, 0, true);
      if (::testing::Test::HasFailure()) FAIL() << "seed " << seed << "\n" << print(low);
      unrolled += rule.unrolled_;
      rolled += rule.rolled_;
      std::vector<NDArray> got = run(low);
      for (size_t i = 0; i < ref.size(); ++i) {
        if (!outs[i]) continue;
        std::string why;
        ASSERT_TRUE(allclose(got[i], ref[i], 1e-4, 1e-5, &why))
            << "seed " << seed << ", output " << f.params[i]->name << ": " << why << "\n"
            << print(low);
      }
    }
  }
  // Both outcomes occur often enough for the rule to be exercised.
  std::printf("serial loops: %d unrolled, %d left rolled\n", unrolled, rolled);
  EXPECT_GT(unrolled, 50);
  EXPECT_GT(rolled, 50);
}

} // namespace
} // namespace mt
