// Compile time of tuning candidates: samples N candidates of a workload (matmul 1024^3 by
// default) from the design space of the LLVM target's default std rules, and reports
//  1. lowering + LLVM build per candidate in this process (median / mean / p90 seconds);
//  2. the Measurer (forked workers, parallel_builds = cores): candidates per second, including
//     one short timed run each (no reference check unless --check);
//  3. with --check, how long the reference interpreter takes for the workload.
// --build-only: the Measurer's workers build and run nothing (no warm-up, no repeat), which
// gives the throughput of the builder alone.
//
//   bench_compile_time [--spec SPEC] [-n N] [--threads T] [--check] [--skip-measurer]
//                      [--build-only]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/lower/lower.h"
#include "core/plugin/plugin_host.h"
#include "core/search/design_space.h"
#include "core/measure/measure.h"
#include "core/workload/library.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Stats {
  double median = 0, mean = 0, p90 = 0, max = 0;
};

Stats stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.p90 = v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(0.9 * v.size())) - 1)];
  s.max = v.back();
  return s;
}

void print_stats(const char* what, const std::vector<double>& v) {
  Stats s = stats(v);
  std::printf("  %-14s median %.3f s  mean %.3f s  p90 %.3f s  max %.3f s\n", what, s.median,
              s.mean, s.p90, s.max);
}

} // namespace

int main(int argc, char** argv) {
  std::string spec = "matmul(M=1024,N=1024,K=1024)";
  int n = 50, threads = 0;
  bool check = false, skip_measurer = false, build_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--spec")
      spec = value();
    else if (a == "-n")
      n = std::stoi(value());
    else if (a == "--threads")
      threads = std::stoi(value());
    else if (a == "--check")
      check = true;
    else if (a == "--skip-measurer")
      skip_measurer = true;
    else if (a == "--build-only")
      build_only = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--spec SPEC] [-n N] [--threads T] [--check] [--skip-measurer] "
                   "[--build-only]\n",
                   argv[0]);
      return 2;
    }
  }
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  mt::PluginHost host;
  for (const char* path : {METATUNE_LLVM_CPU_PLUGIN, METATUNE_STD_RULES_PLUGIN}) {
    const mt::PluginRecord& r = host.load(path);
    if (!r.loaded()) {
      std::fprintf(stderr, "plugin refused: %s\n", r.message.c_str());
      return 1;
    }
  }
  auto target =
      host.create_target("llvm.cpu", "{\"num_threads\": " + std::to_string(threads) + "}");
  auto desc = nlohmann::json::parse(target->describe_device());
  mt::TuneAttributes attrs{{"kind", desc["kind"].get<std::string>()},
                           {"num_cores", desc["num_cores"].get<int64_t>()},
                           {"vector_bytes", desc["vector_bytes"].get<int64_t>()}};
  std::vector<std::unique_ptr<mt::PluginScheduleRule>> rules;
  for (const auto& name : target->default_components(mt::ComponentKind::ScheduleRule)) {
    rules.push_back(host.create_schedule_rule(name));
    rules.back()->initialize(attrs);
  }
  std::vector<std::unique_ptr<mt::PluginPostproc>> postprocs;
  for (const auto& name : target->default_components(mt::ComponentKind::Postproc)) {
    postprocs.push_back(host.create_postproc(name));
    postprocs.back()->initialize(attrs);
  }

  mt::Function f = mt::make_workload(spec);
  std::printf("workload %s, target %s (%d threads, vector_bytes %lld)\n", spec.c_str(),
              desc["cpu"].get<std::string>().c_str(), threads,
              static_cast<long long>(desc["vector_bytes"].get<int64_t>()));

  auto t0 = Clock::now();
  auto spaces = mt::generate_design_spaces(f, rules, 1);
  double space_s = since(t0);
  std::vector<mt::Function> cands;
  std::vector<double> sample_s;
  for (uint64_t seed = 0; static_cast<int>(cands.size()) < n && seed < 20ull * n; ++seed) {
    std::shared_ptr<mt::Schedule> s;
    auto ts = Clock::now();
    if (mt::sample_candidate(f, spaces[seed % spaces.size()]->trace(), 1000 + seed, false,
                             postprocs, &s) == mt::SampleOutcome::Ok) {
      sample_s.push_back(since(ts));
      cands.push_back(s->func());
    }
  }
  std::printf("%zu design spaces in %.3f s; %zu candidates sampled\n", spaces.size(), space_s,
              cands.size());
  print_stats("sample+post", sample_s);

  std::vector<double> lower_s, build_s, total_s;
  for (const auto& c : cands) {
    auto tl = Clock::now();
    mt::Function lowered = mt::lower(c);
    lower_s.push_back(since(tl));
    auto tb = Clock::now();
    auto module = target->build(lowered);
    build_s.push_back(since(tb));
    total_s.push_back(lower_s.back() + build_s.back());
  }
  std::printf("in-process, one candidate at a time:\n");
  print_stats("lower", lower_s);
  print_stats("build", build_s);
  print_stats("lower+build", total_s);

  mt::Reference ref;
  if (check) {
    ref = mt::Reference::compute(f);
    std::printf("reference interpreter: %.2f s\n", ref.compute_seconds);
  } else {
    // Inputs only: the measurer runs each candidate once without comparing.
    ref.is_output = f.output_mask();
    for (size_t i = 0; i < f.params.size(); ++i) {
      ref.args.emplace_back(f.params[i]->dtype, f.params[i]->shape);
      ref.args.back().fill_random(i + 1);
    }
  }
  if (skip_measurer) return 0;
  mt::MeasureOptions o;
  o.parallel_builds = threads;
  o.repeats = 1;
  o.min_repeat_seconds = 0;
  o.check = check && !build_only;
  if (build_only) {
    o.warmup_runs = 0;
    o.repeats = 0;
  }
  mt::Measurer m(*target, o);
  auto tm = Clock::now();
  auto results = m.measure(ref, cands);
  double wall = since(tm);
  std::map<std::string, int> by_status;
  std::vector<double> worker_build_s, run_s;
  for (const auto& r : results) {
    ++by_status[mt::to_string(r.status)];
    worker_build_s.push_back(r.build_seconds);
    if (r.ok() && !r.run_secs.empty()) run_s.push_back(r.run_secs[0]);
  }
  std::printf("Measurer (parallel_builds %d, %s): %.2f s for %zu candidates = %.2f "
              "candidates/s\n",
              threads, build_only ? "build only" : "one run each", wall, cands.size(),
              static_cast<double>(cands.size()) / wall);
  print_stats("worker build", worker_build_s);
  print_stats("kernel run", run_s);
  for (const auto& [status, count] : by_status)
    std::printf("  %s: %d\n", status.c_str(), count);
  return 0;
}
