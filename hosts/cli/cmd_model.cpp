// `metatune model run|tune|bench|compile --config FILE | --hf DIR [--weights FILE] [--seq N]
// [--batch B] [--tokens 1,2,...]`: a model instantiated from a config tree of the loaded
// layers (or a Hugging Face checkpoint folder), fused into kernels, one task per distinct
// workload.
//   run    builds the kernels for an implementation policy (untuned; with --db the faster of
//          the tuned and the library record per task) and runs the model, printing the
//          latency, what ran per task (--profile: and its time), a decoder's next token;
//          --save-output writes the first output as .npy.
//   tune   tunes the tasks under one budget into --db (weights: how many kernels run each),
//          with the library (oneDNN) measured per task as in `metatune tune`.
//   bench  one run of each policy, same weights and inputs: untuned, library (oneDNN where it
//          implements a task), and with --db tuned and best; latency and a per-task breakdown.
//   compile  the ahead-of-time artifact --out DIR (model_compile.h): kernels.so, model.json,
//          weights.safetensors, run by runtime/ without LLVM.
//   generate  a decoder's tokens from a prompt with the key/value cache (model_generate.h).
//   chat      a conversation with an instruct checkpoint through its chat template (model_chat.h).
//   embed     sentence embeddings from an encoder checkpoint (model_embed.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/graph/generator.h"
#include "core/graph/sequence_buckets.h"
#include "core/ir/structural.h"
#include "core/tuner/target_setup.h"
#include "core/tuner/tune_log.h"
#include "core/tuner/tune_progress.h"
#include "hosts/cli/command.h"
#include "hosts/cli/model_chat.h"
#include "hosts/cli/model_choice.h"
#include "hosts/cli/model_compile.h"
#include "hosts/cli/model_embed.h"
#include "hosts/cli/model_execution.h"
#include "hosts/cli/model_generate.h"
#include "hosts/cli/model_source.h"
#include "hosts/cli/npy_file.h"
#include "hosts/cli/stop_signal.h"
#include "hosts/cli/tune_flags.h"
#include "hosts/cli/tune_report.h"

