// The work of one measurement worker, shared by the isolated (forked) and the in-process
// measurer: lowering + building a candidate, and running it (warm-up, check against the
// reference, timed repeats). Also the wire format in which a forked worker sends its answers
// back. Internal to core/measure (measure.cpp is the only user).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/measure/cold_inputs.h"
#include "core/measure/measure.h"
#include "core/plugin/plugin_components.h"

namespace mt::measure_detail {

struct Built {
  std::unique_ptr<PluginModule> module; // null when the build failed
  double seconds = 0;                   // lowering + target build
  std::string error;                    // why the build failed
  bool unsupported = false;             // the target refused with MT_ERROR_UNSUPPORTED
};

// The result of a failed build: BuildError, or Unsupported when the target said so.
MeasureResult build_failure(const Built& b);

// Lowers (if needed) and builds `candidate`; never throws. `weights` (MeasureOptions::weights,
// empty where they go unpacked): their packed layouts are asked for here, so that a target that
// compiles a kernel for them (llvm: prepacked copies) does it in the builds, which run side by
// side, not in the runs, which take turns; a failure there is the run's to report.
Built build_candidate(const PluginTarget& target, const Function& candidate,
                      const std::vector<bool>& weights = {});

// Warm-up run(s) on fresh arguments, comparison of the outputs with the reference, then the
// timed repeats. Never throws: a failing run is RunError, a mismatch WrongResult.
// With options.cold_inputs, `cold` holds the copies of the inputs the timed calls take.
MeasureResult run_candidate(const PluginModule& module, const Reference& ref,
                            const MeasureOptions& options, ColdInputs* cold = nullptr);

// "SIGSEGV", "SIGFPE", ... ("signal 42" for one without a name here).
std::string signal_name(int sig);

// ---- wire format: frames of [u8 tag][u32 length][payload] ------------------------------------
inline constexpr char kTagBuilt = 'B';  // payload: f64 build seconds
inline constexpr char kTagResult = 'R'; // payload: encode_result()
// A plugin's log message, said in the worker: the parent logs it, so that the parent alone
// writes to the terminal and a message said in many workers is said once (plugin_messages.h).
inline constexpr char kTagLog = 'L'; // payload: i32 level, then the text
inline constexpr char kGo = 'g';     // the parent's one-byte "measure now"

std::string encode_frame(char tag, const std::string& payload);
std::string encode_built(double build_seconds);
std::string encode_result(const MeasureResult& r);
std::string encode_log(int level, std::string_view message);
// Removes and returns the first complete frame of `buffer` (tag, payload), if there is one.
std::optional<std::pair<char, std::string>> take_frame(std::string& buffer);
double decode_built(const std::string& payload);
// Throws std::runtime_error for a malformed payload.
MeasureResult decode_result(const std::string& payload);
// Throws std::runtime_error for a malformed payload.
std::pair<int, std::string> decode_log(const std::string& payload);

} // namespace mt::measure_detail
