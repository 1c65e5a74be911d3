// One task of a tuning run (see task_context.h).
#include "core/tuner/task_context.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include <spdlog/spdlog.h>

#include "core/measure/implementation_compare.h"
#include "core/measure/reference_cache.h"
#include "core/plugin/plugin_host.h"
#include "core/search/design_space.h"
#include "core/tuner/reference_schedule.h"
#include "core/workload/flop_count.h"
#include "core/workload/library.h"

namespace mt {

namespace {
// Records replayed to train the cost model at the start of a run (the most recent ones): per
// task for a model of its own; for the run's one model, a share of 4 x that among the tasks
// (at least 512 each), so that a model's 31 tasks start with one training of at most 16k.
constexpr size_t kMaxWarmStartTraining = 4096;
constexpr size_t kMinWarmStartShare = 512;

bool stopped(const std::atomic<bool>* stop) {
  return stop && stop->load();
}
} // namespace

double measured_seconds(const MeasureResult& r) {
  if (!r.ok()) return std::numeric_limits<double>::infinity();
  TuningRecord rec;
  rec.run_secs = r.run_secs;
  return rec.mean_secs();
}

uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (a + 1) + 0xbf58476d1ce4e5b9ULL * b;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void TaskContext::file_in_database(Database& db, const TuneTask& task,
                                   const std::string& target_key,
                                   const std::vector<LibraryTarget>& libs) {
  if (task.workload.body) {
    workload = task.workload;
    result.spec = task.spec.empty() ? task.workload.name : task.spec;
  } else {
    if (task.spec.empty()) throw std::invalid_argument("tune: task without spec or workload");
    result.spec = canonical_workload_spec(task.spec);
    workload = make_workload(result.spec);
  }
  weights = task.weights;
  if (!(task.weight > 0))
    throw std::invalid_argument("tune: task '" + result.spec + "' has a weight <= 0");
  result.weight = task.weight;
  result.flops = count_flops(workload);
  args = arg_info_of(workload);
  for (size_t i = 0; i < args.size() && i < weights.size(); ++i)
    args[i].weight = weights[i];
  result.workload_id = db.commit_workload(workload, task.workload.body ? task.spec : result.spec);
  prior_records_ = db.records(result.workload_id, target_key);
  for (const std::string& p : db.take_problems())
    spdlog::warn("{}", p);
  result.prior_records = prior_records_.size();
  // A baseline's record (take_unscheduled_candidate) has one of these two traces, written by the
  // same serialiser: compared as text, no record is parsed.
  const std::string plain = Trace().to_json();
  const std::string parallel = outer_loops_parallel(workload, 0)->trace().to_json();
  for (const TuningRecord& r : prior_records_) {
    unscheduled_offered = unscheduled_offered || r.trace_json == plain || r.trace_json == parallel;
    if (r.mean_secs() < result.best_seconds) {
      result.best_seconds = r.mean_secs();
      result.best_record_id = r.id;
    }
  }
  library_stored = read_library_records(db, libs);
}

std::vector<bool> TaskContext::read_library_records(const Database& db,
                                                    const std::vector<LibraryTarget>& libs) {
  std::vector<bool> stored;
  result.library_seconds = std::numeric_limits<double>::infinity();
  for (const LibraryTarget& lib : libs) {
    std::vector<TuningRecord> lrecs = db.records(result.workload_id, lib.key);
    stored.push_back(!lrecs.empty());
    if (const TuningRecord* f = fastest(lrecs); f && f->mean_secs() < result.library_seconds) {
      result.library_seconds = f->mean_secs();
      result.library_record_id = f->id;
      result.library_target = lib.key;
      result.library_component = lib.component;
    }
  }
  return stored;
}

void TaskContext::build_search(const TaskSetup& setup) {
  const TuneOptions& options = setup.options;
  const TargetSetup& target = setup.target;
  this->target = &target;
  cpu_reference = setup.cpu_reference;
  ctx.workload = workload;
  ctx.seed = mix_seed(options.seed, index, result.prior_records);
  std::vector<std::unique_ptr<PluginScheduleRule>> rules;
  for (const SpaceComponent& c : setup.space.rules) {
    rules.push_back(setup.host.create_schedule_rule(c.name, c.config));
    rules.back()->initialize(target.attrs);
  }
  for (const SpaceComponent& c : setup.space.postprocs) {
    ctx.postprocs.push_back(setup.host.create_postproc(c.name, c.config));
    ctx.postprocs.back()->initialize(target.attrs);
  }
  for (const SpaceComponent& c : setup.space.mutators) {
    ctx.mutators.emplace_back(setup.host.create_mutator(c.name, c.config), c.probability);
    ctx.mutators.back().first->initialize(target.attrs);
  }
  // Every further sampling thread gets the same components (parallel_sampler.h).
  ctx.sampling_threads = options.sampling_threads;
  ctx.sampler_components = [&host = setup.host, space = setup.space, attrs = target.attrs]() {
    SamplerComponents c;
    for (const SpaceComponent& p : space.postprocs) {
      c.postprocs.push_back(host.create_postproc(p.name, p.config));
      c.postprocs.back()->initialize(attrs);
    }
    for (const SpaceComponent& m : space.mutators) {
      c.mutators.push_back(host.create_mutator(m.name, m.config));
      c.mutators.back()->initialize(attrs);
    }
    return c;
  };
  if (setup.run_model) {
    ctx.cost_model = setup.run_model;
    model_path = options.cost_model_path;
  } else if (!setup.model_name.empty()) {
    ctx.cost_model = setup.host.create_cost_model(setup.model_name);
    ctx.cost_model->initialize(target.attrs);
    if (!options.cost_model_path.empty())
      model_path = setup.task_count == 1 ? options.cost_model_path
                                         : options.cost_model_path + "." + std::to_string(index);
  }

  std::vector<std::string> rule_errors;
  ctx.design_spaces = generate_design_spaces(workload, rules, ctx.seed, &rule_errors);
  if (ctx.design_spaces.empty()) {
    std::string why;
    for (const auto& e : rule_errors)
      why += "\n  " + e;
    throw TuneError("workload '" + result.spec +
                    "': the schedule rules produced no design "
                    "space" +
                    (why.empty() ? std::string() : ":" + why));
  }
  for (const auto& e : rule_errors)
    spdlog::debug("{}: a schedule rule dropped a design space: {}", result.spec, e);

  // Warm start: the search starts from the best records and never proposes them again.
  std::vector<const TuningRecord*> sorted;
  for (const TuningRecord& r : prior_records_)
    sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](const TuningRecord* a, const TuningRecord* b) {
    return a->mean_secs() < b->mean_secs();
  });
  for (const TuningRecord* r : sorted) {
    try {
      ctx.measured_traces.push_back(Trace::from_json(r->trace_json));
      ctx.measured_seconds.push_back(r->mean_secs());
    } catch (const std::exception& e) {
      spdlog::warn("{}: record {} has an unreadable trace, not used: {}", result.spec, r->id,
                   e.what());
    }
  }
  if (setup.run_model) {
    if (!setup.run_model_loaded)
      train_from_records(prior_records_, setup.warm_start, setup.task_count);
  } else if (!load_model()) {
    train_from_records(prior_records_, nullptr, 1);
  }
  prior_records_.clear();

  strategy = make_search_strategy(setup.host, setup.strategy_name, setup.strategy_config, ctx);
}

