// Progress events (see report_progress.h).
#include "core/tuner/report_progress.h"

#include "core/tuner/task_context.h"

namespace mt {

ReportProgress::ReportProgress(TuneObserver& observer, ProgressOf progress)
    : observer_(observer), progress_(std::move(progress)) {}

void ReportProgress::on_trial(TaskContext& task, MeasuredTrial& trial) {
  observer_.on_trial(progress_(static_cast<int>(task.index)), trial.result);
}

void ReportProgress::apply(TaskContext& task, const std::vector<MeasuredTrial>&) {
  observer_.on_batch(progress_(static_cast<int>(task.index)));
}

} // namespace mt
