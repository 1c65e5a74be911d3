// The end of `metatune model tune`: every task that has both a tuned kernel and a library
// implementation, the two timed where the model runs them. Alone in the tuner a tuned kernel
// can be the faster and in the model the slower -- the model's weights come from memory, and a
// kernel that reads its weight rows a few at a time waits on them where oneDNN's packing
// streams them (docs/tuning.md, "Known gap") -- so the model with library kernels and the
// model with tuned kernels run in alternating profiled rounds, and each task's faster one
// (per-call medians) is stored as the database's model choice, which the `best` policy
// follows (Database::model_choice).
#pragma once

#include <string>
#include <vector>

#include "hosts/cli/model_source.h"

namespace mt {
class Database;
}

namespace mt::cli {

struct ModelChoiceSummary {
  size_t compared = 0;     // tasks timed both ways
  size_t tuned = 0;        // of those, the tuned kernel faster in the model
  double best_seconds = 0; // the model with each task's faster kernel, summed per-task medians
  double library_seconds = 0, tuned_seconds = 0; // the two models, likewise

  // Two comparisons together (the buckets of one model).
  ModelChoiceSummary& operator+=(const ModelChoiceSummary& o) {
    compared += o.compared, tuned += o.tuned, best_seconds += o.best_seconds;
    library_seconds += o.library_seconds, tuned_seconds += o.tuned_seconds;
    return *this;
  }
};

// Times both models of `m` in `rounds` alternating profiled rounds and stores a choice per
// compared task in `db`, under the selection's choice key (KernelSelector::choice_key: with
// `fpmath` "bf16" the choices of the bf16 kernels, apart from the f32 ones). Nothing to
// compare (no library, no tuned record): a zero summary.
ModelChoiceSummary choose_in_model(const LoadedModel& m, Database& db, const std::string& target,
                                   const std::vector<std::string>& libraries,
                                   const std::string& fpmath, int rounds, bool quiet);

// The same for what generation runs: per cache capacity, the model's prompt and a few
// decode steps with the library's and with the tuned kernels (Generator, so the library's
// kernels take their weights packed as they do in `model generate`), alternating; the
// choices of the decode steps' tasks (and of the prefill's own) are stored.
ModelChoiceSummary choose_in_generation(const LoadedModel& m, Database& db,
                                        const std::string& target,
                                        const std::vector<std::string>& libraries,
                                        const std::string& fpmath, int rounds,
                                        const std::vector<int64_t>& capacities, bool quiet);

} // namespace mt::cli
