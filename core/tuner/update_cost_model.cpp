// Training on a measured batch (see update_cost_model.h).
#include "core/tuner/update_cost_model.h"

#include "core/tuner/task_context.h"

namespace mt {

void UpdateCostModel::apply(TaskContext& task, const std::vector<MeasuredTrial>& trials) {
  if (trials.empty()) return;
  std::vector<std::shared_ptr<Schedule>> schedules;
  std::vector<double> secs;
  for (const MeasuredTrial& t : trials) {
    schedules.push_back(t.schedule);
    secs.push_back(measured_seconds(t.result));
  }
  // The strategy trains the cost model on the batch (evolutionary_search.cpp).
  task.strategy->notify(schedules, secs);
  task.save_model();
}

} // namespace mt
