// Side-by-side timing of two implementations of one workload (the best tuned kernel and a
// library's, e.g. oneDNN): rounds of A then B (then B then A, ...), each timing in a fresh
// worker process of its own, and each side's median reported. Measured apart, at different
// moments of a long tuning run, two kernels see different machine load; alternated round by
// round they see the same. Each in its own process because two runtimes in one process
// disturb each other: oneDNN's OpenMP threads spin after every call and take the cores from
// the kernel timed next (measured: a matmul at 0.66 of oneDNN together, 0.86 apart). The
// kernels are not checked here (the tuning run already checked both against the reference).
//
// Why forked workers and not the calling process: oneDNN runs on GNU OpenMP, which is not
// fork-safe -- once a process has run a multi-threaded OpenMP region, an OpenMP region in any
// child forked from it hangs. The measurer forks a worker for every candidate, so the tuning
// process itself must never run a library kernel.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "core/ir/function.h"

namespace mt {

class PluginTarget;

struct CompareOptions {
  int repeats = 5;                 // timed repeats of each implementation
  double min_repeat_seconds = 0.1; // each repeat calls the kernel at least this long
  double timeout_s = 300;          // the whole comparison (builds included)
  uint64_t seed = 1;               // of the random inputs
  bool cold_inputs = false;        // each call on the next copy of the inputs (cold_inputs.h)
  size_t cold_inputs_bytes = 0;    // their span; 0 = twice the last-level cache
  std::vector<bool> weights;       // per param: packed where a kernel takes it (MeasureOptions)
};

struct CompareResult {
  bool ok = false;
  std::string error;                  // why not ok
  std::vector<double> a_secs, b_secs; // seconds per call, one per repeat, in timing order
  double a_median = std::numeric_limits<double>::infinity();
  double b_median = std::numeric_limits<double>::infinity();
};

// Builds and times `a` for `target_a` and `b` for `target_b` (each lowered first if it is
// not), alternately, each repeat in a forked worker of its own, on the same random inputs. Never throws for a
// failing build or run: the result says what failed.
CompareResult compare_interleaved(const PluginTarget& target_a, const Function& a,
                                  const PluginTarget& target_b, const Function& b,
                                  const CompareOptions& options = {});

// Median of `v` (the mean of the two middle values for an even count); +inf when empty.
double median_of(std::vector<double> v);

} // namespace mt
