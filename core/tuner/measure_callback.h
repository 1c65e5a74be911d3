// What happens after a measurement, as MetaSchedule's MeasureCallback: the tuner hands every
// trial of a batch, and then the batch, to its callbacks in order. The built-in ones commit
// each trial to the database (add_to_database.h), train the cost model on the batch
// (update_cost_model.h) and report progress to the TuneObserver (report_progress.h); an
// embedding application adds its own through TuneOptions::callbacks, which run after them
// and so see each trial already committed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/measure/measure.h"
#include "core/schedule/schedule.h"

namespace mt {

class TaskContext;

struct MeasuredTrial {
  std::shared_ptr<Schedule> schedule;
  MeasureResult result;
  int64_t record_id = 0; // its database record, once AddToDatabase has committed it
};

class MeasureCallback {
public:
  virtual ~MeasureCallback() = default;
  // Each trial of the task, failed ones too, as soon as its result is known (in completion
  // order, one call at a time). Trials are handed over here rather than only with the batch
  // so that a killed run loses at most the trial in flight. After a stop request failures
  // are not handed over: they may be the interrupt's doing.
  virtual void on_trial(TaskContext& /*task*/, MeasuredTrial& /*trial*/) {}
  // After the task's batch: the trials on_trial saw, in the same order (possibly none, when
  // the run was stopped before one finished).
  virtual void apply(TaskContext& /*task*/, const std::vector<MeasuredTrial>& /*trials*/) {}
};

} // namespace mt
