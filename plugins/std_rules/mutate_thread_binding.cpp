// MutateThreadBinding (GPU): re-chooses a sampled thread count -- a sample_categorical whose
// value splits a loop whose part is then bound to threadIdx.x (CrossThreadReduction,
// AutoBind) -- among its other candidates. Default probability: 0.02 (GPU).
#include <algorithm>

#include "categorical_mutation.hpp"
#include "config.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

class MutateThreadBinding : public sdk::Mutator {
public:
  explicit MutateThreadBinding(std::string_view text) {
    Config("std.MutateThreadBinding", text).allow_only({});
  }

  std::optional<sdk::Trace> apply(const sdk::Trace& trace, sdk::Rng& rng) override {
    TraceView view(trace);
    std::vector<size_t> sites;
    for (size_t i = 0; i < view.size(); ++i) {
      if (view.kind(i) != "bind" ||
          view.attr_string(i, 0) != std::optional<std::string>("threadIdx.x"))
        continue;
      std::optional<std::string> loop = view.input_var(i, 0);
      if (!loop) continue;
      std::optional<size_t> split = view.defining(*loop);
      if (!split || view.kind(*split) != "split") continue;
      for (size_t k = 1; k < view.num_inputs(*split); ++k) {
        std::optional<std::string> factor = view.input_var(*split, k);
        if (!factor) continue;
        std::optional<size_t> def = view.defining(*factor);
        if (def && view.kind(*def) == "sample_categorical" &&
            std::find(sites.begin(), sites.end(), *def) == sites.end())
          sites.push_back(*def);
      }
    }
    return mutate_categorical(trace, view, sites, rng);
  }
};

} // namespace

void register_mutate_thread_binding(sdk::Registry& r) {
  r.add<MutateThreadBinding>("std.MutateThreadBinding",
                             "GPU: re-choose a sampled thread count (default p = 0.02)");
}

} // namespace mt::std_rules
