// The measure callback that tells the run's TuneObserver about each trial and each batch
// (measure_callback.h). The run's progress (all tasks together) is the tuner's to compute; it
// passes a function that computes it for the task of the event.
#pragma once

#include <functional>

#include "core/tuner/measure_callback.h"
#include "core/tuner/tuner.h"

namespace mt {

class ReportProgress : public MeasureCallback {
public:
  using ProgressOf = std::function<TuneProgress(int task)>;
  ReportProgress(TuneObserver& observer, ProgressOf progress);
  void on_trial(TaskContext& task, MeasuredTrial& trial) override;
  void apply(TaskContext& task, const std::vector<MeasuredTrial>& trials) override;

private:
  TuneObserver& observer_;
  ProgressOf progress_;
};

} // namespace mt