std::string TaskContext::ensure_reference(const TuneOptions& options) {
  if (has_reference) return {};
  ReferenceCacheInfo info;
  std::optional<Reference::Evaluator> by_target;
  // Not by a GPU target: the parent process must not initialise a GPU driver before it forks
  // its measurement workers (CUDA and PoCL do not survive fork), and a parallel loop nest is
  // no GPU program. A GPU run's large references come from the CPU target instead (the
  // interpreter would take minutes for a 4096^3 matmul), under the key a CPU run uses.
  auto kind = target ? target->attrs.find("kind") : TuneAttributes::const_iterator{};
  bool gpu = target && kind != target->attrs.end() &&
             std::holds_alternative<std::string>(kind->second) &&
             is_gpu_kind(std::get<std::string>(kind->second));
  const TargetSetup* evaluator = gpu ? cpu_reference : target;
  // A CPU run's reference run may be its baseline trial (below): the baseline's schedule.
  // A GPU run's is only a reference: the faster reference_schedule (4096^3 matmuls in
  // seconds, not a minute), the same sum per element.
  const bool baseline = evaluator == target;
  if (evaluator && result.flops >= options.reference_by_target_flops) {
    const PluginTarget& t = *evaluator->target;
    // With the outer loops parallel: half the time on 2 cores and the same arithmetic per
    // element.
    by_target = Reference::Evaluator{
        evaluator->component + (baseline ? "+parallel" : "+reference"),
        [&t, baseline](const Function& f, std::vector<NDArray>& args) {
          std::vector<NDArray*> ptrs;
          for (NDArray& a : args)
            ptrs.push_back(&a);
          t.build((baseline ? outer_loops_parallel(f, 0) : reference_schedule(f))->func())
              ->run(ptrs);
        }};
    reference_by_target = true;
  }
  reference = load_or_compute_reference(workload, options.seed, options.reference_cache_dir, 0,
                                        &info, by_target ? &*by_target : nullptr);
  has_reference = true;
  if (by_target && baseline && reference.compute_seconds >= options.reference_run_as_trial_seconds)
    unscheduled_seconds = reference.compute_seconds;
  std::string by;
  if (by_target)
    by = " by " + evaluator->component +
         (baseline ? " (unscheduled, outer loops parallel)"
                   : " (outer loops parallel, reductions outside the innermost loop)");
  if (info.from_cache)
    return fmt::format("reference{} loaded from cache ({}) in {:.2f} s", by, info.file,
                       info.seconds);
  return fmt::format("reference computed{} in {:.2f} s", by, reference.compute_seconds);
}

