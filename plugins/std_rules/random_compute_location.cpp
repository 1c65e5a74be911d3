// RandomComputeLocation: a producer that is neither inlined nor tiled and still owns a loop
// nest at the root is moved under a loop of its consumers chosen by sample_compute_location
// (or left at the root, or inlined -- the sampled choices; never inlined when that would
// compute a costly math call once per consumer, see inlining_recomputes_math). For a block
// marked by AddRFactor the same is done for its producer, the rfactor block. A sampled location
// that the schedule refuses is re-drawn a few times; if none works the block stays where it is.
//
// Configuration: {"attempts": 4}.
#include <optional>

#include "annotation_keys.hpp"
#include "block_analysis.hpp"
#include "config.hpp"
#include "std_components.hpp"

namespace mt::std_rules {

namespace {

using sdk::BlockRV;
using sdk::LoopRV;
using sdk::Schedule;

class RandomComputeLocation : public sdk::ScheduleRule {
public:
  explicit RandomComputeLocation(std::string_view text) {
    Config cfg("std.RandomComputeLocation", text);
    cfg.allow_only({"attempts"});
    attempts_ = static_cast<int>(cfg.get_int("attempts", 4));
  }

  std::vector<Schedule> apply(Schedule& sch, BlockRV block) override {
    if (!sch.valid(block)) return {sch};
    if (int_block_annotation(sch, block, keys::kRandomComputeProducer).value_or(0) != 0) {
      Schedule s = sch;
      for (BlockRV producer : s.get_producers(block))
        s = place(s, producer);
      return {s};
    }
    return {place(sch, block)};
  }

private:
  // Whether `block` may move: a root nest of its own, untiled, unbound, not an output, with
  // consumers. Read from the function, not with recorded lookups (see block_analysis.hpp).
  static bool movable(const Schedule& sch, BlockRV block) {
    if (block_annotation(sch, block, keys::kTilingStructure)) return false;
    if (writes_param(sch, block)) return false;
    LoopTree tree(sch);
    std::string name = sch.name_of(block);
    int root = tree.root_item_of(name);
    if (root < 0) return false;
    std::vector<std::string> together =
        tree.blocks_in(tree.root_items()[static_cast<size_t>(root)]);
    if (together.size() != 1) return false;
    std::vector<sdk::StmtRef> loops = tree.loops_of(name);
    if (loops.empty()) return false;
    for (const sdk::StmtRef& l : loops)
      if (l.for_kind() != sdk::ForKind::Serial) return false;
    // Consumers: some other block reads what this one writes.
    return !tree.readers_of(sch.writes(block), name).empty();
  }

  // Tries a few sampled locations, each on a copy; returns the first that works, else `sch`.
  Schedule place(const Schedule& sch, BlockRV block) const {
    if (!sch.valid(block) || !movable(sch, block)) return sch;
    // A copy's random stream is forked from its origin's current state, without advancing it:
    // copies of one schedule draw alike, so each attempt copies the previous (clean) copy.
    Schedule origin = sch;
    std::optional<bool> recomputes; // asked once, and only when "inline" is drawn
    for (int i = 0; i < attempts_; ++i) {
      origin = origin.copy();
      Schedule s = origin.copy();
      try {
        LoopRV at = s.sample_compute_location(block);
        // Inlined into several consumers, an exp (say) would be computed once per consumer: the
        // reason AutoInline kept the block (see auto_inline.cpp); draw again.
        if (at.is_inlined()) {
          if (!recomputes) recomputes = inlining_recomputes_math(sch, block);
          if (*recomputes) continue;
        }
        s.compute_at(block, at);
        return s;
      } catch (const sdk::ScheduleError&) {
      }
    }
    return sch;
  }

  int attempts_ = 4;
};

} // namespace

void register_random_compute_location(sdk::Registry& r) {
  r.add<RandomComputeLocation>("std.RandomComputeLocation",
                               "compute a producer at a sampled loop of its consumers");
}

} // namespace mt::std_rules
