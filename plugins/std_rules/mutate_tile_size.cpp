// MutateTileSize: picks a sample_perfect_tile decision and moves one prime factor from one
// level to another, keeping the product (a perfect tiling still) and the innermost level
// within the instruction's max_innermost_factor. A level whose loop a later draw splits again
// (the GPU tilings' bounded levels) keeps its factor. Default probability: 0.9 (CPU and GPU).
#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"
#include "trace_view.hpp"

namespace mt::std_rules {

namespace {

class MutateTileSize : public sdk::Mutator {
public:
  explicit MutateTileSize(std::string_view text) {
    Config("std.MutateTileSize", text).allow_only({});
  }

  std::optional<sdk::Trace> apply(const sdk::Trace& trace, sdk::Rng& rng) override {
    struct Tile {
      size_t index;
      std::vector<int64_t> factors;
      int64_t max_innermost;
    };
    std::vector<Tile> tiles;
    std::optional<TraceView> view;
    for (size_t i = 0, n = trace.size(); i < n; ++i) {
      if (trace.kind(i) != "sample_perfect_tile") continue;
      std::optional<std::vector<int64_t>> d = trace.decision(i);
      if (!d || d->size() < 2) continue;
      bool movable = false;
      for (int64_t f : *d)
        movable = movable || f > 1;
      if (!movable) continue;
      int64_t max_inner = trace.num_attrs(i) >= 2 ? trace.attr_int(i, 1) : 0;
      tiles.push_back({i, *d, max_inner});
    }
    if (tiles.empty()) return std::nullopt;
    // A draw can be infeasible (every move would break the innermost limit): draw again.
    for (int attempt = 0; attempt < 16; ++attempt) {
      const Tile& t = tiles[pick(rng, tiles.size())];
      // The JSON view only once a draw is picked: most traces are mutated once per call.
      if (!view) view.emplace(trace);
      std::vector<bool> pinned = pinned_levels(*view, t.index, t.factors.size());
      std::vector<size_t> sources, free;
      for (size_t l = 0; l < t.factors.size(); ++l) {
        if (pinned[l]) continue;
        free.push_back(l);
        if (t.factors[l] > 1) sources.push_back(l);
      }
      if (sources.empty() || free.size() < 2) continue;
      size_t src = sources[pick(rng, sources.size())];
      std::vector<int64_t> primes = prime_factors(t.factors[src]);
      int64_t p = primes[pick(rng, primes.size())];
      size_t dst = free[pick(rng, free.size() - 1)];
      if (dst == src) dst = free.back();
      std::vector<int64_t> moved = t.factors;
      moved[src] /= p;
      moved[dst] *= p;
      if (t.max_innermost > 0 && moved.back() > t.max_innermost) continue;
      return trace.with_decision(t.index, moved);
    }
    return std::nullopt;
  }

private:
  // The levels of draw `i` whose loop (an output of the split its factors feed) is split again
  // by a later sample_perfect_tile, as the GPU tilings draw bounded levels: a factor moved
  // into or out of such a level changes that loop's extent, and the later draw's decision no
  // longer tiles it -- the mutant would not replay.
  static std::vector<bool> pinned_levels(const TraceView& view, size_t i, size_t levels) {
    std::vector<bool> pinned(levels, false);
    std::vector<std::string> factors = view.output_vars(i);
    if (factors.empty() || factors[0].empty()) return pinned;
    for (size_t split : view.users(factors[0])) {
      if (view.kind(split) != "split") continue;
      std::vector<std::string> loops = view.output_vars(split);
      for (size_t l = 0; l < loops.size() && l < levels; ++l) {
        if (loops[l].empty()) continue;
        for (size_t u : view.users(loops[l]))
          if (u > split && view.kind(u) == "sample_perfect_tile") pinned[l] = true;
      }
    }
    return pinned;
  }

  static size_t pick(sdk::Rng& rng, size_t n) {
    return static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(n)));
  }
};

} // namespace

void register_mutate_tile_size(sdk::Registry& r) {
  r.add<MutateTileSize>("std.MutateTileSize",
                        "move a prime factor between two tile levels (default p = 0.9)");
}

} // namespace mt::std_rules