void TaskContext::measure_libraries(Database& db, const std::vector<LibraryTarget>& libs,
                                    std::vector<std::unique_ptr<Measurer>>& measurers,
                                    const TuneOptions& options, const std::atomic<bool>* stop) {
  for (size_t l = 0; l < libs.size() && !stopped(stop); ++l) {
    if (library_stored[l]) continue;
    const LibraryTarget& lib = libs[l];
    if (std::string note = ensure_reference(options); !note.empty())
      spdlog::info("{}: {}", result.spec, note);
    if (!measurers[l]) measurers[l] = std::make_unique<Measurer>(*lib.target, options.measure);
    measurers[l]->set_cold_inputs(result.cold_inputs);
    measurers[l]->set_weights(weights);
    MeasureResult r = measurers[l]->measure(reference, {workload}).at(0);
    if (is_unsupported(r)) {
      spdlog::debug("{}: not offered by {}: {}", result.spec, lib.component, r.error);
      continue;
    }
    if (!r.ok() && stopped(stop)) return; // possibly the interrupt's doing: not recorded
    int64_t id =
        db.commit_record(library_record(lib, result.workload_id, workload, r, options.seed, args));
    library_stored[l] = true;
    ++result.library_measured;
    if (!r.ok()) {
      spdlog::warn("{}: the {} implementation failed (record {}): {}: {}", result.spec,
                   lib.component, id, to_string(r.status), r.error);
      continue;
    }
    double secs = measured_seconds(r);
    spdlog::info("{}: {} implementation: {:.4g} ms = {:.2f} GFLOPS (record {})", result.spec,
                 lib.component, secs * 1e3, secs > 0 ? result.flops / secs * 1e-9 : 0.0, id);
    if (secs < result.library_seconds) {
      result.library_seconds = secs;
      result.library_record_id = id;
      result.library_target = lib.key;
      result.library_component = lib.component;
    }
  }
}

void TaskContext::choose(Database& db, const std::vector<LibraryTarget>& libs,
                         const TargetSetup& target, const TuneOptions& options,
                         const std::atomic<bool>* stop) {
  TaskResult& tr = result;
  bool tuned_ok = std::isfinite(tr.best_seconds), lib_ok = std::isfinite(tr.library_seconds);
  if (options.compare && tuned_ok && lib_ok && !stopped(stop)) {
    const LibraryTarget* lib = nullptr;
    for (const LibraryTarget& l : libs)
      if (l.component == tr.library_component) lib = &l;
    try {
      if (!lib)
        throw std::runtime_error("library target '" + tr.library_component + "' is not loaded");
      Function tuned = replay(db.record(tr.best_record_id), workload);
      CompareOptions co;
      co.repeats = options.compare_repeats;
      co.min_repeat_seconds = options.measure.min_repeat_seconds;
      co.seed = options.seed;
      co.cold_inputs = result.cold_inputs;
      co.cold_inputs_bytes = options.measure.cold_inputs_bytes;
      co.weights = weights;
      co.timeout_s = 2 * (options.measure.build_timeout_s + options.measure.run_timeout_s) +
                     4.0 * co.repeats * co.min_repeat_seconds;
      CompareResult c = compare_interleaved(*target.target, tuned, *lib->target, workload, co);
      if (c.ok) {
        tr.compare_tuned_seconds = c.a_median;
        tr.compare_library_seconds = c.b_median;
        // The side-by-side times join the two records' own, so that the choice below and
        // every later one (`metatune best`, a model's `best` kernels) read the same figures.
        db.append_run_secs(tr.best_record_id, c.a_secs);
        db.append_run_secs(tr.library_record_id, c.b_secs);
        refresh_from_database(db, libs, target.target_string);
      } else if (!stopped(stop)) {
        tr.compare_error = c.error;
      }
    } catch (const std::exception& e) {
      tr.compare_error = e.what();
    }
    if (!tr.compare_error.empty())
      spdlog::warn("{}: the side-by-side comparison with {} failed: {}", tr.spec,
                   tr.library_component, tr.compare_error);
  }
  if (tuned_ok || lib_ok)
    tr.chosen = tr.library_seconds < tr.best_seconds ? tr.library_component : target.component;
}

