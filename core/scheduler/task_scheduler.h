// Sharing one trial budget among the tasks of a model. Round-robin gives every task a batch in
// turn; gradient-based (MetaSchedule's default) first gives each task one batch, then always
// the task whose end-to-end latency is predicted to drop most from another batch:
//   weight * (alpha * (best[n-1-w] - best[n]) / w + (1 - alpha) * best[n] / n)
// with best[i] the task's best time after its i-th batch, alpha = 0.2 and window w = 3.
// A per-task cap bounds the trials of any one task; the global budget bounds the sum.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mt {

struct SchedulerTask {
  std::string name;
  double weight = 1; // how often the task runs in the model
};

struct TaskSchedulerOptions {
  size_t total_trials = 1000; // global budget over all tasks
  size_t per_task_cap = 0;    // 0 = no cap
  size_t batch_size = 64;     // trials given to a task per turn
  // With several tasks, the first pass (one batch each) uses at most this share of the
  // budget: a model's 31 tasks with 400 trials would otherwise spend all of it on equal first
  // batches, as many trials for a 4-microsecond rope table as for the vocabulary head, and the
  // gradient would never choose. 1 = first batches of the full batch size when the budget
  // allows.
  double first_pass_share = 1.0;
  double alpha = 0.2;
  int window = 3;
};

class TaskScheduler {
public:
  virtual ~TaskScheduler() = default;
  // The next task to give a batch of trials to, or -1 when the budget is spent or no task can
  // go on (all capped, finished or exhausted).
  virtual int next_task() = 0;
  // How many trials the chosen task may use now (<= batch size, budget and cap).
  virtual size_t trials_for(int task) const = 0;
  // After a task's batch: trials used and its best seconds so far (+inf if none succeeded).
  virtual void report(int task, size_t trials, double best_seconds) = 0;
  // A task whose search cannot propose more candidates is never chosen again.
  virtual void mark_exhausted(int task) = 0;
  virtual size_t trials_used() const = 0;
};

std::unique_ptr<TaskScheduler> make_gradient_scheduler(std::vector<SchedulerTask> tasks,
                                                       const TaskSchedulerOptions& options);
std::unique_ptr<TaskScheduler> make_round_robin_scheduler(std::vector<SchedulerTask> tasks,
                                                          const TaskSchedulerOptions& options);

} // namespace mt
