// The measure callback that commits every trial to the database the moment its result is
// known -- failed ones too, with their error -- and keeps the task's counts and best record
// up to date (measure_callback.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/database/database.h"
#include "core/tuner/measure_callback.h"

namespace mt {

class AddToDatabase : public MeasureCallback {
public:
  // `target_key`: the database key the records are filed under; `plugins`: what the run used.
  AddToDatabase(Database& db, std::string target_key, uint64_t seed,
                std::vector<PluginInfo> plugins);
  void on_trial(TaskContext& task, MeasuredTrial& trial) override;

private:
  Database& db_;
  std::string target_key_;
  uint64_t seed_;
  std::vector<PluginInfo> plugins_;
};

} // namespace mt
