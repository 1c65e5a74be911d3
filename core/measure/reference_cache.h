// On-disk cache of reference results (Reference, measure.h). The reference interpreter takes
// close to a minute for a large workload, and every `metatune tune` (also a resumed one, or
// one of the same workload inside another model) and every `metatune replay` would otherwise
// recompute the same outputs. A cache file holds only the expected outputs: the inputs are
// regenerated from the seed (cheap), and a checksum of them in the file makes sure they are
// still the ones the outputs were computed from. A file that cannot be trusted is never used:
// it is reported, recomputed and overwritten; a cache that cannot be written never stops the
// caller. File format and key: docs/tuning.md ("Reference cache").
#pragma once

#include <cstdint>
#include <string>

#include "core/ir/function.h"
#include "core/measure/measure.h"

namespace mt {

// Part of every file name and header. Bump it when the layout changes, and also when the
// interpreter or the input generation would now give other results than files written before
// (cached outputs of a fixed interpreter bug would otherwise live on).
inline constexpr uint32_t kReferenceCacheVersion = 1;

// $METATUNE_CACHE_DIR, else $XDG_CACHE_HOME/metatune, else $HOME/.cache/metatune (variables
// set but empty count as unset), each followed by "/reference". Empty (no cache) when none is
// set.
std::string default_reference_cache_dir();

// Where the reference of (workload, seed) is kept under `cache_dir`:
// "<structural hash, 16 hex digits>-s<seed>-v<version>.mtref". The structural hash ignores
// the function's and the buffers' names, so the same computation shares one file.
// With an evaluator (Reference::Evaluator) its name is part of the key:
// "<hash>-s<seed>-<name>-v<version>.mtref".
std::string reference_cache_file(const std::string& cache_dir, const Function& workload,
                                 uint64_t seed, const std::string& evaluator = "");

// What load_or_compute_reference did.
struct ReferenceCacheInfo {
  bool from_cache = false;   // loaded, not computed
  bool stored = false;       // computed and written to `file`
  std::string file;          // the cache file; empty when the cache is disabled
  std::string load_problem;  // why an existing file was not used; empty otherwise
  std::string store_problem; // why the computed reference could not be written
  double seconds = 0;        // spent in this call (loading, or computing and storing)
};

// The reference of `workload` for `seed`, bit-identical to Reference::compute(workload, seed,
// threads): loaded from `cache_dir` when a valid file is there, else computed and written there
// (atomically: a temporary file in the same directory renamed into place, so concurrent
// runs never see half a file). An empty `cache_dir` disables the cache. Problems with the
// cache are logged as warnings naming the file and the reason, never thrown. A loaded
// reference's compute_seconds is the interpreter time of the run that wrote the file.
// With `evaluator`, the outputs are computed by it instead (Reference::compute_with) and kept
// under its own key.
Reference load_or_compute_reference(const Function& workload, uint64_t seed,
                                    const std::string& cache_dir, int threads = 0,
                                    ReferenceCacheInfo* info = nullptr,
                                    const Reference::Evaluator* evaluator = nullptr);

// The reference before interpretation: inputs random exactly as Reference::compute makes
// them, outputs filled as fresh_args() fills them. Defined in reference.cpp, next to
// Reference::compute, which starts from it.
Reference reference_inputs(const Function& workload, uint64_t seed);

} // namespace mt
