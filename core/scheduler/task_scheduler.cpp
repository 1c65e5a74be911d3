// Round-robin and gradient-based task schedulers (see task_scheduler.h).
//
// Choices the formula leaves open:
// - A task with no successful trial yet (best = +inf) has no gradient: after its first batch it
//   ranks below every task with a finite best, and is chosen again only when no such task can
//   go on (a task whose whole batch failed is more likely broken than one lucky batch away).
// - In the window term, a best of +inf `w` batches ago (the task had not succeeded then) counts
//   as no progress measured, not as an infinite one.
// - A turn that used no trials means the task's search could not propose anything: the task is
//   marked exhausted, so that a caller never loops on it.
// - Ties go to the lower task index, so the order is deterministic.
// - A first batch is at most the budget left divided by the tasks still waiting for one
//   (both schedulers): a model with more tasks than the budget has full batches for (31 tasks
//   of a decoder with its decode step, 400 trials, batches of 16) still gets every task
//   measured, the largest kernels included, instead of leaving the last ones untouched.
// - With several tasks a first batch is also at most first_pass_share of the whole budget
//   divided by the number of tasks (at least one trial), so that the gradient has the rest
//   to give to the tasks that weigh in the model's latency.
#include "core/scheduler/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace mt {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct TaskState {
  SchedulerTask task;
  size_t used = 0;
  std::vector<double> best; // best seconds after each batch
  bool exhausted = false;
};

class SchedulerBase : public TaskScheduler {
public:
  SchedulerBase(std::vector<SchedulerTask> tasks, const TaskSchedulerOptions& options)
      : opt_(options) {
    if (opt_.batch_size == 0) throw std::invalid_argument("TaskScheduler: batch_size is 0");
    if (!(opt_.first_pass_share > 0 && opt_.first_pass_share <= 1))
      throw std::invalid_argument("TaskScheduler: first_pass_share " +
                                  std::to_string(opt_.first_pass_share) + " is not in (0, 1]");
    for (auto& t : tasks)
      tasks_.push_back({std::move(t), 0, {}, false});
    if (!tasks_.empty())
      first_pass_cap_ = std::max<size_t>(
          1, static_cast<size_t>(opt_.first_pass_share * static_cast<double>(opt_.total_trials) /
                                 static_cast<double>(tasks_.size())));
  }

  size_t trials_for(int task) const override {
    const TaskState& t = at(task, "trials_for");
    size_t n = std::min(opt_.batch_size, opt_.total_trials - std::min(used_, opt_.total_trials));
    if (opt_.per_task_cap > 0)
      n = std::min(n, opt_.per_task_cap - std::min(t.used, opt_.per_task_cap));
    // The first pass shares what is left among the tasks still waiting for their first batch,
    // so that every task is measured at least once when the budget allows one trial each.
    if (t.best.empty()) {
      size_t waiting = 0;
      for (const TaskState& u : tasks_)
        waiting += u.best.empty() && can_go_on(u) ? 1 : 0;
      size_t left = opt_.total_trials - std::min(used_, opt_.total_trials);
      if (waiting > 0) n = std::min(n, std::max<size_t>(1, left / waiting));
      if (tasks_.size() > 1) n = std::min(n, first_pass_cap_);
    }
    return t.exhausted ? 0 : n;
  }

  void report(int task, size_t trials, double best_seconds) override {
    TaskState& t = at(task, "report");
    t.used += trials;
    used_ += trials;
    if (std::isnan(best_seconds)) best_seconds = kInf;
    double prev = t.best.empty() ? kInf : t.best.back();
    t.best.push_back(std::min(prev, best_seconds));
    if (trials == 0) t.exhausted = true;
  }

  void mark_exhausted(int task) override { at(task, "mark_exhausted").exhausted = true; }

  size_t trials_used() const override { return used_; }

protected:
  bool can_go_on(const TaskState& t) const {
    return !t.exhausted && used_ < opt_.total_trials &&
           (opt_.per_task_cap == 0 || t.used < opt_.per_task_cap);
  }

  TaskState& at(int task, const char* what) {
    return const_cast<TaskState&>(std::as_const(*this).at(task, what));
  }
  const TaskState& at(int task, const char* what) const {
    if (task < 0 || static_cast<size_t>(task) >= tasks_.size())
      throw std::out_of_range(std::string("TaskScheduler::") + what + ": no task " +
                              std::to_string(task) + " (" + std::to_string(tasks_.size()) +
                              " tasks)");
    return tasks_[static_cast<size_t>(task)];
  }

  TaskSchedulerOptions opt_;
  std::vector<TaskState> tasks_;
  size_t used_ = 0;
  size_t first_pass_cap_ = 0; // trials of a first batch at most, with several tasks
};

class RoundRobinScheduler : public SchedulerBase {
public:
  using SchedulerBase::SchedulerBase;

  int next_task() override {
    for (size_t k = 0; k < tasks_.size(); ++k) {
      size_t i = (next_ + k) % tasks_.size();
      if (can_go_on(tasks_[i])) {
        next_ = i + 1;
        return static_cast<int>(i);
      }
    }
    return -1;
  }

private:
  size_t next_ = 0;
};

class GradientScheduler : public SchedulerBase {
public:
  using SchedulerBase::SchedulerBase;

  int next_task() override {
    // One batch each first, in order.
    for (size_t i = 0; i < tasks_.size(); ++i)
      if (tasks_[i].best.empty() && can_go_on(tasks_[i])) return static_cast<int>(i);
    int pick = -1;
    double pick_gain = 0;
    bool pick_finite = false;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      const TaskState& t = tasks_[i];
      if (!can_go_on(t)) continue;
      bool finite = std::isfinite(t.best.back());
      double g = finite ? gain(t) : 0;
      // Finite tasks first; among those without a success, fewest trials first.
      bool better = pick < 0 || (finite && !pick_finite) ||
                    (finite == pick_finite &&
                     (finite ? g > pick_gain : t.used < tasks_[static_cast<size_t>(pick)].used));
      if (better) {
        pick = static_cast<int>(i);
        pick_gain = g;
        pick_finite = finite;
      }
    }
    return pick;
  }

private:
  // The header's formula with the best times indexed from 0 as MetaSchedule does: the window
  // term is the improvement over the last w batches, t.best[n-1-w] - t.best[n-1], per batch.
  double gain(const TaskState& t) const {
    size_t n = t.best.size();
    double now = t.best.back();
    int w = std::max(opt_.window, 1);
    double backward = 0;
    if (n >= static_cast<size_t>(w) + 1) {
      double before = t.best[n - 1 - static_cast<size_t>(w)];
      if (std::isfinite(before)) backward = (before - now) / w;
    }
    double forward = now / static_cast<double>(n);
    return t.task.weight * (opt_.alpha * backward + (1 - opt_.alpha) * forward);
  }
};

} // namespace

std::unique_ptr<TaskScheduler> make_gradient_scheduler(std::vector<SchedulerTask> tasks,
                                                       const TaskSchedulerOptions& options) {
  return std::make_unique<GradientScheduler>(std::move(tasks), options);
}

std::unique_ptr<TaskScheduler> make_round_robin_scheduler(std::vector<SchedulerTask> tasks,
                                                          const TaskSchedulerOptions& options) {
  return std::make_unique<RoundRobinScheduler>(std::move(tasks), options);
}

} // namespace mt
