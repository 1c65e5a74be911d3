// The tuning loop (see tuner.h).
#include "core/tuner/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/plugin/plugin_host.h"
#include "core/database/database.h"
#include "core/search/design_space.h"
#include "core/workload/flop_count.h"
#include "core/measure/implementation_compare.h"
#include "core/measure/library_candidate.h"
#include "core/tuner/target_setup.h"
#include "core/scheduler/task_scheduler.h"
#include "core/workload/library.h"

namespace mt {

double TaskResult::best_gflops() const {
  return std::isfinite(best_seconds) && best_seconds > 0 ? flops / best_seconds * 1e-9 : 0;
}

bool TaskResult::compared() const {
  return std::isfinite(compare_tuned_seconds) && std::isfinite(compare_library_seconds);
}

namespace {
double gflops_of(double flops, double secs) {
  return std::isfinite(secs) && secs > 0 ? flops / secs * 1e-9 : 0;
}
} // namespace

double TaskResult::tuned_gflops() const {
  return gflops_of(flops, compared() ? compare_tuned_seconds : best_seconds);
}

double TaskResult::library_gflops() const {
  return gflops_of(flops, compared() ? compare_library_seconds : library_seconds);
}

double TaskResult::ratio_to_library() const {
  double t = tuned_gflops(), l = library_gflops();
  return t > 0 && l > 0 ? t / l : 0;
}

double TaskResult::chosen_seconds() const {
  if (compared()) return library_chosen() ? compare_library_seconds : compare_tuned_seconds;
  return library_chosen() ? library_seconds : best_seconds;
}

double TuneResult::chosen_seconds() const {
  if (tasks.empty()) return std::numeric_limits<double>::infinity();
  double s = 0;
  for (const TaskResult& t : tasks)
    s += t.weight * t.chosen_seconds();
  return s;
}

double TuneResult::chosen_gflops() const {
  double secs = chosen_seconds();
  if (!std::isfinite(secs) || secs <= 0) return 0;
  double flops = 0;
  for (const TaskResult& t : tasks)
    flops += t.weight * t.flops;
  return flops / secs * 1e-9;
}

double TuneResult::best_seconds() const {
  if (tasks.empty()) return std::numeric_limits<double>::infinity();
  double s = 0;
  for (const TaskResult& t : tasks)
    s += t.weight * t.best_seconds;
  return s;
}

double TuneResult::best_gflops() const {
  double secs = best_seconds();
  if (!std::isfinite(secs) || secs <= 0) return 0;
  double flops = 0;
  for (const TaskResult& t : tasks)
    flops += t.weight * t.flops;
  return flops / secs * 1e-9;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Records replayed to train the cost model at the start of a run (the most recent ones).
constexpr size_t kMaxWarmStartTraining = 4096;

// "NAME" or "NAME{json}" -> (NAME, json).
std::pair<std::string, std::string> split_component_spec(const std::string& spec) {
  size_t brace = spec.find('{');
  std::string name = spec.substr(0, brace);
  while (!name.empty() && name.back() == ' ')
    name.pop_back();
  while (!name.empty() && name.front() == ' ')
    name.erase(name.begin());
  return {name, brace == std::string::npos ? std::string() : spec.substr(brace)};
}

struct TaskState {
  TaskResult result;
  Function workload;
  SearchContext ctx;
  std::unique_ptr<SearchStrategy> strategy;
  Reference reference;
  bool has_reference = false;
  std::string model_path;
  std::vector<bool> library_stored; // per library target: the database has a record already
};

// What the run used, for the records: every plugin that registered one of the components.
std::vector<PluginInfo>
plugins_used(const PluginHost& host,
             const std::vector<std::pair<ComponentKind, std::string>>& used) {
  std::set<std::string> names;
  for (const auto& [kind, name] : used)
    if (const ComponentInfo* c = host.find(kind, name)) names.insert(c->plugin_name);
  std::vector<PluginInfo> out;
  for (const PluginRecord& r : host.plugins())
    if (r.loaded() && names.count(r.name)) out.push_back({r.name, r.version});
  return out;
}

std::string resolve_cost_model(const PluginHost& host, const std::string& wanted) {
  if (wanted.empty() || wanted == "none") return {};
  if (host.find(ComponentKind::CostModel, wanted)) return wanted;
  if (wanted != "cost.Random" && host.find(ComponentKind::CostModel, "cost.Random")) {
    spdlog::warn("cost model '{}' is not registered by any loaded plugin; using cost.Random",
                 wanted);
    return "cost.Random";
  }
  spdlog::warn("cost model '{}' is not registered by any loaded plugin; candidates are chosen "
               "without a model",
               wanted);
  return {};
}

std::string search_summary(const SearchStats& s) {
  std::string out = "sampled " + std::to_string(s.sampled) + ", replay failed " +
                    std::to_string(s.replay_failed) + ", rejected " + std::to_string(s.rejected) +
                    ", duplicates " + std::to_string(s.duplicates) + ", proposed " +
                    std::to_string(s.proposed);
  std::string d = s.diagnosis();
  if (!d.empty()) out += "; " + d;
  return out;
}

uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b) {
  // splitmix64 steps: distinct tasks and resumed runs sample different candidates.
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (a + 1) + 0xbf58476d1ce4e5b9ULL * b;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The measured schedules behind database records, for training the cost model.
void train_from_records(TaskState& t, const std::vector<TuningRecord>& records) {
  if (!t.ctx.cost_model || records.empty()) return;
  std::vector<std::unique_ptr<PluginPostproc>> no_postprocs; // the trace already has them
  std::vector<std::shared_ptr<Schedule>> schedules;
  std::vector<double> secs;
  size_t first =
      records.size() > kMaxWarmStartTraining ? records.size() - kMaxWarmStartTraining : 0;
  for (size_t i = first; i < records.size(); ++i) {
    // Failures say nothing about speed (and +inf is no label); the search trains likewise.
    if (records[i].failed()) continue;
    std::shared_ptr<Schedule> sch;
    try {
      Trace trace = Trace::from_json(records[i].trace_json);
      if (sample_candidate(t.workload, trace, t.ctx.seed, true, no_postprocs, &sch) !=
          SampleOutcome::Ok)
        continue;
    } catch (const std::exception&) {
      continue;
    }
    schedules.push_back(std::move(sch));
    secs.push_back(records[i].mean_secs());
  }
  if (schedules.empty()) return;
  t.ctx.cost_model->update(schedules, secs);
  spdlog::info("{}: cost model trained on {} database records", t.result.spec, schedules.size());
}

// Saves the model after a batch; a model that cannot be saved is warned about once.
void save_model(TaskState& t) {
  if (!t.ctx.cost_model || t.model_path.empty()) return;
  try {
    t.ctx.cost_model->save(t.model_path);
  } catch (const std::exception& e) {
    spdlog::warn("{}: saving the cost model to '{}' failed, not trying again: {}", t.result.spec,
                 t.model_path, e.what());
    t.model_path.clear();
  }
}

// Loads the saved model; false if there was none to load (or it could not be loaded).
bool load_model(const TaskState& t) {
  if (!t.ctx.cost_model || t.model_path.empty()) return false;
  std::error_code ec;
  if (!std::filesystem::exists(t.model_path, ec)) return false;
  try {
    t.ctx.cost_model->load(t.model_path);
    spdlog::info("{}: cost model loaded from '{}'", t.result.spec, t.model_path);
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("{}: loading the cost model from '{}' failed ({}); training from the database "
                 "instead",
                 t.result.spec, t.model_path, e.what());
    return false;
  }
}

size_t chunk_size(const MeasureOptions& m) {
  // Measured in chunks so that a stop request is honoured within seconds, not a whole batch.
  size_t workers = m.parallel_builds > 0 ? static_cast<size_t>(m.parallel_builds)
                                         : std::max<size_t>(1, std::thread::hardware_concurrency());
  return std::max<size_t>(workers, 8);
}

} // namespace

TuneResult tune(PluginHost& host, const std::vector<TuneTask>& tasks, const TuneOptions& options,
                TuneObserver* observer, const std::atomic<bool>* stop) {
  const Clock::time_point start = Clock::now();
  auto stopped = [&] { return stop && stop->load(); };
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  if (tasks.empty()) throw std::invalid_argument("tune: no workload to tune");
  if (options.db_path.empty()) throw std::invalid_argument("tune: no database path given");
  if (options.batch_size == 0) throw std::invalid_argument("tune: batch size must be positive");
  auto [strategy_name, strategy_config] = split_component_spec(options.strategy);
  strategy_name = resolve_strategy_name(strategy_name);
  if (strategy_config.empty()) strategy_config = options.strategy_config;
  if (strategy_config.empty() && strategy_name == kEvolutionarySearch)
    strategy_config = evolutionary_config(options.evolutionary);
  if (!host.find(ComponentKind::SearchStrategy, strategy_name)) {
    std::string names;
    for (const ComponentInfo& c : host.components(ComponentKind::SearchStrategy))
      names += (names.empty() ? "" : ", ") + c.name;
    throw std::invalid_argument("tune: search strategy '" + strategy_name +
                                "' is not registered by any loaded plugin (strategies: " +
                                (names.empty() ? "none" : names) + ")");
  }
  if (options.scheduler != "gradient" && options.scheduler != "round-robin")
    throw std::invalid_argument("tune: unknown task scheduler '" + options.scheduler +
                                "' (gradient, round-robin)");

  TargetSetup target = setup_target(host, options.target);
  const SearchSpace space = resolve_search_space(host, target, options.space);
  if (space.rules.empty())
    throw TuneError("target '" + target.component +
                    "': no schedule rule is available (is the "
                    "std_rules plugin on the plugin path?)");
  std::string model_name = resolve_cost_model(host, options.cost_model);
  std::vector<std::pair<ComponentKind, std::string>> used{
      {ComponentKind::Target, target.component}};
  for (ComponentKind kind :
       {ComponentKind::ScheduleRule, ComponentKind::Postproc, ComponentKind::Mutator})
    for (const SpaceComponent& c : space.list(kind))
      used.push_back({kind, c.name});
  if (!model_name.empty()) used.push_back({ComponentKind::CostModel, model_name});
  used.push_back({ComponentKind::SearchStrategy, strategy_name});
  const std::vector<PluginInfo> plugins = plugins_used(host, used);

  std::vector<LibraryTarget> libs =
      open_library_targets(host, options.library_targets, target.component);

  std::unique_ptr<Database> db = Database::open(options.db_path);

  TuneResult result;
  result.target = target.target_string;
  result.target_component = target.component;

  // ---- phase 1: the workloads and what the database already holds for them ----
  std::vector<std::unique_ptr<TaskState>> states;
  size_t prior_total = 0;
  std::vector<std::vector<TuningRecord>> prior_records(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto t = std::make_unique<TaskState>();
    const TuneTask& task = tasks[i];
    if (task.workload.body) {
      t->workload = task.workload;
      t->result.spec = task.spec.empty() ? task.workload.name : task.spec;
    } else {
      if (task.spec.empty()) throw std::invalid_argument("tune: task without spec or workload");
      t->result.spec = canonical_workload_spec(task.spec);
      t->workload = make_workload(t->result.spec);
    }
    if (!(task.weight > 0))
      throw std::invalid_argument("tune: task '" + t->result.spec + "' has a weight <= 0");
    t->result.weight = task.weight;
    t->result.flops = count_flops(t->workload);
    t->result.workload_id =
        db->commit_workload(t->workload, task.workload.body ? task.spec : t->result.spec);
    std::vector<TuningRecord>& recs = prior_records[i];
    recs = db->records(t->result.workload_id, target.target_string);
    for (const std::string& p : db->take_problems())
      spdlog::warn("{}", p);
    t->result.prior_records = recs.size();
    prior_total += recs.size();
    for (const TuningRecord& r : recs)
      if (r.mean_secs() < t->result.best_seconds) {
        t->result.best_seconds = r.mean_secs();
        t->result.best_record_id = r.id;
      }
    for (const LibraryTarget& lib : libs) {
      std::vector<TuningRecord> lrecs = db->records(t->result.workload_id, lib.key);
      t->library_stored.push_back(!lrecs.empty());
      if (const TuningRecord* f = fastest(lrecs); f && f->mean_secs() < t->result.library_seconds) {
        t->result.library_seconds = f->mean_secs();
        t->result.library_record_id = f->id;
        t->result.library_target = lib.key;
        t->result.library_component = lib.component;
      }
    }
    states.push_back(std::move(t));
  }
  const size_t remaining = options.trials > prior_total ? options.trials - prior_total : 0;

  auto progress = [&](int task) {
    TuneProgress p;
    p.trials_done = prior_total + result.trials;
    p.trials_total = std::max(options.trials, prior_total);
    p.trials_run = result.trials;
    for (const auto& s : states)
      p.failed_run += s->result.failed;
    TuneResult partial;
    for (const auto& s : states)
      partial.tasks.push_back(s->result);
    p.best_gflops = partial.best_gflops();
    p.elapsed_seconds = elapsed();
    p.task = task;
    if (task >= 0) p.task_spec = states[static_cast<size_t>(task)]->result.spec;
    return p;
  };

  // Loads or computes the task's reference (once); says which, for the log.
  auto ensure_reference = [&](TaskState& t) -> std::string {
    if (t.has_reference) return {};
    ReferenceCacheInfo info;
    t.reference =
        load_or_compute_reference(t.workload, options.seed, options.reference_cache_dir, 0, &info);
    t.has_reference = true;
    if (info.from_cache)
      return fmt::format("reference loaded from cache ({}) in {:.2f} s", info.file, info.seconds);
    return fmt::format("reference computed in {:.2f} s", t.reference.compute_seconds);
  };

  // The library implementations of a task not yet in the database: measured like any
  // candidate (own worker, output checked), committed under the library's key.
  std::vector<std::unique_ptr<Measurer>> lib_measurers(libs.size());
  auto measure_libraries = [&](TaskState& t) {
    for (size_t l = 0; l < libs.size() && !stopped(); ++l) {
      if (t.library_stored[l]) continue;
      const LibraryTarget& lib = libs[l];
      if (std::string note = ensure_reference(t); !note.empty())
        spdlog::info("{}: {}", t.result.spec, note);
      if (!lib_measurers[l])
        lib_measurers[l] = std::make_unique<Measurer>(*lib.target, options.measure);
      MeasureResult r = lib_measurers[l]->measure(t.reference, {t.workload}).at(0);
      if (is_unsupported(r)) {
        spdlog::debug("{}: not offered by {}: {}", t.result.spec, lib.component, r.error);
        continue;
      }
      if (!r.ok() && stopped()) return; // possibly the interrupt's doing: not recorded
      int64_t id =
          db->commit_record(library_record(lib, t.result.workload_id, t.workload, r, options.seed));
      t.library_stored[l] = true;
      ++t.result.library_measured;
      if (!r.ok()) {
        spdlog::warn("{}: the {} implementation failed (record {}): {}: {}", t.result.spec,
                     lib.component, id, to_string(r.status), r.error);
        continue;
      }
      TuningRecord rec;
      rec.run_secs = r.run_secs;
      double secs = rec.mean_secs();
      spdlog::info("{}: {} implementation: {:.4g} ms = {:.2f} GFLOPS (record {})", t.result.spec,
                   lib.component, secs * 1e3, secs > 0 ? t.result.flops / secs * 1e-9 : 0.0, id);
      if (secs < t.result.library_seconds) {
        t.result.library_seconds = secs;
        t.result.library_record_id = id;
        t.result.library_target = lib.key;
        t.result.library_component = lib.component;
      }
    }
  };

  // Which implementation each task uses; with options.compare, both timed again side by side.
  auto choose = [&](TaskState& t) {
    TaskResult& tr = t.result;
    bool tuned_ok = std::isfinite(tr.best_seconds), lib_ok = std::isfinite(tr.library_seconds);
    if (options.compare && tuned_ok && lib_ok && !stopped()) {
      const LibraryTarget* lib = nullptr;
      for (const LibraryTarget& l : libs)
        if (l.component == tr.library_component) lib = &l;
      try {
        if (!lib)
          throw std::runtime_error("library target '" + tr.library_component + "' is not loaded");
        Function tuned = replay(db->record(tr.best_record_id), t.workload);
        CompareOptions co;
        co.repeats = options.compare_repeats;
        co.min_repeat_seconds = options.measure.min_repeat_seconds;
        co.seed = options.seed;
        co.timeout_s = 2 * (options.measure.build_timeout_s + options.measure.run_timeout_s) +
                       4.0 * co.repeats * co.min_repeat_seconds;
        CompareResult c = compare_interleaved(*target.target, tuned, *lib->target, t.workload, co);
        if (c.ok) {
          tr.compare_tuned_seconds = c.a_median;
          tr.compare_library_seconds = c.b_median;
        } else if (!stopped()) {
          tr.compare_error = c.error;
        }
      } catch (const std::exception& e) {
        tr.compare_error = e.what();
      }
      if (!tr.compare_error.empty())
        spdlog::warn("{}: the side-by-side comparison with {} failed: {}", tr.spec,
                     tr.library_component, tr.compare_error);
    }
    if (tr.compared())
      tr.chosen = tr.compare_library_seconds < tr.compare_tuned_seconds ? tr.library_component
                                                                        : target.component;
    else if (tuned_ok || lib_ok)
      tr.chosen = tr.library_seconds < tr.best_seconds ? tr.library_component : target.component;
  };

  auto finish = [&]() {
    for (const auto& s : states)
      choose(*s);
    for (const auto& s : states)
      result.tasks.push_back(s->result);
    result.records_total = 0;
    for (const auto& s : states)
      result.records_total += db->record_count(s->result.workload_id, target.target_string);
    result.tuning_seconds = elapsed();
    if (observer) observer->on_finish(result);
    return result;
  };

  if (remaining == 0) {
    spdlog::info("the database already holds {} records for these workloads on '{}' (budget "
                 "{}): nothing to tune",
                 prior_total, short_target_name(target.target_string), options.trials);
    if (observer) observer->on_start(progress(-1));
    for (const auto& s : states)
      measure_libraries(*s);
    return finish();
  }

  // ---- phase 2: components, design spaces, warm start, reference ----
  for (size_t i = 0; i < states.size(); ++i) {
    TaskState& t = *states[i];
    SearchContext& ctx = t.ctx;
    ctx.workload = t.workload;
    ctx.seed = mix_seed(options.seed, i, t.result.prior_records);
    std::vector<std::unique_ptr<PluginScheduleRule>> rules;
    for (const SpaceComponent& c : space.rules) {
      rules.push_back(host.create_schedule_rule(c.name, c.config));
      rules.back()->initialize(target.attrs);
    }
    for (const SpaceComponent& c : space.postprocs) {
      ctx.postprocs.push_back(host.create_postproc(c.name, c.config));
      ctx.postprocs.back()->initialize(target.attrs);
    }
    for (const SpaceComponent& c : space.mutators) {
      ctx.mutators.emplace_back(host.create_mutator(c.name, c.config), c.probability);
      ctx.mutators.back().first->initialize(target.attrs);
    }
    if (!model_name.empty()) {
      ctx.cost_model = host.create_cost_model(model_name);
      ctx.cost_model->initialize(target.attrs);
    }
    if (!options.cost_model_path.empty())
      t.model_path = states.size() == 1 ? options.cost_model_path
                                        : options.cost_model_path + "." + std::to_string(i);

    std::vector<std::string> rule_errors;
    ctx.design_spaces = generate_design_spaces(t.workload, rules, ctx.seed, &rule_errors);
    if (ctx.design_spaces.empty()) {
      std::string why;
      for (const auto& e : rule_errors)
        why += "\n  " + e;
      throw TuneError("workload '" + t.result.spec +
                      "': the schedule rules produced no design "
                      "space" +
                      (why.empty() ? std::string() : ":" + why));
    }
    for (const auto& e : rule_errors)
      spdlog::debug("{}: a schedule rule dropped a design space: {}", t.result.spec, e);

    // Warm start: the search starts from the best records and never proposes them again.
    std::vector<const TuningRecord*> sorted;
    for (const TuningRecord& r : prior_records[i])
      sorted.push_back(&r);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const TuningRecord* a, const TuningRecord* b) {
                       return a->mean_secs() < b->mean_secs();
                     });
    for (const TuningRecord* r : sorted) {
      try {
        ctx.measured_traces.push_back(Trace::from_json(r->trace_json));
        ctx.measured_seconds.push_back(r->mean_secs());
      } catch (const std::exception& e) {
        spdlog::warn("{}: record {} has an unreadable trace, not used: {}", t.result.spec, r->id,
                     e.what());
      }
    }
    if (!load_model(t)) train_from_records(t, prior_records[i]);
    prior_records[i].clear();

