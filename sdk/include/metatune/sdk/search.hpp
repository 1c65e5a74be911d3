// Search strategies that search through the task's search context (plugin ABI 1.3): derive
// from SearchContextStrategy, register with Registry::add like any component. The context
// samples, replays and mutates candidates (in parallel on the host, each job seeded by its own
// seed, so results do not depend on the thread count), scores them with the task's cost model
// and counts statistics; the strategy decides what to ask for and what to hand out.
//
//   class Greedy : public mt::sdk::SearchContextStrategy {
//     void start(mt::sdk::SearchContext ctx) override { ctx_ = ctx; }
//     std::vector<mt::sdk::Candidate> next_batch(size_t n) override {
//       return ctx_.sample(rng_.seeds(n));   // refused slots are empty Candidates
//     }
//   };
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metatune/sdk/error.hpp"
#include "metatune/sdk/schedule.hpp"

namespace mt::sdk {

namespace detail {
inline void require_search_api() {
  if (!MT_HAS_FIELD(&api(), mt_host_api, candidate_list_push))
    throw Error(MT_ERROR_UNSUPPORTED,
                "this metatune host predates the search context (plugin ABI 1.3)");
}
} // namespace detail

// A candidate the host sampled: a post-processed schedule, the trace before post-processing
// (what mutators change), and the structural fingerprint duplicates are recognised by (equal for
// alpha-equivalent schedules within a run; not stable across versions). Copies share
// one host reference. An empty Candidate is a refused job.
class Candidate {
public:
  Candidate() = default;
  // Takes over a reference the host handed out.
  static Candidate adopt(mt_candidate* c) {
    Candidate out;
    if (c) out.c_.reset(c, [](mt_candidate* p) { api().candidate_release(p); });
    return out;
  }
  // A reference of our own to a candidate the host lent to a callback.
  static Candidate borrow(const mt_candidate* c) { return adopt(api().candidate_retain(c)); }
  explicit operator bool() const { return static_cast<bool>(c_); }
  const mt_candidate* get() const { return c_.get(); }
  uint64_t hash() const { return api().candidate_hash(c_.get()); }
  // The trace before post-processing (borrowed by the returned handle).
  Trace trace() const { return Trace::borrow(api().candidate_trace(c_.get())); }

private:
  std::shared_ptr<mt_candidate> c_;
};

// One task's search services. A cheap value: copies refer to the same host context, which
// lives as long as the strategy instance.
class SearchContext {
public:
  SearchContext() = default;
  explicit SearchContext(mt_search_context* ctx) : ctx_(ctx) { detail::require_search_api(); }

  size_t num_design_spaces() const { return api().search_num_design_spaces(ctx_); }
  size_t num_mutators() const { return api().search_num_mutators(ctx_); }
  double mutator_probability(size_t m) const { return api().search_mutator_probability(ctx_, m); }
  bool has_cost_model() const { return api().search_has_cost_model(ctx_) != 0; }
  uint64_t seed() const { return api().search_seed(ctx_); }

  // Records measured before the search started, best first: trace and mean seconds (+inf:
  // failed).
  size_t num_measured() const { return api().search_num_measured(ctx_); }
  std::pair<Trace, double> measured(size_t i) const {
    const mt_trace* t = nullptr;
    double s = 0;
    check(api().search_measured(ctx_, i, &t, &s));
    return {Trace::borrow(t), s};
  }

  // Fresh samples: one job per seed.
  std::vector<Candidate> sample(const std::vector<uint64_t>& seeds) {
    std::vector<mt_candidate*> out(seeds.size(), nullptr);
    check(api().search_sample(ctx_, seeds.data(), seeds.size(), out.data()));
    return adopt_all(out);
  }
  // Traces replayed with their decisions.
  std::vector<Candidate> replay(const std::vector<Trace>& traces,
                                const std::vector<uint64_t>& seeds) {
    std::vector<const mt_trace*> ts;
    for (const Trace& t : traces)
      ts.push_back(t.get());
    std::vector<mt_candidate*> out(traces.size(), nullptr);
    check(api().search_replay(ctx_, ts.data(), seeds.data(), std::min(ts.size(), seeds.size()),
                              out.data()));
    return adopt_all(out);
  }
  // parents[i] mutated by mutators[i], seeded by seeds[i].
  std::vector<Candidate> mutate(const std::vector<Candidate>& parents,
                                const std::vector<size_t>& mutators,
                                const std::vector<uint64_t>& seeds) {
    std::vector<const mt_candidate*> ps = raw(parents);
    size_t n = std::min({ps.size(), mutators.size(), seeds.size()});
    std::vector<mt_candidate*> out(n, nullptr);
    check(api().search_mutate(ctx_, ps.data(), mutators.data(), seeds.data(), n, out.data()));
    return adopt_all(out);
  }

