// Building and measuring candidates: each candidate is compiled by the target and timed in a
// worker process of its own, so that a kernel that crashes, divides by zero or never ends
// costs one trial and never the tuning run. Builds run in parallel (one worker per core) with
// a timeout; measurements run one at a time (nothing else competes for the cores), after a
// warm-up run whose output is compared with the reference result: a wrong kernel gets no time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PluginTarget;

struct MeasureOptions {
  int parallel_builds = 0;         // workers building at once; 0 = number of cores
  double build_timeout_s = 60;     // per candidate: lowering + target build
  double run_timeout_s = 20;       // per candidate: warm-up, check and all repeats
  int warmup_runs = 1;             // untimed runs before timing (the first one is checked)
  int repeats = 3;                 // timed repeats, one entry each in run_secs
  double min_repeat_seconds = 0.1; // each repeat calls the kernel until this much time passed
  bool flush_cache = false;        // evict the caches (write a large buffer) before each repeat
  // Each timed call on the next of many copies of the read-only arguments, spread over more
  // memory than the caches hold (cold_inputs.h): the inputs come from memory, as a model's
  // weights do. Outputs stay one set. CPU targets (the copies are host memory).
  bool cold_inputs = false;
  size_t cold_inputs_bytes = 0; // how much memory the copies span; 0 = twice the last-level cache
  bool check = true;               // compare the warm-up output with the reference
  double rtol = 1e-3;
  double atol = 1e-4;
  // The absolute tolerance of an output is also at least this times its largest |reference
  // value|: a target whose products round their operands (bf16_products_tolerance()) is off
  // by a share of the output's scale, not of each element.
  double atol_of_largest = 0;
  bool tolerance_given = false; // the user set rtol / atol: keep them as they are
  // Per param: a weight, the same values at every call (a model's parameter; a run decides it
  // per task). A kernel that takes one in a layout of its own (PluginModule::packed_layout: a
  // library's blocked weights, the llvm target's prepacked copies) gets it packed once before
  // its runs, as a model's executor packs it, and is timed with run_packed -- MetaSchedule's
  // layout-free buffers. Not with cold inputs: each call then reads the next copy as given.
  std::vector<bool> weights;
  bool isolate = true; // false: build and run in this process (debugging only: no
                       // timeouts, and a crashing kernel takes the process down)
};

// `m` widened for a target that reports "fpmath": "bf16" in its device description (products
// of operands rounded to bf16, summed in f32), unless the user gave the tolerances: a
// product's operands are each off by up to 2^-9 relative, so a length-K dot product is off by
// about 2^-8 sqrt(K) times a product's size -- a few thousandths of the largest output for
// random inputs; a wrong kernel is off by tenths of it. rtol 2^-6, atol 2^-7 of the largest.
MeasureOptions with_bf16_products_tolerance(MeasureOptions m);

// Inputs of a workload (random, deterministic in the seed) and its expected outputs as the
// reference interpreter computes them on the unscheduled function. The interpreter is slow
// (matmul 1024^3: about a minute on one core), so compute a task's reference once and reuse it
// for every batch; `threads` (0 = all cores) interpret independent slices of the output at
// once where that gives bit-identical results (see reference.cpp).
struct Reference {
  std::vector<NDArray> args;   // params in order; inputs random, outputs = expected result
  std::vector<bool> is_output; // per param
  double compute_seconds = 0;  // how long the interpreter took

  static Reference compute(const Function& workload, uint64_t seed = 1, int threads = 0);

  // Another way to compute the outputs than the interpreter: fills the outputs of `args`
  // (Reference::args, inputs already set) for `workload`. `name` tells the results apart
  // (they need not be bit-identical to the interpreter's): it is part of the cache key.
  struct Evaluator {
    std::string name; // "llvm.cpu"
    std::function<void(const Function& workload, std::vector<NDArray>& args)> run;
  };
  // The same inputs as compute(), the outputs from `evaluator`.
  static Reference compute_with(const Function& workload, uint64_t seed,
                                const Evaluator& evaluator);

  // Arguments for one run of a candidate: copies of the inputs, and outputs filled with NaN
  // (integers: -77) so that an element the kernel never writes shows up in the comparison.
  std::vector<NDArray> fresh_args() const;
};

enum class MeasureStatus {
  Ok,
  BuildError, // the target refused or failed to build
  BuildTimeout,
  RunError, // the kernel returned an error status
  Crashed,  // the worker died from a signal (SIGSEGV, SIGFPE, ...)
  RunTimeout,
  WrongResult, // ran, but its output differs from the reference
  // The target does not implement this function at all (a library target asked for a
  // workload it has no primitive for: its build returned MT_ERROR_UNSUPPORTED). Not a bug of
  // the candidate; callers such as library_candidate skip it instead of recording a failure.
  Unsupported,
};
const char* to_string(MeasureStatus s);

struct MeasureResult {
  MeasureStatus status = MeasureStatus::Ok;
  std::string error;            // empty when Ok; else names the reason ("SIGSEGV", ...)
  std::vector<double> run_secs; // seconds per call, one per repeat; empty unless Ok
  double build_seconds = 0;
  // The candidate's turn on the device, wall time: from the go to measure to the answer
  // (arguments, warm-up, check against the reference, timed repeats); 0 when it never ran.
  double run_wall_seconds = 0;
  int packed_args = 0; // weights it ran with packed (MeasureOptions::weights)
  bool ok() const { return status == MeasureStatus::Ok; }
};

class Measurer {
public:
  Measurer(const PluginTarget& target, MeasureOptions options = {});
  ~Measurer();
  const MeasureOptions& options() const;
  // MeasureOptions::cold_inputs for the measurements from here on (a run decides it per task).
  void set_cold_inputs(bool cold);
  // MeasureOptions::weights for the measurements from here on (per task; empty: none).
  void set_weights(std::vector<bool> weights);

  // One result per candidate (scheduled functions of the workload `ref` was computed for),
  // in order. `on_result(i, result)` is called as each result becomes known (for progress).
  std::vector<MeasureResult>
  measure(const Reference& ref, const std::vector<Function>& candidates,
          const std::function<void(size_t, const MeasureResult&)>& on_result = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace mt