void TaskContext::refresh_from_database(const Database& db, const std::vector<LibraryTarget>& libs,
                                        const std::string& target_key) {
  if (std::optional<TuningRecord> b = db.best(result.workload_id, target_key)) {
    result.best_seconds = b->mean_secs();
    result.best_record_id = b->id;
  }
  read_library_records(db, libs);
}

std::shared_ptr<Schedule> TaskContext::take_unscheduled_candidate() {
  if (unscheduled_offered) return nullptr;
  unscheduled_offered = true;
  // A large task, whose reference ran with the outer loops parallel, has that schedule as its
  // baseline: its time is known from the reference run, and the serial program is slower
  // still. The postprocessors judge the baseline, but it is measured as it is, as the untuned
  // program is built (on CPU they would only add rewrites such as a decomposed reduction), so
  // its record keeps the trace file_in_database recognises on a resumed run.
  std::shared_ptr<Schedule> base = reference_by_target
                                       ? outer_loops_parallel(workload, ctx.seed)
                                       : std::make_shared<Schedule>(workload, ctx.seed);
  std::shared_ptr<Schedule> judged;
  std::string why;
  if (sample_candidate(workload, base->trace(), ctx.seed, true, ctx.postprocs, &judged, &why) !=
      SampleOutcome::Ok) {
    spdlog::debug("{}: the unscheduled workload is not a candidate on this target: {}", result.spec,
                  why);
    return nullptr;
  }
  unscheduled_in_run = true;
  return base;
}

void TaskContext::save_model() {
  if (!ctx.cost_model || model_path.empty()) return;
  try {
    ctx.cost_model->save(model_path);
  } catch (const std::exception& e) {
    spdlog::warn("{}: saving the cost model to '{}' failed, not trying again: {}", result.spec,
                 model_path, e.what());
    model_path.clear();
  }
}

// False if there was no model to load (or it could not be loaded).
bool TaskContext::load_model() const {
  return ctx.cost_model && load_cost_model(*ctx.cost_model, model_path, result.spec);
}

bool load_cost_model(PluginCostModel& model, const std::string& path, const std::string& who) {
  const std::string prefix = who.empty() ? "" : who + ": ";
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return false;
  try {
    model.load(path);
    spdlog::info("{}cost model loaded from '{}'", prefix, path);
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("{}loading the cost model from '{}' failed ({}); training from the database "
                 "instead",
                 prefix, path, e.what());
    return false;
  }
}

// The measured schedules behind database records, for training the cost model: the task's
// own now, or the run's once every task has added its records (`into`).
void TaskContext::train_from_records(const std::vector<TuningRecord>& records, WarmStart* into,
                                     size_t tasks) {
  if (!ctx.cost_model || records.empty()) return;
  std::vector<std::unique_ptr<PluginPostproc>> no_postprocs; // the trace already has them
  std::vector<std::shared_ptr<Schedule>> schedules;
  std::vector<double> secs;
  const size_t limit =
      into ? std::max(kMinWarmStartShare, 4 * kMaxWarmStartTraining / std::max<size_t>(tasks, 1))
           : kMaxWarmStartTraining;
  size_t first = records.size() > limit ? records.size() - limit : 0;
  for (size_t i = first; i < records.size(); ++i) {
    // Failures say nothing about speed (and +inf is no label); the search trains likewise.
    if (records[i].failed()) continue;
    std::shared_ptr<Schedule> sch;
    try {
      Trace trace = Trace::from_json(records[i].trace_json);
      if (sample_candidate(workload, trace, ctx.seed, true, no_postprocs, &sch) !=
          SampleOutcome::Ok)
        continue;
    } catch (const std::exception&) {
      continue;
    }
    schedules.push_back(std::move(sch));
    secs.push_back(records[i].mean_secs());
  }
  if (schedules.empty()) return;
  if (into) {
    into->schedules.insert(into->schedules.end(), schedules.begin(), schedules.end());
    into->seconds.insert(into->seconds.end(), secs.begin(), secs.end());
    ++into->tasks;
    return;
  }
  ctx.cost_model->update(schedules, secs);
  spdlog::info("{}: cost model trained on {} database records", result.spec, schedules.size());
}

} // namespace mt
