// Random sequences of schedule primitives with random operands: the generator behind the
// "any schedule computes the same result" tests and the `metatune demo` command. Primitives
// that the schedule refuses are skipped (and counted), so the result is always a legal
// schedule.
#pragma once

#include <map>
#include <string>

#include "core/schedule/schedule.h"

namespace mt {

struct RandomScheduleStats {
  int applied = 0;
  int refused = 0;
  std::map<std::string, int> applied_by_kind;
};

// Attempts `steps` random primitives on `sch`, drawing choices from sch.rng().
RandomScheduleStats apply_random_primitives(Schedule& sch, int steps);

} // namespace mt
