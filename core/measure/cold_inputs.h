// Cold inputs: timing a kernel the way a model runs it. In a model every layer has weights of
// its own, and between two calls of one kernel the weights of all the other layers pass
// through the caches: a decode step's matrix-vector products read their weights from memory.
// Timed the usual way -- one set of arguments, called again and again -- the same kernels read
// them from the cache, every schedule of a memory-bound kernel looks alike, and the search
// picks one that streams memory badly (a Llama decode step's linears: two weight rows at a time
// where eight keep more of the memory bandwidth busy).
//
// ColdInputs holds copies of a workload's read-only arguments spread over more memory than the
// last-level cache holds; the timed calls take the next copy each time, so each call finds its
// inputs gone from the caches. The outputs are one set, shared by every call: in a model they
// go to buffers that were just used, and are hot.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PluginModule;
struct Reference;

// The cold-inputs policy "memory-bound" (TuneOptions::cold_inputs): the workloads of fewer
// than this many flops per byte of input -- a decode step's matrix-vector products (0.5),
// not a 128-token prompt's matrix products (about 60).
inline constexpr double kColdInputsFlopsPerByte = 4;
// Whether `workload`, of `flops` per call, is one of those.
bool memory_bound(const Function& workload, double flops);

// Which tasks a run times on cold inputs (TuneOptions::cold_inputs, "auto" resolved). Kept in
// a database as its measured_inputs setting, in to_string's words.
enum class ColdPolicy { off, on, memory_bound };
const char* to_string(ColdPolicy p); // "off", "on", "memory-bound"
std::optional<ColdPolicy> parse_cold_policy(const std::string& s);
// The policy of a database whose measured_inputs setting is `setting` (none: an empty
// database, off). Throws std::runtime_error naming `db_path` for a value this metatune does not
// know (a database of a newer one): its times would be taken for hot ones.
ColdPolicy cold_policy_of(const std::optional<std::string>& setting, const std::string& db_path);
// Whether a workload is timed on cold inputs under `policy`.
bool cold_inputs_under(ColdPolicy policy, const Function& workload, double flops);

// Twice the last-level cache of this machine (sysfs), at least 64 MiB; 256 MiB when the
// cache size is unknown.
size_t default_cold_span_bytes();

class ColdInputs {
public:
  // Copies of the arguments that are not outputs (`is_output[i]` false), as many as span at
  // least `span_bytes` together (0: default_cold_span_bytes()), at least 2 and at most 4096
  // -- fewer where they would take more than a quarter of the machine's memory.
  ColdInputs(const std::vector<NDArray>& args, const std::vector<bool>& is_output,
             size_t span_bytes = 0);
  ColdInputs(const ColdInputs&) = delete;
  ColdInputs& operator=(const ColdInputs&) = delete;

  size_t copies() const { return copies_.size(); }
  size_t input_bytes() const { return input_bytes_; } // of one copy
  // Whether these copies were made of `args` (same shapes, dtypes and input values).
  bool holds(const std::vector<NDArray>& args, const std::vector<bool>& is_output) const;

  // The arguments of call `i`: copy i % copies() of each input, `outputs`' own array for each
  // output (`outputs` is a full argument list; its inputs are not used).
  std::vector<NDArray*> arguments(size_t i, std::vector<NDArray>& outputs);

  // Seconds per call, one entry per repeat: each repeat calls the kernel until
  // `min_repeat_seconds` have passed (at least once), every call on the next copy.
  std::vector<double> time(const PluginModule& module, std::vector<NDArray>& outputs, int repeats,
                           double min_repeat_seconds);

private:
  struct FreeDeleter {
    void operator()(unsigned char* p) const;
  };
  std::unique_ptr<unsigned char, FreeDeleter> storage_;
  std::vector<bool> is_output_;
  std::vector<std::vector<NDArray>> copies_; // per copy, one view per input argument
  size_t input_bytes_ = 0;
  size_t next_ = 0; // the copy the next timed call takes
};

// The cold copies of `ref`'s inputs for a measurement, made once and kept until a measurement
// of another workload asks (one set at a time: they are large). Made by the parent before it
// forks the workers, which inherit them and only read them. Null -- the workload is timed
// hot, with a warning -- when two copies of its inputs would take more than a quarter of the
// machine's memory.
std::shared_ptr<ColdInputs> cold_inputs_for(const Reference& ref, size_t span_bytes);
// Frees the copies kept by cold_inputs_for (a tuning run calls it at its end).
void release_cold_inputs();

} // namespace mt