    t.strategy = make_search_strategy(host, strategy_name, strategy_config, ctx);
    std::string reference_note = ensure_reference(t);
    spdlog::info("{}: {} design space(s), {} record(s) in the database, {:.3g} GFLOP per call, "
                 "{}",
                 t.result.spec, ctx.design_spaces.size(), t.result.prior_records,
                 t.result.flops * 1e-9, reference_note);
    measure_libraries(t);
  }

  // ---- phase 3: the loop ----
  std::vector<SchedulerTask> sched_tasks;
  for (const auto& s : states)
    sched_tasks.push_back({s->result.spec, s->result.weight});
  TaskSchedulerOptions sched_opt;
  sched_opt.total_trials = remaining;
  sched_opt.per_task_cap = 0; // enforced here, where the records already stored count too
  sched_opt.batch_size = options.batch_size;
  std::unique_ptr<TaskScheduler> scheduler =
      options.scheduler == "round-robin" ? make_round_robin_scheduler(sched_tasks, sched_opt)
                                         : make_gradient_scheduler(sched_tasks, sched_opt);
  auto cap_left = [&](const TaskState& t) -> size_t {
    if (options.per_task_cap == 0) return std::numeric_limits<size_t>::max();
    size_t have = t.result.prior_records + t.result.trials;
    return options.per_task_cap > have ? options.per_task_cap - have : 0;
  };
  for (size_t i = 0; i < states.size(); ++i)
    if (cap_left(*states[i]) == 0) {
      states[i]->result.exhausted = true;
      scheduler->mark_exhausted(static_cast<int>(i));
    }

  Measurer measurer(*target.target, options.measure);
  const size_t chunk = chunk_size(options.measure);
  if (observer) observer->on_start(progress(-1));

  while (!stopped()) {
    int ti = scheduler->next_task();
    if (ti < 0) break;
    TaskState& t = *states[static_cast<size_t>(ti)];
    size_t n = std::min(scheduler->trials_for(ti), cap_left(t));
    if (n == 0) {
      t.result.exhausted = true;
      scheduler->mark_exhausted(ti);
      continue;
    }
    std::vector<std::shared_ptr<Schedule>> batch = t.strategy->next_batch(n);
    if (batch.empty()) {
      t.result.exhausted = true;
      t.result.diagnosis = search_summary(t.strategy->stats());
      spdlog::info("{}: the search proposes no more candidates ({})", t.result.spec,
                   t.result.diagnosis);
      scheduler->mark_exhausted(ti);
      continue;
    }
    spdlog::debug("{}: measuring a batch of {}", t.result.spec, batch.size());
    const std::vector<ArgInfo> args = arg_info_of(t.workload);
    std::vector<std::shared_ptr<Schedule>> measured;
    std::vector<double> measured_secs;
    std::mutex commit_mutex;
    for (size_t begin = 0; begin < batch.size() && !stopped(); begin += chunk) {
      size_t end = std::min(batch.size(), begin + chunk);
      std::vector<Function> funcs;
      for (size_t i = begin; i < end; ++i)
        funcs.push_back(batch[i]->func());
      measurer.measure(t.reference, funcs, [&](size_t i, const MeasureResult& r) {
        std::lock_guard<std::mutex> lock(commit_mutex);
        // After a stop request a failure may be the interrupt's doing (a worker that got the
        // terminal's SIGINT): only successful measurements are kept from then on.
        if (!r.ok() && stopped()) return;
        const std::shared_ptr<Schedule>& sch = batch[begin + i];
        TuningRecord rec;
        rec.workload_id = t.result.workload_id;
        rec.target = target.target_string;
        rec.trace_json = sch->trace().to_json();
        if (r.ok()) {
          rec.run_secs = r.run_secs;
        } else {
          rec.error = std::string(to_string(r.status)) + (r.error.empty() ? "" : ": " + r.error);
        }
        rec.args = args;
        rec.seed = options.seed;
        rec.plugins = plugins;
        int64_t id = db->commit_record(rec);
        double secs = rec.mean_secs();
        ++t.result.trials;
        ++result.trials;
        if (!r.ok()) ++t.result.failed;
        if (secs < t.result.best_seconds) {
          t.result.best_seconds = secs;
          t.result.best_record_id = id;
        }
        measured.push_back(sch);
        measured_secs.push_back(secs);
        if (observer) observer->on_trial(progress(ti), r);
      });
    }
    if (!measured.empty()) {
      // The strategy trains the cost model on the batch (evolutionary_search.cpp).
      t.strategy->notify(measured, measured_secs);
      save_model(t);
    }
    scheduler->report(ti, measured.size(), t.result.best_seconds);
    spdlog::debug("{}: batch done, {} trials, best {:.4g} ms", t.result.spec, t.result.trials,
                  t.result.best_seconds * 1e3);
    if (observer) observer->on_batch(progress(ti));
    if (cap_left(t) == 0) {
      t.result.exhausted = true;
      scheduler->mark_exhausted(ti);
    }
  }
  result.interrupted = stopped();

  // ---- phase 4: the fastest records measured again before one is called the best ----
  if (!result.interrupted && options.verify.top > 0 && result.trials > 0) {
    for (const auto& s : states) {
      if (stopped()) break;
      TaskState& t = *s;
      if (!std::isfinite(t.result.best_seconds)) continue;
      VerifyResult v = verify_best(*db, measurer, t.reference, t.workload, t.result.workload_id,
                                   target.target_string, options.verify, stop);
      if (v.interrupted || !v.best_record_id) continue;
      t.result.recorded_best_seconds = t.result.best_seconds;
      t.result.best_seconds = v.best_seconds;
      t.result.best_record_id = v.best_record_id;
      t.result.verified = v.records.size();
      const VerifiedRecord* first = v.records.empty() ? nullptr : &v.records.front();
      spdlog::info("{}: the {} fastest records measured again ({} rounds, fresh workers): best "
                   "is record {} at {:.2f} GFLOPS (mean over all its times); the fastest "
                   "single measurement was {:.2f} GFLOPS (record {})",
                   t.result.spec, v.records.size(), options.verify.rounds, v.best_record_id,
                   gflops_of(t.result.flops, v.best_seconds),
                   gflops_of(t.result.flops, t.result.recorded_best_seconds),
                   first ? first->record_id : 0);
    }
    result.interrupted = stopped();
  }

  if (!result.interrupted && result.trials == 0) {
    std::string why;
    for (const auto& s : states)
      why += "\n  " + s->result.spec + ": " +
             (s->result.diagnosis.empty() ? search_summary(s->strategy->stats())
                                          : s->result.diagnosis);
    throw TuneError("no candidate could be measured: every sample was refused" + why);
  }
  for (const auto& s : states)
    if (s->result.trials == 0 && s->result.prior_records == 0 && s->result.exhausted &&
        !result.interrupted)
      spdlog::warn("{}: nothing measured: {}", s->result.spec, s->result.diagnosis);
  return finish();
}

} // namespace mt
