// The measure callback that hands a measured batch to the task's search strategy, which trains
// the cost model on it and never proposes those candidates again, then saves the model
// (TuneOptions::cost_model_path) so that a later run starts from it (measure_callback.h).
#pragma once

#include "core/tuner/measure_callback.h"

namespace mt {

class UpdateCostModel : public MeasureCallback {
public:
  void apply(TaskContext& task, const std::vector<MeasuredTrial>& trials) override;
};

} // namespace mt
