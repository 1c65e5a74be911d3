// Compile time of tuning candidates: samples N candidates of a workload (matmul 1024^3 by
// default) from the design spaces of the target's default rules (edited by --rules, as
// `metatune tune` takes them), and reports
//  1. lowering, feature extraction (what the cost model pays per candidate it scores) and the
//     target's build per candidate in this process (median / mean / p90 seconds);
//  2. the Measurer (forked workers, parallel_builds = cores): candidates per second, including
//     one short timed run each (no reference check unless --check);
//  3. with --check, how long the reference interpreter takes for the workload.
// --build-only: the Measurer's workers build and run nothing (no warm-up, no repeat), which
// gives the throughput of the builder alone.
//
// A GPU target needs no device for 1 (`--target "cuda -arch=sm_90"`: NVRTC builds for the
// architecture asked for); without one the Measurer is skipped.
//
//   bench_compile_time [--spec SPEC] [-n N] [--threads T] [--check] [--skip-measurer]
//                      [--build-only] [--target TARGET] [--rules EDIT]...
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

#include "core/features/features.h"
#include "core/lower/lower.h"
#include "core/measure/measure.h"
#include "core/plugin/plugin_host.h"
#include "core/search/design_space.h"
#include "core/tuner/space_config.h"
#include "core/tuner/target_setup.h"
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
  std::string target_spec = "llvm";
  std::vector<std::string> rule_edits;
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
    else if (a == "--target")
      target_spec = value();
    else if (a == "--rules")
      rule_edits.push_back(value());
    else {
      std::fprintf(stderr,
                   "usage: %s [--spec SPEC] [-n N] [--threads T] [--check] [--skip-measurer] "
                   "[--build-only] [--target TARGET] [--rules EDIT]...\n",
                   argv[0]);
      return 2;
    }
  }
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  mt::PluginHost host;
  host.discover({METATUNE_PLUGIN_DIR});
  mt::TargetSetup setup = mt::setup_target(host, target_spec, /*need_device=*/false);
  std::vector<mt::SpaceEdit> edits;
  for (const std::string& r : rule_edits)
    edits.push_back(mt::parse_space_edit(mt::ComponentKind::ScheduleRule, r,
                                         {mt::SpaceSource::Option, "--rules"}));
  mt::SearchSpace space = mt::resolve_search_space(host, setup, edits);
  std::vector<std::unique_ptr<mt::PluginScheduleRule>> rules;
  for (const auto& c : space.rules) {
    rules.push_back(host.create_schedule_rule(c.name, c.config));
    rules.back()->initialize(setup.attrs);
  }
  std::vector<std::unique_ptr<mt::PluginPostproc>> postprocs;
  for (const auto& c : space.postprocs) {
    postprocs.push_back(host.create_postproc(c.name, c.config));
    postprocs.back()->initialize(setup.attrs);
  }
  mt::PluginTarget* target = setup.target.get();
  if (!setup.unavailable.empty()) {
    std::printf("no device (%s): builds only, no Measurer\n", setup.unavailable.c_str());
    skip_measurer = true;
  }
  mt::Function f = mt::make_workload(spec);
  std::printf("workload %s, target %s, %d build threads\n", spec.c_str(),
              mt::short_target_name(setup.target_string).c_str(), threads);

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

  std::vector<double> lower_s, features_s, build_s, total_s;
  std::map<std::string, int> refused; // build failures by reason
  for (const auto& c : cands) {
    auto tl = Clock::now();
    mt::Function lowered = mt::lower(c);
    lower_s.push_back(since(tl));
    auto tf = Clock::now();
    (void)mt::extract_feature_matrix(c);
    features_s.push_back(since(tf));
    auto tb = Clock::now();
    try {
      auto module = target->build(lowered);
    } catch (const std::exception& e) {
      // Without a device the build compiles and then fails to load the module: the time is
      // the compiler's. Any other failure is the candidate's, counted by its reason.
      std::string why = e.what();
      if (setup.unavailable.empty() || why.find(setup.unavailable) == std::string::npos) {
        ++refused[why.substr(0, 160)];
        continue;
      }
    }
    build_s.push_back(since(tb));
    total_s.push_back(lower_s.back() + build_s.back());
  }
  std::printf("in-process, one candidate at a time:\n");
  print_stats("lower", lower_s);
  print_stats("lower+features", features_s);
  print_stats("build", build_s);
  print_stats("lower+build", total_s);
  for (const auto& [why, count] : refused)
    std::printf("  build refused %d of %zu: %s\n", count, cands.size(), why.c_str());

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
