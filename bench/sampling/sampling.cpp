// How fast the search generates candidates: samples per second on matmul 1024^3 and the
// BERT-base dense layer (bias + GELU), with the target's default schedule rules,
// postprocessors and mutators (as `metatune tune` uses them, edited by --rules like tune's),
// no cost model (random scores, so that only candidate generation is timed). The target
// needs no device: `--target "cuda -arch=sm_90"` times the search of a GPU run here. Paths
// per workload:
//
//   next_batch -- next_batch(64) of a fresh evolutionary search with the default options
//                 (population 512, 4 generations): initial population, mutation + replay +
//                 postprocessing of every generation, the batch. samples/s counts the traces
//                 the search replayed (SearchStats::sampled) over the call's wall time.
//   raw        -- fresh samples of random design spaces (every decision re-sampled),
//                 replayed, postprocessed and hashed, one after the other: the path the
//                 search takes for each fresh candidate (CandidateSampler::sample_fresh).
//   raw_batch  -- the same samples as one batch of jobs on the sampling threads
//                 (CandidateSampler::run, core/search/parallel_sampler.h).
//
//   bench_sampling [--workload SPEC]... [--repeats 3] [--raw-samples 300] [--seed 1]
//                  [--threads N] [--plugin-dir DIR] [--label NAME] [--target TARGET]
//                  [--rules EDIT]...
//
// --threads: sampling threads of the search and of raw_batch (0, the default, one per core,
// as the tuner); each thread gets its own postprocessors and mutators.
//
// One JSON line per (workload, path) on stdout: the median over the repeats, each repeat a
// fresh search (or a fresh sampler) with the same seed.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/plugin/plugin_host.h"
#include "core/schedule/random.h"
#include "core/search/candidate_sampler.h"
#include "core/search/design_space.h"
#include "core/search/search_strategy.h"
#include "core/tuner/space_config.h"
#include "core/tuner/target_setup.h"
#include "core/workload/library.h"

// The same source builds against the tree before sampling on threads (commit 9f24020), which
// gives the "before" figures: there, --threads is accepted and ignored and raw_batch is absent.
#if __has_include("core/search/parallel_sampler.h")
#define MT_BENCH_PARALLEL_SAMPLER 1
#else
#define MT_BENCH_PARALLEL_SAMPLER 0
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> workloads;
  int repeats = 3;
  size_t raw_samples = 300;
  uint64_t seed = 1;
  size_t threads = 0;
  std::string plugin_dir = MT_BENCH_PLUGIN_DIR;
  std::string label;
  std::string target = "llvm";
  std::vector<std::string> rules; // --rules values, as `metatune tune` takes them
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the process (all threads), user + system: less sensitive than wall time to other
// work on a shared machine.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A search context of `spec` with the target's default components, as the tuner builds it.
class Setup {
public:
  Setup(mt::PluginHost& host, const std::string& spec, const Options& o)
      : host_(host), target_(mt::setup_target(host, o.target, /*need_device=*/false)), spec_(spec),
        seed_(o.seed), threads_(o.threads) {
    std::vector<mt::SpaceEdit> edits;
    for (const std::string& r : o.rules)
      edits.push_back(mt::parse_space_edit(mt::ComponentKind::ScheduleRule, r,
                                           {mt::SpaceSource::Option, "--rules"}));
    space_ = mt::resolve_search_space(host, target_, edits);
    workload_ = mt::make_workload(spec);
    std::vector<std::unique_ptr<mt::PluginScheduleRule>> rules;
    for (const auto& c : space_.rules) {
      rules.push_back(host.create_schedule_rule(c.name, c.config));
      rules.back()->initialize(target_.attrs);
    }
    design_spaces_ = mt::generate_design_spaces(workload_, rules, seed_);
    if (design_spaces_.empty()) throw std::runtime_error(spec + ": no design space");
  }

