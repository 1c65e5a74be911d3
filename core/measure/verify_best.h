// Re-measuring a task's fastest records before one of them is trusted as the best.
//
// A tuning run measures each candidate once, in one worker process. On a shared machine one
// kernel's speed differs between processes (page placement, what else runs; about +-20% on the
// 2-vCPU VMs metatune is developed on), so the fastest of hundreds of single measurements is
// mostly a lucky one, and a run that reports it promises more than the kernel gives. Here the
// `top` fastest records are measured again, `rounds` times each, every time in a fresh worker
// (candidates in turn, the order reversed every other round so drift hits all alike). The new
// times are appended to the records (Database::append_run_secs: nothing stored is lost) and the
// best is the record with the lowest mean over all its times, the first measurement now one of
// 1 + rounds: the same figure `metatune best` and later runs rank by. Records that move into
// the top after that are measured again too, so the best is never an unconfirmed single time.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/measure/measure.h"

namespace mt {

class Database;

struct VerifyOptions {
  size_t top = 5; // records re-measured (the fastest successful ones) at most; 0 = none
  int rounds = 3; // fresh-worker measurements of each
  // One record re-measured per this many successful records of the task (see above); 1 =
  // always `top` (when there are that many).
  size_t records_per_verified = 10;
};

// The number of fastest records verify_best measures again first for a task with `successful`
// successful records: ceil(successful / records_per_verified), between 1 and `top` (0 when
// `top` or `successful` is 0).
size_t records_to_verify(size_t successful, const VerifyOptions& options);

struct VerifiedRecord {
  int64_t record_id = 0;
  double recorded_seconds = 0;       // the record's mean before this re-measurement
  std::vector<double> round_seconds; // per successful round: the mean of its repeats
  // The record's mean over all its times after this; +inf if every round failed (then nothing
  // was appended and the record cannot be the best).
  double mean_seconds = std::numeric_limits<double>::infinity();
  std::string error; // the last failure, if a round failed
};

struct VerifyResult {
  std::vector<VerifiedRecord> records; // every record measured again, in the order measured
  // The database's fastest record afterwards, when it was one measured again (always, unless
  // stopped, every re-measurement of it failed, or unverified newcomers kept taking the top
  // through every pass); 0 otherwise.
  int64_t best_record_id = 0;
  double best_seconds = std::numeric_limits<double>::infinity();
  bool interrupted = false;
};

// Re-measures the fastest records of `workload_id` on `target` (see above). `measurer` must
// measure on that target, `ref` be the workload's reference. `stop` (optional) ends it between
// rounds; what was measured until then still counts. `measured_again` (optional): records
// measured again earlier in the same run, which count as confirmed and are not measured again.
VerifyResult verify_best(Database& db, Measurer& measurer, const Reference& ref,
                         const Function& workload, int64_t workload_id, const std::string& target,
                         const VerifyOptions& options, const std::atomic<bool>* stop = nullptr,
                         const std::set<int64_t>* measured_again = nullptr);

} // namespace mt
