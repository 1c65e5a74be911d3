// Shared by the cost-model tests: the plugins loaded once per test binary through the host
// (cost_models, std_rules, llvm_cpu), candidate schedules sampled from the std_rules design
// space of a library workload, their real run times from the LLVM CPU target (built in
// parallel, timed one at a time, in this process), and Spearman's rank correlation.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/schedule.h"
#include "core/search/design_space.h"
#include "core/workload/library.h"

namespace mt::cost_models_test {

inline PluginHost& host() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    std::vector<std::string> paths = {MT_COST_MODELS_PLUGIN, MT_STD_RULES_PLUGIN};
#ifdef MT_LLVM_CPU_PLUGIN
    paths.push_back(MT_LLVM_CPU_PLUGIN);
#endif
    for (const auto& path : paths) {
      const PluginRecord& r = p->load(path);
      if (!r.loaded()) throw std::runtime_error("plugin refused: " + r.message);
    }
    return p;
  }();
  return *h;
}

// The target the candidates are timed with: one thread, so that timings of different
// candidates on a shared machine disturb each other as little as possible.
inline std::unique_ptr<PluginTarget> make_target() {
  return host().create_target("llvm.cpu", R"({"num_threads": 1})");
}

// `count` candidates of `workload`: design spaces from the target's default rules, each
// candidate a trace of one space replayed with fresh decisions, then postprocessed.
inline std::vector<std::shared_ptr<Schedule>> sample_candidates(const Function& workload,
                                                                const PluginTarget& target,
                                                                size_t count, uint64_t seed) {
  TuneAttributes attrs{
      {"kind", std::string("llvm")}, {"num_cores", int64_t{1}}, {"vector_bytes", int64_t{32}}};
  std::vector<std::unique_ptr<PluginScheduleRule>> rules;
  for (const auto& n : target.default_components(ComponentKind::ScheduleRule)) {
    rules.push_back(host().create_schedule_rule(n));
    rules.back()->initialize(attrs);
  }
  std::vector<std::unique_ptr<PluginPostproc>> postprocs;
  for (const auto& n : target.default_components(ComponentKind::Postproc)) {
    postprocs.push_back(host().create_postproc(n));
    postprocs.back()->initialize(attrs);
  }
  auto spaces = generate_design_spaces(workload, rules, seed);
  if (spaces.empty()) throw std::runtime_error("no design space");
  std::vector<std::shared_ptr<Schedule>> out;
  for (uint64_t i = 0; out.size() < count && i < 20 * count; ++i) {
    std::shared_ptr<Schedule> c;
    const auto& space = spaces[i % spaces.size()];
    if (sample_candidate(workload, space->trace(), seed * 1000003 + i, false, postprocs, &c) ==
        SampleOutcome::Ok)
      out.push_back(std::move(c));
  }
  return out;
}

// Compiles every candidate, on two threads (one target instance each: an instance is used by
// one thread at a time); a candidate the target cannot build gets no module.
inline std::vector<std::unique_ptr<PluginModule>>
build_all(const std::vector<std::shared_ptr<Schedule>>& candidates) {
  std::vector<std::unique_ptr<PluginModule>> modules(candidates.size());
  const size_t workers = 2;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(workers);
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      try {
        auto target = make_target();
        for (size_t i = w; i < candidates.size(); i += workers) {
          try {
            modules[i] = target->build(candidates[i]->func());
          } catch (const PluginError& e) {
            std::printf("candidate %zu not built: %s\n", i, e.what());
          }
        }
      } catch (const std::exception& e) {
        errors[w] = e.what();
      }
    });
  for (auto& t : threads)
    t.join();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
  return modules;
}

// Best (minimum) seconds per call over three repeats, run in this process one at a time.
inline double measure(const PluginModule& module, std::vector<NDArray>& args) {
  std::vector<NDArray*> ptrs;
  for (auto& a : args)
    ptrs.push_back(&a);
  module.run(ptrs); // warm-up: page in the code and the data
  std::vector<double> t = module.time(ptrs, 3, 0.002);
  return *std::min_element(t.begin(), t.end());
}

inline std::vector<NDArray> random_args(const Function& f) {
  std::vector<NDArray> args;
  for (size_t i = 0; i < f.params.size(); ++i) {
    args.emplace_back(f.params[i]->dtype, f.params[i]->shape);
    args.back().fill_random(11 + i);
  }
  return args;
}

// Ranks (1-based; ties get their average rank).
inline std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]])
      ++j;
    for (size_t k = i; k <= j; ++k)
      r[idx[k]] = (static_cast<double>(i + j) / 2.0) + 1.0;
    i = j + 1;
  }
  return r;
}

// Spearman's rank correlation: Pearson's correlation of the ranks.
inline double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) throw std::invalid_argument("spearman: sizes");
  std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

} // namespace mt::cost_models_test