  mt::SearchContext context() const {
    mt::SearchContext ctx;
    ctx.workload = workload_;
    ctx.design_spaces = design_spaces_;
    ctx.seed = seed_;
    Components own = components();
    ctx.postprocs = std::move(own.postprocs);
    for (size_t m = 0; m < own.mutators.size(); ++m)
      ctx.mutators.emplace_back(std::move(own.mutators[m]), space_.mutators[m].probability);
#if MT_BENCH_PARALLEL_SAMPLER
    ctx.sampling_threads = threads_;
    ctx.sampler_components = [this] { return components(); };
#endif
    return ctx;
  }

  // One thread's postprocessors and mutators, as the tuner creates them.
  struct Components {
    std::vector<std::unique_ptr<mt::PluginPostproc>> postprocs;
    std::vector<std::unique_ptr<mt::PluginMutator>> mutators;
#if MT_BENCH_PARALLEL_SAMPLER
    operator mt::SamplerComponents() && {
      return {std::move(postprocs), std::move(mutators)};
    }
#endif
  };
  Components components() const {
    Components c;
    for (const auto& p : space_.postprocs) {
      c.postprocs.push_back(host_.create_postproc(p.name, p.config));
      c.postprocs.back()->initialize(target_.attrs);
    }
    for (const auto& m : space_.mutators) {
      c.mutators.push_back(host_.create_mutator(m.name, m.config));
      c.mutators.back()->initialize(target_.attrs);
    }
    return c;
  }

  size_t num_design_spaces() const {
    return design_spaces_.size();
  }

private:
  mt::PluginHost& host_;
  mt::TargetSetup target_;
  mt::SearchSpace space_;
  std::string spec_;
  uint64_t seed_;
  size_t threads_;
  mt::Function workload_;
  std::vector<std::shared_ptr<mt::Schedule>> design_spaces_;
};

struct Row {
  double seconds = 0;     // median wall time of one repeat
  double cpu_seconds = 0; // median CPU time (all threads) of one repeat
  size_t samples = 0;     // traces replayed in that repeat
  size_t accepted = 0;    // candidates out (batch size, or samples that passed)
  size_t mutated = 0, duplicates = 0, refused = 0; // SearchStats of that repeat
  std::string why_refused;                         // SearchStats::diagnosis()
};

Row bench_next_batch(mt::PluginHost& host, const Setup& setup, int repeats) {
  std::vector<double> secs, cpu;
  Row row;
  for (int r = 0; r < repeats; ++r) {
    mt::SearchContext ctx = setup.context();
    auto search = mt::make_evolutionary_search(host, ctx);
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    auto batch = search->next_batch(64);
    cpu.push_back(cpu_seconds() - c0);
    secs.push_back(seconds_since(t0));
    const mt::SearchStats& st = search->stats();
    row.samples = st.sampled;
    row.accepted = batch.size();
    row.mutated = st.mutated;
    row.duplicates = st.duplicates;
    row.refused = st.rejected + st.replay_failed;
    row.why_refused = st.diagnosis();
  }
  row.seconds = median(secs);
  row.cpu_seconds = median(cpu);
  return row;
}

Row bench_raw(const Setup& setup, int repeats, size_t n, uint64_t seed) {
  std::vector<double> secs, cpu;
  Row row;
  for (int r = 0; r < repeats; ++r) {
    mt::SearchContext ctx = setup.context();
    mt::SearchStats stats;
    mt::CandidateSampler sampler(ctx, stats);
    mt::RandomEngine rng(seed);
    size_t ok = 0;
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    for (size_t i = 0; i < n; ++i)
      if (sampler.sample_fresh(rng)) ++ok;
    cpu.push_back(cpu_seconds() - c0);
    secs.push_back(seconds_since(t0));
    row.samples = stats.sampled;
    row.accepted = ok;
    row.refused = stats.rejected + stats.replay_failed;
    row.why_refused = stats.diagnosis();
  }
  row.seconds = median(secs);
  row.cpu_seconds = median(cpu);
  return row;
}

