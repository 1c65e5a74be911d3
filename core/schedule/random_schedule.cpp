#include "core/schedule/random_schedule.h"

#include <algorithm>

#include "core/schedule/analysis.h"
#include "core/schedule/trace.h"

namespace mt {

namespace {

template <typename T> const T& pick(RandomEngine& r, const std::vector<T>& v) {
  return v[static_cast<size_t>(r.uniform_int(0, static_cast<int64_t>(v.size())))];
}

// One attempt; returns the primitive's name, or throws ScheduleError if refused.
std::string try_one(Schedule& sch) {
  RandomEngine& r = sch.rng();
  std::vector<BlockRV> blocks = sch.all_blocks();
  if (blocks.empty()) return "none";
  BlockRV b = pick(r, blocks);
  std::vector<LoopRV> loops = sch.get_loops(b);
  static const std::vector<std::pair<const char*, double>> kinds = {
      {"split", 6},          {"fuse", 2},           {"reorder", 3},
      {"parallel", 1.5},     {"vectorize", 1.5},    {"unroll", 1},
      {"compute_inline", 2}, {"reverse_compute_inline", 1}, {"compute_at", 3},
      {"reverse_compute_at", 2}, {"sample_compute_location", 2}, {"cache_read", 1.5},
      {"cache_write", 1.5},  {"decompose_reduction", 1.5}, {"rfactor", 1.5},
      {"annotate", 0.5},     {"set_scope", 0.3},    {"storage_align", 0.3},
      {"bind", 0.3},         {"transform_layout", 0.5}};
  std::vector<double> w;
  for (auto& k : kinds) w.push_back(k.second);
  std::string kind = kinds[static_cast<size_t>(r.categorical(w))].first;
  auto any_loop = [&]() -> LoopRV {
    if (loops.empty()) throw ScheduleError(kind, "", "block has no loops");
    return pick(r, loops);
  };
  if (kind == "split") {
    LoopRV l = any_loop();
    int64_t extent = sch.get(l).extent;
    if (r.uniform_int(0, 3) == 0) {
      // Imperfect split exercises predicates.
      int64_t f = r.uniform_int(1, std::max<int64_t>(2, extent + 1));
      sch.split(l, {int64_t(-1), f});
    } else {
      int n = static_cast<int>(r.uniform_int(2, 4));
      auto tiles = sch.sample_perfect_tile(l, n, 16);
      std::vector<Factor> f(tiles.begin(), tiles.end());
      sch.split(l, f);
    }
  } else if (kind == "fuse") {
    if (loops.size() < 2) throw ScheduleError(kind, "", "need two loops");
    size_t i = static_cast<size_t>(r.uniform_int(0, static_cast<int64_t>(loops.size()) - 1));
    sch.fuse({loops[i], loops[i + 1]});
  } else if (kind == "reorder") {
    if (loops.size() < 2) throw ScheduleError(kind, "", "need two loops");
    std::vector<LoopRV> sub = loops;
    for (size_t i = sub.size(); i > 1; --i)
      std::swap(sub[i - 1], sub[static_cast<size_t>(r.uniform_int(0, static_cast<int64_t>(i)))]);
    sub.resize(static_cast<size_t>(r.uniform_int(2, static_cast<int64_t>(sub.size()) + 1)));
    sch.reorder(sub);
  } else if (kind == "parallel") {
    sch.parallel(any_loop());
  } else if (kind == "vectorize") {
    sch.vectorize(any_loop());
  } else if (kind == "unroll") {
    sch.unroll(any_loop());
  } else if (kind == "bind") {
    static const std::vector<std::string> axes = {"blockIdx.x", "threadIdx.x", "vthread"};
    sch.bind(any_loop(), pick(r, axes));
  } else if (kind == "annotate") {
    auto v = sch.sample_categorical({0, 16, 64, 512}, {0.25, 0.25, 0.25, 0.25});
    if (r.uniform_int(0, 2)) sch.annotate(b, "meta_schedule.unroll_explicit", v);
    else sch.annotate(any_loop(), "pragma_auto_unroll_max_step", v);
  } else if (kind == "compute_inline") {
    sch.compute_inline(b);
  } else if (kind == "reverse_compute_inline") {
    sch.reverse_compute_inline(b);
  } else if (kind == "compute_at") {
    auto consumers = sch.get_consumers(b);
    if (consumers.empty()) throw ScheduleError(kind, "", "no consumers");
    auto cl = sch.get_loops(pick(r, consumers));
    if (cl.empty()) throw ScheduleError(kind, "", "consumer has no loops");
    sch.compute_at(b, pick(r, cl));
  } else if (kind == "reverse_compute_at") {
    auto producers = sch.get_producers(b);
    if (producers.empty()) throw ScheduleError(kind, "", "no producers");
    auto pl = sch.get_loops(pick(r, producers));
    if (pl.empty()) throw ScheduleError(kind, "", "producer has no loops");
    sch.reverse_compute_at(b, pick(r, pl));
  } else if (kind == "sample_compute_location") {
    LoopRV l = sch.sample_compute_location(b);
    sch.compute_at(b, l);
  } else if (kind == "cache_read") {
    auto reads = block_reads(sch.get(b));
    if (reads.empty()) throw ScheduleError(kind, "", "no reads");
    static const std::vector<std::string> scopes = {"local", "shared", "cache", "global"};
    sch.cache_read(b, static_cast<int>(r.uniform_int(0, static_cast<int64_t>(reads.size()))),
                   pick(r, scopes));
  } else if (kind == "cache_write") {
    static const std::vector<std::string> scopes = {"local", "shared", "cache"};
    sch.cache_write(b, 0, pick(r, scopes));
  } else if (kind == "set_scope") {
    sch.set_scope(b, 0, "cache");
  } else if (kind == "storage_align") {
    sch.storage_align(b, 0, 0, 16, static_cast<int>(r.uniform_int(0, 16)));
  } else if (kind == "transform_layout") {
    // A random permutation of the block's first write buffer (refused for arguments).
    auto writes = block_writes(sch.get(b));
    if (writes.empty()) throw ScheduleError(kind, "", "no writes");
    std::vector<int64_t> perm;
    for (size_t d = 0; d < writes[0]->shape.size(); ++d) perm.push_back(static_cast<int64_t>(d));
    for (size_t d = perm.size(); d > 1; --d)
      std::swap(perm[d - 1], perm[static_cast<size_t>(r.uniform_int(0, static_cast<int64_t>(d)))]);
    sch.transform_layout(b, 0, perm);
  } else if (kind == "decompose_reduction") {
    sch.decompose_reduction(b, any_loop());
  } else if (kind == "rfactor") {
    sch.rfactor(any_loop(), 0);
  }
  return kind;
}

} // namespace

RandomScheduleStats apply_random_primitives(Schedule& sch, int steps) {
  RandomScheduleStats st;
  for (int i = 0; i < steps; ++i) {
    try {
      std::string k = try_one(sch);
      ++st.applied;
      ++st.applied_by_kind[k];
    } catch (const ScheduleError&) {
      ++st.refused;
    }
  }
  return st;
}

} // namespace mt
