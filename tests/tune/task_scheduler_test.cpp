// The task schedulers driven as the tuner drives them (next_task, trials_for, report): the
// global budget and the per-task cap are met exactly, round-robin takes the tasks in turn,
// the gradient scheduler passes over every task once and then follows MetaSchedule's formula
// (computed here independently for the expected choice), and exhausted or never-successful
// tasks are handled without looping.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/scheduler/task_scheduler.h"

namespace mt {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<SchedulerTask> tasks(std::vector<double> weights) {
  std::vector<SchedulerTask> out;
  for (size_t i = 0; i < weights.size(); ++i)
    out.push_back({"task" + std::to_string(i), weights[i]});
  return out;
}

std::unique_ptr<TaskScheduler> make_scheduler(bool gradient, std::vector<SchedulerTask> t,
                                              const TaskSchedulerOptions& o) {
  return gradient ? make_gradient_scheduler(std::move(t), o)
                  : make_round_robin_scheduler(std::move(t), o);
}

// Runs a scheduler to the end, every task always using all the trials it is given and
// reporting best = seconds(task, batch index).
template <class Seconds>
std::vector<int> drive(TaskScheduler& s, Seconds seconds, std::map<int, size_t>* used = nullptr,
                       size_t max_turns = 1000) {
  std::vector<int> order;
  std::map<int, int> batches;
  for (size_t turn = 0; turn < max_turns; ++turn) {
    int t = s.next_task();
    if (t < 0) break;
    size_t n = s.trials_for(t);
    EXPECT_GT(n, 0u) << "chosen task " << t << " with no trials";
    order.push_back(t);
    if (used) (*used)[t] += n;
    s.report(t, n, seconds(t, batches[t]++));
  }
  return order;
}

TEST(TaskScheduler, RoundRobinTakesTasksInTurnWithinBudget) {
  TaskSchedulerOptions o;
  o.total_trials = 100;
  o.batch_size = 16;
  auto s = make_round_robin_scheduler(tasks({1, 1, 1}), o);
  std::map<int, size_t> used;
  std::vector<int> order = drive(
      *s, [](int, int) { return 1e-3; }, &used);
  // 16 * 6 = 96, then one last batch of 4.
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(used[0], 36u);
  EXPECT_EQ(s->trials_used(), 100u);
  EXPECT_EQ(s->next_task(), -1);
}

TEST(TaskScheduler, AShortBudgetIsSharedSoThatEveryTaskGetsAFirstBatch) {
  // 31 tasks, batches of 16, 400 trials: 25 full first batches would leave six tasks untried.
  TaskSchedulerOptions o;
  o.total_trials = 400;
  o.batch_size = 16;
  for (bool gradient : {false, true}) {
    SCOPED_TRACE(gradient ? "gradient" : "round robin");
    std::vector<double> weights(31, 1.0);
    auto s = make_scheduler(gradient, tasks(weights), o);
    std::map<int, size_t> used;
    std::vector<int> order = drive(
        *s, [](int t, int b) { return (t + 1) * 1e-3 / (b + 1); }, &used);
    ASSERT_GE(order.size(), 31u);
    for (int t = 0; t < 31; ++t) {
      EXPECT_EQ(order[static_cast<size_t>(t)], t) << "first pass in order";
      // 400 / 31 = 12 for the first, and never fewer than an equal share of what was left.
      EXPECT_GE(used[t], 12u) << "task " << t;
    }
    EXPECT_EQ(s->trials_used(), 400u);
  }
  // Fewer trials than tasks: one each, in order, until the budget is spent.
  o.total_trials = 5;
  auto s = make_gradient_scheduler(tasks({1, 1, 1, 1, 1, 1, 1, 1}), o);
  std::map<int, size_t> used;
  EXPECT_EQ(drive(
                *s, [](int, int) { return 1e-3; }, &used),
            (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(used[4], 1u);
}

TEST(TaskScheduler, AShareOfAShortBudgetIsLeftForTheGradientAfterTheFirstPass) {
  // A model's 31 tasks, 400 trials, batches of 16: with first_pass_share 0.5 the first pass
  // gives each task 200 / 31 = 6 trials, and the 214 left go by the gradient -- to the three
  // tasks that weigh in the latency (weight 12, 3 ms), none to the 28 light ones (4 us).
  TaskSchedulerOptions o;
  o.total_trials = 400;
  o.batch_size = 16;
  o.first_pass_share = 0.5;
  std::vector<double> weights(31, 12.0);
  auto heavy = [](int t) { return t == 3 || t == 17 || t == 30; };
  auto s = make_gradient_scheduler(tasks(weights), o);
  std::map<int, size_t> used;
  std::vector<int> order = drive(
      *s, [&](int t, int b) { return (heavy(t) ? 3e-3 : 4e-6) / (1 + 0.01 * b); }, &used);
  ASSERT_GE(order.size(), 31u);
  size_t heavy_trials = 0;
  for (int t = 0; t < 31; ++t) {
    EXPECT_EQ(order[static_cast<size_t>(t)], t) << "first pass in order";
    if (heavy(t))
      heavy_trials += used[t];
    else
      EXPECT_EQ(used[t], 6u) << "light task " << t;
  }
  EXPECT_EQ(heavy_trials, 3 * 6 + 214u);
  for (int t : {3, 17, 30})
    EXPECT_GE(used[t], 6u + 64u) << "each heavy task gets its part of the rest";
  EXPECT_EQ(s->trials_used(), 400u);

  // One task has nothing to share with: its first batch stays a full one.
  auto one = make_gradient_scheduler(tasks({1}), o);
  EXPECT_EQ(one->trials_for(one->next_task()), 16u);
  // A share outside (0, 1] is refused.
  o.first_pass_share = 0;
  EXPECT_THROW(make_gradient_scheduler(tasks({1, 1}), o), std::invalid_argument);
}

TEST(TaskScheduler, PerTaskCapIsExactAndSkipsCappedTasks) {
  TaskSchedulerOptions o;
  o.total_trials = 1000;
  o.per_task_cap = 40;
  o.batch_size = 16;
  for (bool gradient : {false, true}) {
    SCOPED_TRACE(gradient ? "gradient" : "round robin");
    auto s = make_scheduler(gradient, tasks({1, 5}), o);
    std::map<int, size_t> used;
    drive(
        *s, [](int t, int b) { return (t + 1) * 1e-3 / (b + 1); }, &used);
    EXPECT_EQ(used[0], 40u);
    EXPECT_EQ(used[1], 40u);
    EXPECT_EQ(s->trials_used(), 80u);
    EXPECT_EQ(s->trials_for(0), 0u);
  }
}

TEST(TaskScheduler, GradientPassesOverEveryTaskThenPicksTheLargerGain) {
  TaskSchedulerOptions o;
  o.total_trials = 10000;
  o.batch_size = 10;
  // Task 1 is slow (10 ms) and weighted 2; task 0 fast (1 ms): (1-alpha)*best/n favours task 1.
  auto s = make_gradient_scheduler(tasks({1, 2, 1}), o);
  EXPECT_EQ(s->next_task(), 0);
  s->report(0, 10, 1e-3);
  EXPECT_EQ(s->next_task(), 1);
  s->report(1, 10, 10e-3);
  EXPECT_EQ(s->next_task(), 2);
  s->report(2, 10, 2e-3);
  EXPECT_EQ(s->next_task(), 1);
  s->report(1, 10, 10e-3);
  // Gains now: task0 0.8*1e-3/1, task1 2*0.8*10e-3/2 = 8e-3, task2 0.8*2e-3 -> still task 1,
  // until its n grows: after k batches of 10 ms, 16e-3/k < 1.6e-3 needs k > 10.
  int ones = 0;
  for (int i = 0; i < 8; ++i) {
    int t = s->next_task();
    if (t == 1) ++ones;
    s->report(t, 10, t == 0 ? 1e-3 : t == 1 ? 10e-3 : 2e-3);
  }
  EXPECT_EQ(ones, 8);
}

// The window term: the same best and n, but one task improved over the last w batches.
TEST(TaskScheduler, GradientRewardsRecentImprovement) {
  TaskSchedulerOptions o;
  o.total_trials = 10000;
  o.batch_size = 1;
  auto s = make_gradient_scheduler(tasks({1, 1}), o);
  std::vector<double> flat = {4e-3, 4e-3, 4e-3, 4e-3}, improving = {8e-3, 6e-3, 5e-3, 4e-3};
  // Interleave: the first pass is forced (0 then 1); afterwards feed the histories directly.
  s->report(0, 1, flat[0]);
  s->report(1, 1, improving[0]);
  for (size_t i = 1; i < 4; ++i) {
    s->report(0, 1, flat[i]);
    s->report(1, 1, improving[i]);
  }
  // Expected from the formula (w = 3, alpha = 0.2, n = 4): task 0: 0.8 * 4e-3 / 4;
  // task 1: 0.2 * (8e-3 - 4e-3) / 3 + 0.8 * 4e-3 / 4.
  double g0 = 0.8 * 4e-3 / 4, g1 = 0.2 * (8e-3 - 4e-3) / 3 + 0.8 * 4e-3 / 4;
  ASSERT_GT(g1, g0);
  EXPECT_EQ(s->next_task(), 1);
}

TEST(TaskScheduler, ExhaustedTasksAreSkipped) {
  TaskSchedulerOptions o;
  o.total_trials = 100;
  o.batch_size = 10;
  for (bool gradient : {false, true}) {
    SCOPED_TRACE(gradient ? "gradient" : "round robin");
    auto s = make_scheduler(gradient, tasks({1, 1, 1}), o);
    s->mark_exhausted(1);
    EXPECT_EQ(s->trials_for(1), 0u);
    std::map<int, size_t> used;
    // Task 2's search runs dry after its first batch: it proposes nothing (0 trials).
    std::vector<int> order;
    for (int turn = 0; turn < 100; ++turn) {
      int t = s->next_task();
      if (t < 0) break;
      order.push_back(t);
      size_t n = t == 2 && used[2] > 0 ? 0 : s->trials_for(t);
      used[t] += n;
      s->report(t, n, 1e-3);
    }
    EXPECT_EQ(used[1], 0u);
    EXPECT_EQ(used[2], 10u);
    EXPECT_EQ(used[0], 90u);
    EXPECT_EQ(s->trials_used(), 100u);
    EXPECT_EQ(s->next_task(), -1);
  }
}

// A task with no successful trial yet has no gradient: the others go first; it gets trials
// again once nothing else can go on, and the budget still ends the run.
TEST(TaskScheduler, GradientPutsNeverSuccessfulTasksLast) {
  TaskSchedulerOptions o;
  o.total_trials = 60;
  o.per_task_cap = 40;
  o.batch_size = 10;
  auto s = make_gradient_scheduler(tasks({1, 1}), o);
  std::vector<int> order = drive(*s, [](int t, int) { return t == 0 ? kInf : 1e-3; });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 1, 1, 1, 0}));
  EXPECT_EQ(s->trials_used(), 60u);
}

TEST(TaskScheduler, UnknownTaskIsAnError) {
  auto s = make_round_robin_scheduler(tasks({1}), {});
  EXPECT_THROW(s->report(3, 1, 1.0), std::out_of_range);
  EXPECT_THROW(s->mark_exhausted(-1), std::out_of_range);
}

} // namespace
} // namespace mt