#if MT_BENCH_PARALLEL_SAMPLER
Row bench_raw_batch(const Setup& setup, int repeats, size_t n, uint64_t seed) {
  std::vector<double> secs, cpu;
  Row row;
  for (int r = 0; r < repeats; ++r) {
    mt::SearchContext ctx = setup.context();
    mt::SearchStats stats;
    mt::CandidateSampler sampler(ctx, stats);
    std::vector<mt::SampleJob> jobs;
    for (size_t i = 0; i < n; ++i)
      jobs.push_back(sampler.fresh_job(mt::job_seed(seed, i)));
    sampler.run({jobs.front()}); // the pool starts on a batch of more than one
    size_t ok = 0;
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    std::vector<mt::SampleResult> results = sampler.run(jobs);
    for (size_t i = 0; i < n; ++i)
      if (sampler.take(jobs[i], std::move(results[i]))) ++ok;
    cpu.push_back(cpu_seconds() - c0);
    secs.push_back(seconds_since(t0));
    row.samples = stats.sampled;
    row.accepted = ok;
    row.refused = stats.rejected + stats.replay_failed;
    row.why_refused = stats.diagnosis();
  }
  row.seconds = median(secs);
  row.cpu_seconds = median(cpu);
  return row;
}

#endif

void print(const Options& o, const std::string& spec, const char* path, size_t spaces,
           const Row& r) {
  size_t threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  if (!MT_BENCH_PARALLEL_SAMPLER) threads = 1;
  std::printf("{\"label\": \"%s\", \"target\": \"%s\", \"workload\": \"%s\", \"path\": \"%s\", "
              "\"threads\": %zu, "
              "\"design_spaces\": "
              "%zu, \"seconds\": %.4f, \"cpu_seconds\": %.4f, \"samples\": %zu, \"accepted\": %zu, "
              "\"mutated\": %zu, \"duplicates\": %zu, \"refused\": %zu, "
              "\"samples_per_second\": %.1f, \"cpu_ms_per_sample\": %.4f}\n",
              o.label.c_str(), o.target.c_str(), spec.c_str(), path, threads, spaces, r.seconds,
              r.cpu_seconds, r.samples, r.accepted, r.mutated, r.duplicates, r.refused,
              static_cast<double>(r.samples) / r.seconds,
              1e3 * r.cpu_seconds / static_cast<double>(r.samples));
  std::fflush(stdout);
  if (!r.why_refused.empty())
    std::fprintf(stderr, "%s, %s: refused: %s\n", spec.c_str(), path, r.why_refused.c_str());
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(k + " needs a value");
      return argv[++i];
    };
    if (k == "--workload")
      o.workloads.push_back(next());
    else if (k == "--repeats")
      o.repeats = std::max(1, std::stoi(next()));
    else if (k == "--raw-samples")
      o.raw_samples = std::stoul(next());
    else if (k == "--seed")
      o.seed = std::stoull(next());
    else if (k == "--threads")
      o.threads = std::stoul(next());
    else if (k == "--plugin-dir")
      o.plugin_dir = next();
    else if (k == "--label")
      o.label = next();
    else if (k == "--target")
      o.target = next();
    else if (k == "--rules")
      o.rules.push_back(next());
    else
      throw std::invalid_argument("unknown option " + k);
  }
  if (o.workloads.empty())
    o.workloads = {"matmul(M=1024,N=1024,K=1024)", "dense(M=128,N=3072,K=768,bias=1,act=gelu)"};
  return o;
}

} // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  mt::PluginHost host;
  host.discover({o.plugin_dir});
  for (const std::string& spec : o.workloads) {
    Setup setup(host, spec, o);
    print(o, spec, "next_batch", setup.num_design_spaces(),
          bench_next_batch(host, setup, o.repeats));
    print(o, spec, "raw", setup.num_design_spaces(),
          bench_raw(setup, o.repeats, o.raw_samples, o.seed));
#if MT_BENCH_PARALLEL_SAMPLER
    print(o, spec, "raw_batch", setup.num_design_spaces(),
          bench_raw_batch(setup, o.repeats, o.raw_samples, o.seed));
#endif
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_sampling: %s\n", e.what());
  return 1;
}
