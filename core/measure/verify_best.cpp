// Re-measuring the fastest records (see verify_best.h).
#include "core/measure/verify_best.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>

#include <spdlog/spdlog.h>

#include "core/database/database.h"

namespace mt {

namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v)
    s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

} // namespace

namespace {

// Measures `records` again (rounds in fresh workers) and appends the times; fills `out`.
void remeasure(Database& db, Measurer& measurer, const Reference& ref, const Function& workload,
               const std::vector<TuningRecord>& records, int rounds,
               const std::function<bool()>& stopped, std::vector<VerifiedRecord>& out) {
  std::vector<Function> funcs;
  std::vector<VerifiedRecord> verified;
  for (const TuningRecord& r : records) {
    VerifiedRecord v;
    v.record_id = r.id;
    v.recorded_seconds = r.mean_secs();
    try {
      funcs.push_back(replay(r, workload));
    } catch (const std::exception& e) {
      // A record that no longer replays cannot be trusted either; say so and go on.
      spdlog::warn("record {} does not replay on its workload, not measured again: {}", r.id,
                   e.what());
      continue;
    }
    verified.push_back(std::move(v));
  }
  std::vector<std::vector<double>> new_secs(funcs.size());
  for (int round = 0; round < rounds && !funcs.empty() && !stopped(); ++round) {
    std::vector<size_t> order(funcs.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = round % 2 ? order.size() - 1 - i : i;
    std::vector<Function> batch;
    for (size_t i : order)
      batch.push_back(funcs[i]);
    std::vector<MeasureResult> results = measurer.measure(ref, batch);
    for (size_t k = 0; k < results.size(); ++k) {
      VerifiedRecord& v = verified[order[k]];
      const MeasureResult& r = results[k];
      if (!r.ok() || r.run_secs.empty()) {
        if (!stopped())
          v.error = std::string(to_string(r.status)) + (r.error.empty() ? "" : ": " + r.error);
        continue;
      }
      v.round_seconds.push_back(mean(r.run_secs));
      new_secs[order[k]].insert(new_secs[order[k]].end(), r.run_secs.begin(), r.run_secs.end());
    }
  }
  for (size_t i = 0; i < verified.size(); ++i) {
    VerifiedRecord& v = verified[i];
    if (!v.error.empty())
      spdlog::warn("record {} failed when measured again: {}", v.record_id, v.error);
    if (!v.round_seconds.empty()) {
      try {
        v.mean_seconds = db.append_run_secs(v.record_id, new_secs[i]).mean_secs();
      } catch (const std::exception& e) {
        spdlog::warn("the new run times of record {} could not be stored: {}", v.record_id,
                     e.what());
      }
    }
    out.push_back(std::move(v));
  }
}

} // namespace

namespace {

size_t records_per_verified(const VerifyOptions& options) {
  return std::max<size_t>(1, options.records_per_verified);
}

} // namespace

size_t records_to_verify(size_t successful, const VerifyOptions& options) {
  if (options.top == 0 || successful == 0) return 0;
  const size_t per = records_per_verified(options);
  return std::clamp<size_t>((successful + per - 1) / per, 1, options.top);
}

VerifyResult verify_best(Database& db, Measurer& measurer, const Reference& ref,
                         const Function& workload, int64_t workload_id, const std::string& target,
                         const VerifyOptions& options, const std::atomic<bool>* stop,
                         const std::set<int64_t>* measured_again) {
  VerifyResult out;
  if (options.top == 0 || options.rounds <= 0) return out;
  std::function<bool()> stopped = [&] { return stop && stop->load(); };
  // Counted up to the most that can matter (top records per verified one); the first pass
  // takes its records from the same read.
  const size_t per = records_per_verified(options);
  std::vector<TuningRecord> fastest =
      db.top_k(workload_id, target, options.top > SIZE_MAX / per ? SIZE_MAX : options.top * per);
  const size_t count = records_to_verify(fastest.size(), options);
  if (count == 0) return out;
  fastest.resize(count);
  // Measured again, a lucky record falls back and an unmeasured one may become the fastest
  // by its single lucky time: passes go on until the `count` fastest have all been measured
  // again (at most a few passes; each measures only the newcomers).
  std::set<int64_t> done;
  if (measured_again) done = *measured_again;
  for (int pass = 0; pass < 4 && !stopped(); ++pass) {
    if (pass > 0) fastest = db.top_k(workload_id, target, count);
    std::vector<TuningRecord> fresh;
    for (TuningRecord& r : fastest)
      if (!done.count(r.id)) fresh.push_back(std::move(r));
    if (fresh.empty()) break;
    for (const TuningRecord& r : fresh)
      done.insert(r.id);
    remeasure(db, measurer, ref, workload, fresh, options.rounds, stopped, out.records);
  }
  // Still a newcomer at the top after the passes (a long tail of near-equal records): it alone
  // is measured again, so that the best named is never a single lucky time. Up to 12 times: on
  // a loaded machine the new times of records measured again can be twice their first, and a
  // chain of ordinary records then takes the top one after another (with 4, a CI run ended on
  // one never measured again).
  for (int extra = 0; extra < 12 && !stopped(); ++extra) {
    std::vector<TuningRecord> top = db.top_k(workload_id, target, 1);
    if (top.empty() || done.count(top[0].id)) break;
    done.insert(top[0].id);
    remeasure(db, measurer, ref, workload, top, options.rounds, stopped, out.records);
  }
  out.interrupted = stopped();
  // The best: the database's fastest, if it was measured again (it is, unless stopped or every
  // re-measurement of it failed).
  std::vector<TuningRecord> best = db.top_k(workload_id, target, 1);
  if (best.empty()) return out;
  bool confirmed = measured_again && measured_again->count(best[0].id);
  for (const VerifiedRecord& v : out.records)
    confirmed = confirmed || (v.record_id == best[0].id && std::isfinite(v.mean_seconds));
  if (confirmed) {
    out.best_record_id = best[0].id;
    out.best_seconds = best[0].mean_secs();
  }
  return out;
}

} // namespace mt