namespace mt::cli {

namespace {

struct ModelRunOptions {
  ModelSourceOptions source;
  std::string db, target = "llvm", implementations, save_output, save_outputs, log_level;
  std::string fpmath = "f32";
  std::vector<std::string> policies; // bench
  int repeats = 3;
  bool profile = false;
  bool quiet = false;
  std::vector<std::string> libraries{"onednn.cpu"};
};

void print_next_token(const LoadedModel& m, const NDArray& logits) {
  const float* last = logits.data_as<float>() + (m.seq - 1) * m.vocab;
  int64_t best = std::max_element(last, last + m.vocab) - last;
  std::printf("next token after the last position: %lld (logit %.4f)\n",
              static_cast<long long>(best), last[best]);
}

int run_bucketed(const ModelRunOptions& o, const LoadedModel& m, const KernelSelector& selector,
                 KernelPolicy policy) {
  auto start = std::chrono::steady_clock::now();
  BucketedModel model(*m.host, m.config, o.source.buckets, m.batch, m.encoder, selector, m.params,
                      m.token_types);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const NDArray* mask = m.encoder ? &m.inputs.at(1) : nullptr;
  const NDArray* types = m.token_types ? &m.inputs.at(2) : nullptr;
  std::vector<NDArray> out = model.run(m.inputs[0], mask, types); // warm-up
  std::vector<double> runs;
  for (int r = 0; r < std::max(1, o.repeats); ++r) {
    auto s = std::chrono::steady_clock::now();
    out = model.run(m.inputs[0], mask, types);
    runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(runs.begin(), runs.end());
  std::printf("built %zu buckets in %.1f s; %lld tokens run in the bucket of %lld: latency %.2f "
              "ms (median of %zu runs; %s kernels)\n",
              model.buckets().size(), build_s, static_cast<long long>(m.seq),
              static_cast<long long>(model.bucket_for(m.seq).seq), 1e3 * runs[runs.size() / 2],
              runs.size(), to_string(policy));
  if (!m.encoder) print_next_token(m, out.at(0));
  if (!o.save_output.empty()) save_npy(out.at(0), o.save_output);
  return 0;
}

int run_model(const ModelRunOptions& o) {
  configure_logging(o.log_level);
  LoadedModel m = load_model(o.source);
  std::unique_ptr<Database> db = open_read_only(o.db);
  KernelPolicy policy = policy_of(o.implementations, db.get());
  std::printf("%s\n", m.describe().c_str());
  std::fflush(stdout);
  KernelSelector selector(*m.host, selection(policy, o.target, o.libraries, db.get(), o.fpmath));
  if (!o.source.buckets.empty()) return run_bucketed(o, m, selector, policy);
  CompiledModel c = compile_model(m, selector, o.quiet);
  ModelTiming t = time_model(*c.executor, m.inputs, o.repeats);
  std::printf("built in %.1f s; latency %.2f ms (median of %zu runs; %s kernels: %s)\n",
              c.build_seconds, 1e3 * t.median(), t.runs.size(), to_string(policy),
              c.summary().c_str());
  if (const PackedParams* packed = c.executor->packed_params()) print_packed_weights(*packed);
  const MemoryPlan& plan = c.executor->memory_plan();
  std::printf("intermediates: %.1f MB in the memory plan (%.1f MB without reuse)\n",
              plan.arena_bytes / 1e6, plan.unplanned_bytes / 1e6);
  if (o.profile) print_task_breakdown(m, c, o.repeats);
  std::vector<NDArray> out = c.executor->run(m.inputs);
  if (!m.encoder) print_next_token(m, out.at(0));
  if (!o.save_output.empty()) {
    save_npy(out.at(0), o.save_output);
    std::printf("output %s written to %s\n", out[0].shape_string().c_str(), o.save_output.c_str());
  }
  return 0;
}

struct ModelTuneOptions : TuneFlags {
  ModelSourceOptions source;
  std::vector<int64_t> decode_capacities; // also the decode steps of `model generate`
  std::string only_tasks;                 // --tasks: a regular expression on the task names
  int choice_rounds = 5;      // --model-choice-rounds: the in-model comparison (model_choice.h)
  std::string fpmath = "f32"; // --fpmath: the kernels the in-model comparison runs
};

// The tasks whose names --tasks matches (all without it); none matching is an error that lists
// the names.
std::vector<TuneTask> select_tasks(std::vector<TuneTask> tasks, const std::string& pattern) {
  if (pattern.empty()) return tasks;
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("--tasks '" + pattern +
                                "' is not a regular expression: " + e.what());
  }
  std::vector<TuneTask> kept;
  std::string names;
  for (TuneTask& t : tasks) {
    names += "\n  " + t.spec;
    if (std::regex_search(t.spec, re)) kept.push_back(std::move(t));
  }
  if (kept.empty())
    throw std::invalid_argument("--tasks '" + pattern + "' matches none of the tasks:" + names);
  return kept;
}

int tune_model(ModelTuneOptions& o) {
  configure_logging(o.log_level);
  o.source.plugin_paths = o.plugin_paths;
  LoadedModel m = load_model(o.source);
  std::cerr << m.describe() << "\n";
  finish_tune_options(o, *m.host);
  o.tune.model_tasks = true;
  // --fpmath bf16 tunes the kernels as bf16 runs them: a target that knows -fpmath (llvm.cpu)
  // then offers its bf16 products (AMX tile products where the CPU has them), and files the
  // records apart from the f32 ones. The in-model comparison adds the option itself.
  const std::string target = o.tune.target;
  if (o.fpmath != "f32" && split_target(target).word.rfind("llvm", 0) == 0)
    o.tune.target = target + " -fpmath=" + o.fpmath;
  std::vector<TuneTask> tasks = tune_tasks(m.tasks);
  if (!o.source.buckets.empty()) { // every bucket's tasks under the one budget
    // Shapes differ between buckets, so their workloads do too: named by bucket.
    tasks.clear();
    for (int64_t seq : o.source.buckets) {
      ModelGraph g =
          BucketedModel::graph_for(*m.host, m.config, m.batch, seq, m.encoder, m.token_types);
      for (TuneTask& t :
           tune_tasks(graph_tasks(fuse(g.outputs), m.name + "@" + std::to_string(seq), g.params)))
        tasks.push_back(std::move(t));
    }
    std::cerr << o.source.buckets.size() << " buckets: " << tasks.size() << " tasks\n";
  }
  if (!o.decode_capacities.empty()) { // generation: one decode step per cache capacity
    if (m.encoder) throw std::invalid_argument(m.name + " is an encoder: it has no decode step");
    if (m.batch != 1) throw std::invalid_argument("generation runs at batch 1 (--batch 1)");
    size_t before = tasks.size();
    // The prefill of generation runs the prompt's tasks -- the whole model's, already here --
    // but the logits of the last position only (core/graph/last_position.h): its new tasks
    // (the final norm with the row's gather) are added, the others not again (their weights
    // would count twice).
    const std::vector<int64_t> prompts =
        o.source.buckets.empty() ? std::vector<int64_t>{m.seq} : o.source.buckets;
    std::vector<uint64_t> hashes;
    for (const TuneTask& k : tasks)
      hashes.push_back(structural_hash(k.workload));
    const size_t whole = tasks.size();
    for (int64_t seq : prompts) {
      ModelGraph g = Generator::prefill_graph(*m.host, m.config, seq);
      for (TuneTask& t :
           tune_tasks(graph_tasks(fuse(g.outputs), m.name + "@prefill" + std::to_string(seq),
                                      g.params))) {
        const uint64_t h = structural_hash(t.workload);
        bool known = false;
        for (size_t k = 0; k < whole && !known; ++k)
          known = hashes[k] == h && structural_equal(tasks[k].workload, t.workload);
        if (!known) tasks.push_back(std::move(t)); // equal ones of several buckets: merged below
      }
    }
    for (int64_t cap : o.decode_capacities) {
      ModelGraph g = Generator::decode_graph(*m.host, m.config, cap);
      for (TuneTask& t :
           tune_tasks(graph_tasks(fuse(g.outputs), m.name + "@decode" + std::to_string(cap),
                                      g.params)))
        tasks.push_back(std::move(t));
    }
    tasks = merge_equal_tasks(std::move(tasks));
    std::cerr << "prefill and " << o.decode_capacities.size()
              << " decode capacities: " << tasks.size() - before << " more distinct tasks\n";
  }
  if (!o.only_tasks.empty()) {
    tasks = select_tasks(std::move(tasks), o.only_tasks);
    std::cerr << "--tasks: " << tasks.size() << " tasks\n";
  }
  const std::atomic<bool>* stop = install_stop_handlers();
  std::unique_ptr<ProgressPrinter> progress;
  if (!o.quiet) progress = std::make_unique<ProgressPrinter>(Terminal::standard_error());
  TuneResult r = tune(*m.host, tasks, o.tune, progress.get(), stop);
  print_summary(r);
  if (!r.interrupted) print_comparison(r);
  if (!r.interrupted && o.choice_rounds > 0 && !o.no_library) {
    std::vector<std::string> libraries =
        o.libraries.empty() ? std::vector<std::string>{"onednn.cpu"} : o.libraries;
    std::cerr << "timing the tuned and the library kernels inside the model (" << o.choice_rounds
              << " alternating profiled runs of each)\n";
    ModelChoiceSummary c, g;
    try {
      std::unique_ptr<Database> db = Database::open(o.tune.db_path);
      if (o.source.buckets.empty()) {
        c = choose_in_model(m, *db, target, libraries, o.fpmath, o.choice_rounds, o.quiet);
      } else { // the tasks tuned are the buckets': each bucket's model compared in turn
        const int64_t seq = m.seq;
        for (int64_t b : o.source.buckets) {
          set_sequence(m, b);
          if (!o.quiet) std::cerr << "bucket of " << b << " tokens:\n";
          c += choose_in_model(m, *db, target, libraries, o.fpmath, o.choice_rounds, o.quiet);
        }
        set_sequence(m, seq);
      }
      if (!o.decode_capacities.empty() && !m.encoder) {
        std::cerr << "and in generation: a prompt of " << m.seq
                  << " tokens and decode steps at each capacity\n";
        g = choose_in_generation(m, *db, target, libraries, o.fpmath, o.choice_rounds,
                                 o.decode_capacities, o.quiet);
      }
    } catch (const std::exception& e) {
      // The tuning's records are saved; only the choice is missing, and best falls back.
      std::cerr << "warning: the comparison inside the model failed (" << e.what()
                << "); the best kernels follow the records' means\n";
    }
    auto print = [](const char* where, const char* what, const ModelChoiceSummary& s) {
      if (s.compared == 0) return;
      std::printf("%s: library kernels %.2f ms, tuned %.2f ms, each task's faster %.2f ms (%s, "
                  "per-task medians); %zu tasks compared, tuned chosen for %zu\n",
                  where, s.library_seconds * 1e3, s.tuned_seconds * 1e3, s.best_seconds * 1e3, what,
                  s.compared, s.tuned);
    };
    print(o.source.buckets.empty() ? "in the model" : "in the buckets' models (summed)",
          "kernel calls", c);
    print("in generation", "a prefill and a decode step per capacity", g);
  }
  if (o.json) std::cout << to_json(r, o.tune).dump() << "\n";
  std::cout << std::flush;
  return r.interrupted ? 130 : 0;
}

// Every policy's model is built first, then timed in alternating rounds (one run of each per
// round), so that drift of the machine hits them alike.
int bench_model(const ModelRunOptions& o) {
  configure_logging(o.log_level);
  LoadedModel m = load_model(o.source);
  std::unique_ptr<Database> db = open_read_only(o.db);
  std::printf("%s\n", m.describe().c_str());
  std::fflush(stdout);
  std::vector<KernelPolicy> policies;
  for (const std::string& p : o.policies)
    policies.push_back(parse_kernel_policy(p));
  if (policies.empty()) {
    policies = {KernelPolicy::Untuned, KernelPolicy::Library};
    if (db) policies.insert(policies.end(), {KernelPolicy::Tuned, KernelPolicy::Best});
  }
  std::vector<CompiledModel> compiled;
  for (KernelPolicy p : policies) {
    KernelSelector selector(*m.host, selection(p, o.target, o.libraries, db.get(), o.fpmath));
    if (p == KernelPolicy::Library && !selector.has_library())
      throw std::invalid_argument("the library policy needs a library target (none loaded)");
    compiled.push_back(compile_model(m, selector, o.quiet));
    compiled.back().policy = p;
    compiled.back().executor->execute(m.inputs); // warm-up
  }
  std::vector<ModelTiming> timing(compiled.size());
  for (int r = 0; r < std::max(1, o.repeats); ++r)
    for (size_t i = 0; i < compiled.size(); ++i) {
      auto s = std::chrono::steady_clock::now();
      compiled[i].executor->execute(m.inputs);
      timing[i].runs.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
    }
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < compiled.size(); ++i) {
    CompiledModel& c = compiled[i];
    std::sort(timing[i].runs.begin(), timing[i].runs.end());
    std::printf("%-8s %9.2f ms  (median of %zu, alternating; built in %.1f s; %s)\n",
                to_string(c.policy), 1e3 * timing[i].median(), timing[i].runs.size(),
                c.build_seconds, c.summary().c_str());
    std::fflush(stdout);
    if (o.profile) print_task_breakdown(m, c, o.repeats);
    if (!o.save_outputs.empty()) {
      std::filesystem::create_directories(o.save_outputs);
      save_npy(c.executor->run(m.inputs).at(0),
               (std::filesystem::path(o.save_outputs) / (std::string(to_string(c.policy)) + ".npy"))
                   .string());
    }
    rows.push_back({{"implementations", to_string(c.policy)},
                    {"latency_ms", 1e3 * timing[i].median()},
                    {"runs_ms", timing[i].runs},
                    {"build_seconds", c.build_seconds},
                    {"kernels", c.summary()}});
  }
  if (!o.save_output.empty()) {
    std::ofstream(o.save_output) << rows.dump(2) << "\n";
    std::printf("results written to %s\n", o.save_output.c_str());
  }
  return 0;
}

void add_run_options(CLI::App* cmd, ModelRunOptions& o, bool bench) {
  add_model_source_options(cmd, o.source);
  cmd->add_option("--db", o.db, "Tuning database with the model's tuned records");
  if (!bench)
    cmd->add_option("--implementations", o.implementations,
                    "untuned, tuned, library or best (default: best with --db, else library: "
                    "oneDNN where it implements a task, the rest untuned)");
  if (bench) {
    cmd->add_option("--policies", o.policies,
                    "Which to time, e.g. library,best (default: untuned,library and with --db "
                    "tuned,best)")
        ->delimiter(',');
    cmd->add_option("--save-outputs", o.save_outputs,
                    "Write each policy's first output to DIR/<policy>.npy");
  }
  cmd->add_option("--target", o.target, "The tuning target")->capture_default_str();
  cmd->add_option("--library", o.libraries, "Library targets (repeatable)")->capture_default_str();
  add_fpmath_option(cmd, o.fpmath);
  cmd->add_option("--repeats", o.repeats, "Timed runs after one warm-up")->capture_default_str();
  cmd->add_flag("--profile", o.profile, "Time each kernel call and print the per-task breakdown");
  cmd->add_option("--save-output", o.save_output,
                  bench ? "Write the results as JSON to this file"
                        : "Write the first output to this .npy file");
  cmd->add_flag("-q,--quiet", o.quiet, "No progress display");
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off");
}

RegisterCommand reg("model", [](CLI::App& app) -> std::function<int()> {
  auto run_opt = std::make_shared<ModelRunOptions>();
  auto bench_opt = std::make_shared<ModelRunOptions>();
  auto tune_opt = std::make_shared<ModelTuneOptions>();
  auto* model = app.add_subcommand("model", "Models from config trees or Hugging Face folders");
  model->require_subcommand(1);
  auto* run = model->add_subcommand("run", "Build and run a model (untuned, or from --db)");
  add_run_options(run, *run_opt, false);
  auto* tune_cmd = model->add_subcommand(
      "tune", "Tune a model's distinct kernels under one budget into --db; Ctrl-C stops "
              "cleanly, the same command resumes");
  add_model_source_options(tune_cmd, tune_opt->source, /*shapes_only=*/true);
  tune_opt->tune.db_path = "tune.db";
  // A model has a dozen tasks and budgets of hundreds of trials: smaller batches let the task
  // scheduler move trials to the tasks that dominate the latency sooner (its first round
  // gives every task one batch).
  tune_opt->tune.batch_size = 16;
  add_tune_flags(tune_cmd, *tune_opt);
  tune_cmd->add_option("--tuning-config", tune_opt->space_config,
                       "Tuning-config file: JSON with fields rules, mutators, postprocs holding "
                       "the same entries as --rules, --mutators, --postprocs (applied before "
                       "them; docs/tuning.md)");
  tune_cmd
      ->add_option("--decode-capacities", tune_opt->decode_capacities,
                   "Also tune the decode steps of `model generate` at these cache capacities "
                   "(e.g. 64,128,256; with --seq the prompt's length)")
      ->delimiter(',');
  tune_cmd
      ->add_option("--model-choice-rounds", tune_opt->choice_rounds,
                   "At the end, the model run this many times with the library's and with "
                   "the tuned kernels, alternating, profiled: each task's faster one in the "
                   "model is what `best` runs (0 = none; docs/tuning.md)")
      ->capture_default_str();
  add_fpmath_option(tune_cmd, tune_opt->fpmath,
                    "f32, or bf16: the kernels are tuned as `--fpmath bf16` runs them (llvm: "
                    "products of bf16-rounded operands, AMX tile products where the CPU has "
                    "them; records filed apart from the f32 ones, checked at bf16's precision), "
                    "and the in-model comparison times them so (weights in bf16): its choices "
                    "serve `best` with --fpmath bf16 only");
  tune_cmd->add_option("--tasks", tune_opt->only_tasks,
                       "Tune only the tasks whose names this regular expression matches (e.g. "
                       "'@decode' for the decode steps' kernels); the budget is theirs");
  auto* bench = model->add_subcommand(
      "bench", "Latency of the model untuned, with the library, tuned and best (--db)");
  add_run_options(bench, *bench_opt, true);
  auto compile_opt = std::make_shared<ModelCompileOptions>();
  auto* compile = model->add_subcommand(
      "compile", "Write the ahead-of-time artifact (kernels.so, model.json, weights) to --out");
  add_model_compile_options(compile, *compile_opt);
  auto generate_opt = std::make_shared<ModelGenerateOptions>();
  auto* generate = model->add_subcommand(
      "generate", "Generate tokens with a decoder: prefill, then decode steps against the "
                  "key/value cache");
  add_model_generate_options(generate, *generate_opt);
  auto chat_opt = std::make_shared<ModelChatOptions>();
  auto* chat_cmd = model->add_subcommand(
      "chat", "Talk with an instruct checkpoint: each input line a user turn, through its chat "
              "template");
  add_model_chat_options(chat_cmd, *chat_opt);
  auto embed_opt = std::make_shared<ModelEmbedOptions>();
  auto* embed = model->add_subcommand(
      "embed", "Sentence embeddings from an encoder checkpoint (sentence-transformers' pooling "
               "and normalization)");
  add_model_embed_options(embed, *embed_opt);
  return [=]() -> int {
    if (run->parsed()) return run_model(*run_opt);
    if (embed->parsed()) return embed_texts(*embed_opt);
    if (generate->parsed()) return generate_text(*generate_opt);
    if (chat_cmd->parsed()) return chat(*chat_opt);
    if (tune_cmd->parsed()) return tune_model(*tune_opt);
    if (compile->parsed()) return compile_model_artifact(*compile_opt);
    return bench_model(*bench_opt);
  };
});

} // namespace

} // namespace mt::cli
