// A metatune plugin with one schedule rule. Rename the plugin, the class and the component
// name ("vendor.Name"); add more components with more registry.add<...>() lines.
#include <metatune/sdk.hpp>

namespace {

// Tiles the innermost loop of every block by a sampled factor and vectorizes the inner part.
class TileAndVectorizeInnermost : public mt::sdk::ScheduleRule {
public:
  // Optional: a rule can take configuration text (JSON by convention) from the host.
  explicit TileAndVectorizeInnermost(std::string_view config) {
    if (!config.empty()) max_vector_ = std::stoi(std::string(config));
  }

  std::vector<mt::sdk::Schedule> apply(mt::sdk::Schedule& sch, mt::sdk::BlockRV block) override {
    std::vector<mt::sdk::LoopRV> loops = sch.get_loops(block);
    if (loops.empty()) return {sch}; // nothing to do: keep the schedule as it is
    // Only spatial innermost loops can be vectorized: ask the block.
    std::vector<mt::sdk::IterVarInfo> ivs = sch.iter_vars(block);
    if (!ivs.empty() && ivs.back().kind == mt::sdk::IterKind::Reduce) return {sch};

    // Fork: keep the untouched schedule, and add a tiled copy whose tile size is a sampled
    // decision the search can later mutate.
    mt::sdk::Schedule tiled = sch.copy();
    try {
      std::vector<mt::sdk::ExprRV> f = tiled.sample_perfect_tile(loops.back(), 2, max_vector_);
      std::vector<mt::sdk::LoopRV> parts = tiled.split(loops.back(), {f[0], f[1]});
      tiled.vectorize(parts[1]);
    } catch (const mt::sdk::ScheduleError&) {
      return {sch}; // not legal here: the copy is dropped
    }
    return {sch, tiled};
  }

private:
  int max_vector_ = 16;
};

} // namespace

METATUNE_PLUGIN("my_plugin", "0.1.0", "An example metatune plugin") {
  registry.add<TileAndVectorizeInnermost>("example.TileAndVectorizeInnermost",
                                          "tiles the innermost loop and vectorizes the tile");
}
