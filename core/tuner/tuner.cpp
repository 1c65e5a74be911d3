// The tuning loop (see tuner.h): a Tuner drives the phases of one run over its tasks
// (task_context.h); what follows each measurement is its measure callbacks' business
// (measure_callback.h).
#include "core/tuner/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/database/database.h"
#include "core/measure/cold_inputs.h"
#include "core/measure/library_candidate.h"
#include "core/plugin/plugin_host.h"
#include "core/scheduler/task_scheduler.h"
#include "core/tuner/add_to_database.h"
#include "core/tuner/report_progress.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/task_context.h"
#include "core/tuner/update_cost_model.h"
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
  return gflops_of(flops, best_seconds);
}

double TaskResult::library_gflops() const {
  return gflops_of(flops, library_seconds);
}

double TaskResult::ratio_to_library() const {
  double t = tuned_gflops(), l = library_gflops();
  return t > 0 && l > 0 ? t / l : 0;
}

double TaskResult::chosen_seconds() const {
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

// Wall seconds since construction (TaskResult::time's parts).
class Stopwatch {
public:
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

private:
  Clock::time_point start_ = Clock::now();
};

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

size_t chunk_size(const MeasureOptions& m) {
  // Measured in chunks so that a stop request is honoured within seconds, not a whole batch.
  size_t workers = m.parallel_builds > 0 ? static_cast<size_t>(m.parallel_builds)
                                         : std::max<size_t>(1, std::thread::hardware_concurrency());
  return std::max<size_t>(workers, 8);
}

// One run of tune(): the run's resolved components and its tasks, driven phase by phase.
class Tuner {
public:
  Tuner(PluginHost& host, const std::vector<TuneTask>& tasks, const TuneOptions& options,
        TuneObserver* observer, const std::atomic<bool>* stop)
      : host_(host), task_list_(tasks), options_(options), observer_(observer), stop_(stop),
        start_(Clock::now()) {}

  TuneResult run() {
    check_options();
    resolve_components();
    file_tasks();
    if (remaining_ == 0) {
      spdlog::info("the database already holds {} records for these workloads on '{}' (budget "
                   "{}): nothing to tune",
                   prior_total_, short_target_name(target_.target_string), options_.trials);
      if (observer_) observer_->on_start(progress(-1));
      for (const auto& t : tasks_)
        t->measure_libraries(*db_, libs_, lib_measurers_, options_, stop_);
      return finish();
    }
    build_searches();
    make_scheduler();
    make_callbacks();
    loop();
    verify();
    check_something_measured();
    return finish();
  }

private:
  bool stopped() const { return stop_ && stop_->load(); }
  // The time budget is spent once something was measured in this run past it.
  bool out_of_time() const { return trials_run() > 0 && elapsed() >= options_.time_budget_seconds; }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // Bad options fail before anything is opened.
  void check_options() {
    if (task_list_.empty()) throw std::invalid_argument("tune: no workload to tune");
    if (options_.db_path.empty()) throw std::invalid_argument("tune: no database path given");
    std::tie(strategy_name_, strategy_config_) = split_component_spec(options_.strategy);
    strategy_name_ = resolve_strategy_name(strategy_name_);
    if (strategy_config_.empty()) strategy_config_ = options_.strategy_config;
    if (strategy_config_.empty() && strategy_name_ == kEvolutionarySearch)
      strategy_config_ = evolutionary_config(options_.evolutionary);
    if (!host_.find(ComponentKind::SearchStrategy, strategy_name_)) {
      std::string names;
      for (const ComponentInfo& c : host_.components(ComponentKind::SearchStrategy))
        names += (names.empty() ? "" : ", ") + c.name;
      throw std::invalid_argument("tune: search strategy '" + strategy_name_ +
                                  "' is not registered by any loaded plugin (strategies: " +
                                  (names.empty() ? "none" : names) + ")");
    }
    if (options_.scheduler != "gradient" && options_.scheduler != "round-robin")
      throw std::invalid_argument("tune: unknown task scheduler '" + options_.scheduler +
                                  "' (gradient, round-robin)");
  }

  // The target, the search space, the cost model, the library targets and the database.
  void resolve_components() {
    target_ = setup_target(host_, options_.target);
    // A target whose products round their operands to bf16 is checked against the reference
    // at bf16's precision.
    if (rounds_products_to_bf16(target_))
      options_.measure = with_bf16_products_tolerance(options_.measure);
    space_ = resolve_search_space(host_, target_, options_.space);
    if (space_.rules.empty())
      throw TuneError("target '" + target_.component +
                      "': no schedule rule is available (is the "
                      "std_rules plugin on the plugin path?)");
    model_name_ = resolve_cost_model(host_, options_.cost_model);
    std::vector<std::pair<ComponentKind, std::string>> used{
        {ComponentKind::Target, target_.component}};
    for (ComponentKind kind :
         {ComponentKind::ScheduleRule, ComponentKind::Postproc, ComponentKind::Mutator})
      for (const SpaceComponent& c : space_.list(kind))
        used.push_back({kind, c.name});
    if (!model_name_.empty()) used.push_back({ComponentKind::CostModel, model_name_});
    used.push_back({ComponentKind::SearchStrategy, strategy_name_});
    plugins_ = plugins_used(host_, used);

    // A library competes with the tuned kernels on the same kind of device only: oneDNN (a
    // CPU library) says nothing about a kernel for a GPU target, and cuBLAS nothing about a
    // CPU one.
    const std::string target_kind = device_kind(target_.device_json);
    bool gpu = is_gpu_kind(target_kind);
    std::vector<std::string> lib_names;
    for (const std::string& n : options_.library_targets)
      if (n != kAutoLibrary)
        lib_names.push_back(n);
      else if (!gpu)
        lib_names.push_back("onednn.cpu");
      else if (target_kind == "cuda")
        lib_names.push_back("cublas");
    libs_ = open_library_targets(host_, lib_names, target_.component);
    for (auto it = libs_.begin(); it != libs_.end();) {
      std::string kind = device_kind(it->target->describe_device());
      // A CPU library competes with any CPU target; a GPU library only on its own kind of GPU
      // (cuBLAS, kind "cuda", not with kernels tuned for an OpenCL or ROCm device).
      if (is_gpu_kind(kind) == gpu && (!gpu || kind == target_kind)) {
        ++it;
        continue;
      }
      if (gpu && is_gpu_kind(kind))
        spdlog::info("library target '{}' ({}) runs on another kind of GPU than {} ({}): it does "
                     "not compete",
                     it->component, kind, target_.component, target_kind);
      else
        spdlog::info("library target '{}' ({}) runs on another kind of device than {} ({}): it "
                     "does not compete",
                     it->component, gpu ? "a CPU library" : "a GPU library", target_.component,
                     gpu ? "a GPU" : "a CPU");
      it = libs_.erase(it);
    }
    lib_measurers_.resize(libs_.size());
    if (gpu && host_.find(ComponentKind::Target, "llvm.cpu")) {
      try {
        cpu_reference_ = std::make_unique<TargetSetup>(setup_target(host_, "llvm.cpu"));
      } catch (const std::exception& e) {
        spdlog::debug("llvm.cpu unavailable for references ({}): the interpreter computes them",
                      e.what());
      }
    }
    db_ = Database::open(options_.db_path);
    resolve_cold_inputs(gpu);
    result_.target = target_.target_string;
    result_.target_component = target_.component;
  }

  // TuneOptions::cold_inputs as the policy of this run, checked against the database's:
  // cold-input times are slower than hot ones for the same kernel, and a best chosen across
  // both would be a hot record for no reason of its own.
  void resolve_cold_inputs(bool gpu) {
    const std::string& mode = options_.cold_inputs;
    std::optional<ColdPolicy> given = parse_cold_policy(mode);
    if (mode != "auto" && !given)
      throw std::invalid_argument("tune: cold inputs '" + mode +
                                  "': expected auto, on, off or memory-bound");
    std::optional<std::string> stored = db_->record_setting(kMeasuredInputs);
    // "auto" continues a database the way its records were timed (the same command resumes
    // it, and a model tuned into a database of workloads adds to it); a new one takes the
    // default for its tasks.
    cold_policy_ = given                          ? *given
                   : stored                       ? cold_policy_of(stored, options_.db_path)
                   : options_.model_tasks && !gpu ? ColdPolicy::memory_bound
                                                  : ColdPolicy::off;
    if (!given && stored)
      spdlog::info("cold inputs '{}': as {}'s records were timed (--cold-inputs auto)",
                   to_string(cold_policy_), options_.db_path);
    if (cold_policy_ != ColdPolicy::off && gpu)
      throw TuneError("cold inputs are host memory; target '" + target_.component +
                      "' runs on a GPU (use --cold-inputs off" +
                      (stored ? ", and a database of hot records" : std::string()) + ")");
    if (!stored) {
      db_->set_setting(kMeasuredInputs, to_string(cold_policy_));
    } else if (cold_policy_of(stored, options_.db_path) != cold_policy_) {
      throw TuneError(fmt::format(
          "{}: its records were timed with cold inputs '{}', this run would time them '{}' "
          "({}); the times would not compare. Tune into another --db, or pass --cold-inputs {} "
          "(or auto)",
          options_.db_path, *stored, to_string(cold_policy_), "--cold-inputs " + mode, *stored));
    }
    if (cold_policy_ != ColdPolicy::off)
      spdlog::info(
          "cold inputs ({}): each call on the next of {} MB of input copies",
          cold_policy_ == ColdPolicy::on
              ? std::string("every task")
              : fmt::format("tasks under {:g} flops per input byte", kColdInputsFlopsPerByte),
          (options_.measure.cold_inputs_bytes ? options_.measure.cold_inputs_bytes
                                              : default_cold_span_bytes()) >>
              20);
  }

  // Phase 1: the workloads and what the database already holds for them.
  void file_tasks() {
    for (size_t i = 0; i < task_list_.size(); ++i) {
      auto t = std::make_unique<TaskContext>(i);
      t->file_in_database(*db_, task_list_[i], target_.target_string, libs_);
      t->result.cold_inputs = cold_inputs_under(cold_policy_, t->workload, t->result.flops);
      prior_total_ += t->result.prior_records;
      tasks_.push_back(std::move(t));
    }
    remaining_ = options_.trials > prior_total_ ? options_.trials - prior_total_ : 0;
  }

  // Phase 2: components, design spaces, warm start, reference, library implementations.
  void build_searches() {
    TaskSetup setup{host_,
                    options_,
                    target_,
                    space_,
                    model_name_,
                    strategy_name_,
                    strategy_config_,
                    tasks_.size(),
                    cpu_reference_.get(),
                    nullptr,
                    false,
                    nullptr};
    WarmStart warm_start;
    if (!model_name_.empty() && !options_.cost_model_per_task) {
      setup.run_model = host_.create_cost_model(model_name_);
      setup.run_model->initialize(target_.attrs);
      setup.run_model_loaded = load_cost_model(*setup.run_model, options_.cost_model_path, "");
      setup.warm_start = &warm_start;
    }
    for (const auto& tp : tasks_) {
      TaskContext& t = *tp;
      Stopwatch watch;
      t.build_search(setup);
      std::string reference_note = t.ensure_reference(options_);
      spdlog::info("{}: {} design space(s), {} record(s) in the database, {:.3g} GFLOP per call, "
                   "{}{}",
                   t.result.spec, t.ctx.design_spaces.size(), t.result.prior_records,
                   t.result.flops * 1e-9, reference_note,
                   t.result.cold_inputs ? "; timed on cold inputs" : "");
      t.measure_libraries(*db_, libs_, lib_measurers_, options_, stop_);
      t.result.time.setup += watch.seconds();
    }
    if (!warm_start.schedules.empty()) {
      Stopwatch watch;
      setup.run_model->update(warm_start.schedules, warm_start.seconds);
      spdlog::info("cost model trained on {} database record(s) of {} task(s) ({:.1f} s)",
                   warm_start.schedules.size(), warm_start.tasks, watch.seconds());
    }
  }

  void make_scheduler() {
    std::vector<SchedulerTask> sched_tasks;
    for (const auto& t : tasks_)
      sched_tasks.push_back({t->result.spec, t->result.weight});
    TaskSchedulerOptions sched_opt;
    sched_opt.total_trials = remaining_;
    sched_opt.per_task_cap = 0; // enforced here, where the records already stored count too
    sched_opt.first_pass_share = options_.first_pass_share;
    sched_opt.batch_size =
        options_.batch_size > 0 ? options_.batch_size : auto_batch_size(remaining_, tasks_.size());
    spdlog::debug("batches of {} candidates", sched_opt.batch_size);
    scheduler_ = options_.scheduler == "round-robin"
                     ? make_round_robin_scheduler(sched_tasks, sched_opt)
                     : make_gradient_scheduler(sched_tasks, sched_opt);
    for (const auto& t : tasks_)
      if (cap_left(*t) == 0) mark_exhausted(*t);
  }

  // The built-in callbacks first, in the order they depend on each other (a trial is
  // committed before anyone hears of it), then the application's.
  void make_callbacks() {
    callbacks_.push_back(
        std::make_shared<AddToDatabase>(*db_, target_.target_string, options_.seed, plugins_));
    callbacks_.push_back(std::make_shared<UpdateCostModel>());
    if (observer_)
      callbacks_.push_back(std::make_shared<ReportProgress>(
          *observer_, [this](int task) { return progress(task); }));
    for (const auto& c : options_.callbacks)
      if (c) callbacks_.push_back(c);
  }

  size_t cap_left(const TaskContext& t) const {
    if (options_.per_task_cap == 0) return std::numeric_limits<size_t>::max();
    size_t have = t.result.prior_records + t.result.trials;
    return options_.per_task_cap > have ? options_.per_task_cap - have : 0;
  }

  void mark_exhausted(TaskContext& t) {
    t.result.exhausted = true;
    scheduler_->mark_exhausted(static_cast<int>(t.index));
  }

  size_t trials_run() const {
    size_t n = 0;
    for (const auto& t : tasks_)
      n += t->result.trials;
    return n;
  }

  TuneProgress progress(int task) const {
    TuneProgress p;
    p.trials_run = trials_run();
    p.trials_done = prior_total_ + p.trials_run;
    p.trials_total = std::max(options_.trials, prior_total_);
    TuneResult partial;
    for (const auto& t : tasks_) {
      p.failed_run += t->result.failed;
      partial.tasks.push_back(t->result);
    }
    p.best_gflops = partial.best_gflops();
    p.elapsed_seconds = elapsed();
    p.task = task;
    if (task >= 0) p.task_spec = tasks_[static_cast<size_t>(task)]->result.spec;
    return p;
  }

  // Phase 3: until the budget is spent, the scheduler's task measures a batch of its
  // strategy's candidates.
  void loop() {
    measurer_ = std::make_unique<Measurer>(*target_.target, options_.measure);
    if (observer_) observer_->on_start(progress(-1));
    while (!stopped()) {
      int ti = scheduler_->next_task();
      if (ti < 0) break;
      TaskContext& t = *tasks_[static_cast<size_t>(ti)];
      size_t n = std::min(scheduler_->trials_for(ti), cap_left(t));
      if (n == 0) {
        mark_exhausted(t);
        continue;
      }
      // A task's first batch leads with the unscheduled workload (task_context.h).
      std::vector<std::shared_ptr<Schedule>> batch;
      std::shared_ptr<Schedule> base = t.take_unscheduled_candidate();
      if (base) batch.push_back(base);
      if (batch.size() < n) {
        Stopwatch search;
        std::vector<std::shared_ptr<Schedule>> proposed = t.strategy->next_batch(n - batch.size());
        t.result.time.search += search.seconds();
        batch.insert(batch.end(), proposed.begin(), proposed.end());
      }
      if (batch.empty()) {
        t.result.diagnosis = search_summary(t.strategy->stats());
        spdlog::info("{}: the search proposes no more candidates ({})", t.result.spec,
                     t.result.diagnosis);
        mark_exhausted(t);
        continue;
      }
      spdlog::debug("{}: measuring a batch of {}", t.result.spec, batch.size());
      std::vector<MeasuredTrial> measured;
      if (base && std::isfinite(t.unscheduled_seconds)) {
        measured.push_back(unscheduled_from_reference(t, base));
        batch.erase(batch.begin());
      }
      Stopwatch measuring;
      std::vector<MeasuredTrial> rest = measure_batch(t, batch);
      t.result.time.measuring += measuring.seconds();
      for (const MeasuredTrial& m : rest) {
        t.result.time.builds += m.result.build_seconds;
        t.result.time.runs += m.result.run_wall_seconds;
      }
      measured.insert(measured.end(), rest.begin(), rest.end());
      Stopwatch updates;
      for (const auto& c : callbacks_)
        c->apply(t, measured);
      t.result.time.updates += updates.seconds();
      scheduler_->report(ti, measured.size(), t.result.best_seconds);
      spdlog::debug("{}: batch done, {} trials, best {:.4g} ms", t.result.spec, t.result.trials,
                    t.result.best_seconds * 1e3);
      if (cap_left(t) == 0) mark_exhausted(t);
      if (out_of_time()) {
        result_.time_budget_reached = true;
        spdlog::info("time budget of {:g} s reached after {:.1f} s: no further candidates",
                     options_.time_budget_seconds, elapsed());
        break;
      }
    }
    result_.trials = trials_run();
    result_.interrupted = stopped();
  }

  // The unscheduled workload's trial when its reference run timed it already (a slow task,
  // task_context.h): that time, not a second run of seconds.
  MeasuredTrial unscheduled_from_reference(TaskContext& t, std::shared_ptr<Schedule> base) {
    MeasuredTrial trial{std::move(base), MeasureResult{}, 0};
    trial.result.run_secs = {t.unscheduled_seconds};
    spdlog::info("{}: the untuned baseline (outer loops parallel) takes {:.3g} s per call (its "
                 "reference run); not measured again",
                 t.result.spec, t.unscheduled_seconds);
    for (const auto& c : callbacks_)
      c->on_trial(t, trial);
    return trial;
  }

  // Measured in chunks so that a stop request is honoured within seconds, not a whole batch;
  // each result goes through the callbacks' on_trial as soon as it is known.
  std::vector<MeasuredTrial> measure_batch(TaskContext& t,
                                           const std::vector<std::shared_ptr<Schedule>>& batch) {
    const size_t chunk = chunk_size(options_.measure);
    std::vector<MeasuredTrial> measured;
    std::mutex trial_mutex;
    for (size_t begin = 0;
         begin < batch.size() && !stopped() && !(measured.size() && out_of_time());
         begin += chunk) {
      size_t end = std::min(batch.size(), begin + chunk);
      std::vector<Function> funcs;
      for (size_t i = begin; i < end; ++i)
        funcs.push_back(batch[i]->func());
      measurer_->set_cold_inputs(t.result.cold_inputs);
      measurer_->set_weights(t.weights);
      measurer_->measure(t.reference, funcs, [&](size_t i, const MeasureResult& r) {
        std::lock_guard<std::mutex> lock(trial_mutex);
        // After a stop request a failure may be the interrupt's doing (a worker that got the
        // terminal's SIGINT): only successful measurements are kept from then on.
        if (!r.ok() && stopped()) return;
        MeasuredTrial trial{batch[begin + i], r, 0};
        for (const auto& c : callbacks_)
          c->on_trial(t, trial);
        measured.push_back(std::move(trial));
      });
    }
    return measured;
  }

  // Phase 4: the fastest records measured again before one is called the best.
  void verify() {
    if (result_.interrupted || options_.verify.top == 0 || result_.trials == 0) return;
    for (const auto& tp : tasks_) {
      if (stopped()) break;
      verify_task(*tp);
    }
    result_.interrupted = stopped();
  }

  void verify_task(TaskContext& t) {
    if (!std::isfinite(t.result.best_seconds)) return;
    Stopwatch watch;
    measurer_->set_cold_inputs(t.result.cold_inputs);
    measurer_->set_weights(t.weights);
    VerifyResult v = verify_best(*db_, *measurer_, t.reference, t.workload, t.result.workload_id,
                                 target_.target_string, options_.verify, stop_, &t.verified_ids);
    t.result.time.checks += watch.seconds();
    for (const VerifiedRecord& r : v.records)
      if (std::isfinite(r.mean_seconds)) t.verified_ids.insert(r.record_id);
    if (v.interrupted) return;
    if (!v.best_record_id) {
      // Said, not skipped: the best reported is then a single measurement.
      size_t remeasured = 0;
      for (const VerifiedRecord& r : v.records)
        remeasured += std::isfinite(r.mean_seconds);
      spdlog::warn("{}: the fastest record could not be measured again ({} record(s) tried, {} "
                   "measured); the best stays its single measurement",
                   t.result.spec, v.records.size(), remeasured);
      return;
    }
    if (t.result.verified == 0) t.result.recorded_best_seconds = t.result.best_seconds;
    t.result.best_seconds = v.best_seconds;
    t.result.best_record_id = v.best_record_id;
    t.result.verified += v.records.size();
    const VerifiedRecord* first = v.records.empty() ? nullptr : &v.records.front();
    spdlog::info("{}: the {} fastest records measured again ({} rounds, fresh workers): best "
                 "is record {} at {:.2f} GFLOPS (mean over all its times); the fastest "
                 "single measurement was {:.2f} GFLOPS (record {})",
                 t.result.spec, v.records.size(), options_.verify.rounds, v.best_record_id,
                 gflops_of(t.result.flops, v.best_seconds),
                 gflops_of(t.result.flops, t.result.recorded_best_seconds),
                 first ? first->record_id : 0);
  }

  // Every sample refused is an error, also when the unscheduled workload was measured: the
  // search itself gave nothing (a failing strategy, a postprocessor refusing all). Not an
  // error: a small space whose every candidate is in the database already (a resumed run
  // asking for more records than the space holds); each such task is named.
  void check_something_measured() const {
    size_t baselines = 0;
    bool all_diagnosed = true, all_measured_before = true;
    for (const auto& t : tasks_) {
      baselines += t->unscheduled_in_run;
      all_diagnosed = all_diagnosed && !t->result.diagnosis.empty();
      const bool before = measured_before(*t);
      all_measured_before = all_measured_before && before;
      if (before && t->result.trials == 0)
        spdlog::warn("{}: its design space is exhausted: every candidate the search proposes is "
                     "in the database already ({} record(s); {})",
                     t->result.spec, t->result.prior_records, search_summary(t->strategy->stats()));
    }
    const size_t searched = result_.trials > baselines ? result_.trials - baselines : 0;
    if (!result_.interrupted && !(result_.trials == 0 && all_measured_before) &&
        (result_.trials == 0 || (searched == 0 && all_diagnosed))) {
      std::string why;
      for (const auto& t : tasks_)
        why += "\n  " + t->result.spec + ": " +
               (t->result.diagnosis.empty() ? search_summary(t->strategy->stats())
                                            : t->result.diagnosis);
      throw TuneError(std::string(result_.trials == 0
                                      ? "no candidate could be measured"
                                      : "the search measured no candidate (only the unscheduled "
                                        "workload was)") +
                      ": every sample was refused" + why);
    }
    for (const auto& t : tasks_)
      if (t->result.trials <= (t->unscheduled_in_run ? 1u : 0u) && t->result.prior_records == 0 &&
          t->result.exhausted && !result_.interrupted)
        spdlog::warn("{}: nothing measured: {}", t->result.spec, t->result.diagnosis);
  }

  // An exhausted task whose samples were all valid, only measured before (stored records).
  static bool measured_before(const TaskContext& t) {
    if (!t.result.exhausted || t.result.prior_records == 0 || !t.strategy) return false;
    const SearchStats& st = t.strategy->stats();
    return st.duplicates > 0 && st.replay_failed == 0 && st.rejected == 0;
  }

  bool reverify_needed(const TaskContext& t) const {
    return options_.verify.top > 0 && options_.verify.rounds > 0 && result_.trials > 0 &&
           !result_.interrupted && !stopped() && t.result.verified > 0 &&
           t.result.best_record_id != 0 && !t.verified_ids.count(t.result.best_record_id);
  }

  // Each task's implementation chosen, the result completed, the observer told.
  TuneResult finish() {
    for (const auto& t : tasks_)
      // The comparison's times join the best record's; when they make it slower than a record
      // never measured again, that one is the database's best now (what a model's tuned
      // kernels use): it is measured again in turn, and compared again, so that the best named
      // is never a single lucky time (a few times at most).
      for (int again = 0;; ++again) {
        Stopwatch watch;
        t->choose(*db_, libs_, target_, options_, stop_);
        t->result.time.checks += watch.seconds();
        if (again == 5 || !reverify_needed(*t)) break;
        verify_task(*t);
      }
    release_cold_inputs(); // hundreds of MB an embedding application should get back
    for (const auto& t : tasks_)
      result_.tasks.push_back(t->result);
    result_.records_total = 0;
    for (const auto& t : tasks_)
      result_.records_total += db_->record_count(t->result.workload_id, target_.target_string);
    result_.tuning_seconds = elapsed();
    if (observer_) observer_->on_finish(result_);
    return std::move(result_);
  }

  PluginHost& host_;
  const std::vector<TuneTask>& task_list_;
  TuneOptions options_; // a copy: measure.cold_inputs is resolved in it
  TuneObserver* observer_;
  const std::atomic<bool>* stop_;
  const Clock::time_point start_;

  std::string strategy_name_, strategy_config_;
  ColdPolicy cold_policy_ = ColdPolicy::off; // TuneOptions::cold_inputs, "auto" resolved
  TargetSetup target_;
  std::unique_ptr<TargetSetup> cpu_reference_; // GPU runs: large references (task_context.h)
  SearchSpace space_;
  std::string model_name_; // empty = no cost model
  std::vector<PluginInfo> plugins_;
  std::vector<LibraryTarget> libs_;
  std::vector<std::unique_ptr<Measurer>> lib_measurers_; // per library target, on first use
  std::unique_ptr<Database> db_;

  std::vector<std::unique_ptr<TaskContext>> tasks_;
  size_t prior_total_ = 0; // records in the database for the tasks when the run started
  size_t remaining_ = 0;   // trials this run may measure
  std::unique_ptr<TaskScheduler> scheduler_;
  std::unique_ptr<Measurer> measurer_;
  std::vector<std::shared_ptr<MeasureCallback>> callbacks_;
  TuneResult result_;
};

} // namespace

size_t auto_batch_size(size_t trials, size_t tasks) {
  size_t per_task = trials / std::max<size_t>(tasks, 1);
  size_t quarter = (per_task / 4 + 7) / 8 * 8;
  return std::clamp<size_t>(quarter, 16, 64);
}

TuneResult tune(PluginHost& host, const std::vector<TuneTask>& tasks, const TuneOptions& options,
                TuneObserver* observer, const std::atomic<bool>* stop) {
  return Tuner(host, tasks, options, observer, stop).run();
}

} // namespace mt