  // The cost model's scores (higher = predicted faster); nullopt without a model or when it
  // failed (the host has counted why).
  std::optional<std::vector<double>> predict(const std::vector<Candidate>& cs) {
    std::vector<const mt_candidate*> ps = raw(cs);
    std::vector<double> s(ps.size(), 0.0);
    if (api().search_predict(ctx_, ps.data(), ps.size(), s.data()) != MT_OK) return std::nullopt;
    return s;
  }
  // Trains the cost model; false without a model or when it refused.
  bool update_cost_model(const std::vector<Candidate>& cs, const std::vector<double>& seconds) {
    std::vector<const mt_candidate*> ps = raw(cs);
    return api().search_update_cost_model(ctx_, ps.data(), std::min(ps.size(), seconds.size()),
                                          seconds.data()) == MT_OK;
  }

  // Statistics shown in the task's progress and diagnosis.
  void count(std::string_view statistic, size_t n = 1) {
    api().search_count(ctx_, to_mt_str(statistic), n);
  }
  void count_refusal(std::string_view source, std::string_view message) {
    api().search_count_refusal(ctx_, to_mt_str(source), to_mt_str(message));
  }

private:
  static std::vector<Candidate> adopt_all(const std::vector<mt_candidate*>& out) {
    std::vector<Candidate> cs;
    cs.reserve(out.size());
    for (mt_candidate* c : out)
      cs.push_back(Candidate::adopt(c));
    return cs;
  }
  static std::vector<const mt_candidate*> raw(const std::vector<Candidate>& cs) {
    std::vector<const mt_candidate*> ps;
    ps.reserve(cs.size());
    for (const Candidate& c : cs) {
      if (!c) throw Error(MT_ERROR_INVALID_ARGUMENT, "an empty (refused) candidate was passed");
      ps.push_back(c.get());
    }
    return ps;
  }
  mt_search_context* ctx_ = nullptr;
};

// A strategy's own deterministic random numbers (splitmix64): the same seed, the same
// choices, on every platform.
class Random {
public:
  explicit Random(uint64_t seed = 1) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform_real() { return static_cast<double>(next() >> 11) * 0x1.0p-53; } // [0, 1)
  // [lo, hi); lo when the range is empty.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo));
  }
  // An index drawn in proportion to the (non-negative) weights; uniform when they sum to 0.
  size_t categorical(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights)
      total += w > 0 ? w : 0;
    if (weights.empty()) return 0;
    if (!(total > 0))
      return static_cast<size_t>(uniform_int(0, static_cast<int64_t>(weights.size())));
    double x = uniform_real() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      double w = weights[i] > 0 ? weights[i] : 0;
      if (x < w) return i;
      x -= w;
    }
    return weights.size() - 1;
  }
  std::vector<uint64_t> seeds(size_t n) {
    std::vector<uint64_t> s(n);
    for (uint64_t& x : s)
      x = next();
    return s;
  }

private:
  uint64_t s_;
};

// Base class of ABI-1.3 search strategies.
class SearchContextStrategy {
public:
  virtual ~SearchContextStrategy() = default;
  virtual void initialize(const TuneContext& /*ctx*/) {}
  // Once per task, before the first next_batch.
  virtual void start(SearchContext ctx) = 0;
  // At most n candidates, none measured or proposed before; fewer when the space runs dry.
  virtual std::vector<Candidate> next_batch(size_t n) = 0;
  // The measured candidates of the last batch with their run times (+inf: failed).
  virtual void notify_measured(const std::vector<Candidate>& /*measured*/,
                               const std::vector<double>& /*run_seconds*/) {}
};

} // namespace mt::sdk
