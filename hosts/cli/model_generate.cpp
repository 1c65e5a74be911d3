// `metatune model generate` (see model_generate.h).
#include "hosts/cli/model_generate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/graph/generator.h"
#include "core/graph/token_sampler.h"
#include "core/measure/implementation_compare.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tuner/tune_log.h"
#include "hosts/cli/generation_flags.h"
#include "hosts/cli/generation_text.h"
#include "hosts/cli/model_execution.h"

namespace mt::cli {

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The tokenizer of --tokenizer, else of the --hf folder when it has one.
std::optional<tok::Tokenizer> tokenizer_for(const ModelGenerateOptions& o) {
  return tokenizer_of(o.source.tokenizer, o.source.hf);
}

std::vector<int32_t> prompt_of(const ModelGenerateOptions& o, const tok::Tokenizer* tokenizer,
                               int64_t vocab) {
  if (int(!o.prompt.empty()) + int(!o.prompt_ids.empty()) + int(o.chat.given()) > 1)
    throw std::invalid_argument("give one of --prompt, --prompt-ids, --chat or --messages");
  std::vector<int32_t> ids;
  if (o.chat.given()) {
    if (!tokenizer)
      throw std::invalid_argument("--chat and --messages need a tokenizer: the --hf folder has no "
                                  "tokenizer.json (give --tokenizer DIR)");
    const std::string dir = !o.source.tokenizer.empty() ? o.source.tokenizer : o.source.hf;
    const std::string text = chat_prompt(o.chat, dir);
    // As apply_chat_template: the template wrote the special tokens (BOS, role headers)
    // itself, so the tokenizer adds none.
    for (tok::TokenId id : tokenizer->encode(text, /*add_special_tokens=*/false))
      ids.push_back(static_cast<int32_t>(id));
    if (!o.quiet) std::fprintf(stderr, "chat prompt (%zu tokens):\n%s\n", ids.size(), text.c_str());
  } else if (!o.prompt.empty()) {
    if (!tokenizer)
      throw std::invalid_argument("--prompt needs a tokenizer: the --hf folder has no "
                                  "tokenizer.json or vocab.txt (give --tokenizer DIR, or "
                                  "--prompt-ids)");
    for (tok::TokenId id : tokenizer->encode(o.prompt, /*add_special_tokens=*/true))
      ids.push_back(static_cast<int32_t>(id));
  } else {
    ids = parse_tokens(o.prompt_ids, "--prompt-ids");
  }
  if (ids.empty())
    throw std::invalid_argument("give the prompt: --prompt TEXT, --chat TEXT, --messages FILE or "
                                "--prompt-ids 1,2");
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      throw std::invalid_argument("prompt: token id " + std::to_string(id) +
                                  " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  return ids;
}

// Where generation stops (generation_text.h), unless --ignore-eos.
std::vector<int32_t> stop_ids(const ModelGenerateOptions& o) {
  if (o.ignore_eos) return {};
  return eos_ids(o.source.hf);
}

} // namespace

void add_model_generate_options(CLI::App* cmd, ModelGenerateOptions& o) {
  add_model_source_options(cmd, o.source);
  cmd->add_option("--prompt-ids", o.prompt_ids, "The prompt as comma-separated token ids");
  cmd->add_option("--prompt", o.prompt, "The prompt as text (a checkpoint with a tokenizer)");
  add_chat_options(cmd, o.chat);
  cmd->add_flag("--ignore-eos", o.ignore_eos,
                "Do not stop at config.json's eos_token_id (benchmarks: a fixed count)");
  cmd->add_option("--prefill-repeats", o.prefill_repeats,
                  "Timed prefills of the prompt before generating; the median is reported")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-new-tokens", o.max_new_tokens, "Tokens to generate")
      ->capture_default_str();
  cmd->add_flag("--greedy", o.greedy, "Take the most likely token (the default)");
  add_sampling_flags(cmd, o.temperature, o.top_k, o.sampling_seed);
  add_capacities_flag(cmd, o.capacities);
  cmd->add_option("--prompt-buckets", o.prompt_buckets,
                  "Prompt lengths compiled for the prefill (default: the prompt's own)")
      ->delimiter(',');
  add_kernel_flags(cmd, o.db, o.implementations, o.target, o.libraries, o.fpmath);
  cmd->add_option("--report-json", o.report_json,
                  "Write prompt, tokens, prefill ms and decode tokens/s to this JSON file");
  cmd->add_flag("--profile", o.profile,
                "Time each kernel of the prefill (runs of its own) and of the decode steps; print "
                "the per-task breakdowns");
  cmd->add_flag("-q,--quiet", o.quiet, "Print only the tokens and the figures");
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off");
}

int generate_text(const ModelGenerateOptions& o) {
  configure_logging(o.log_level);
  if (o.max_new_tokens < 1) throw std::invalid_argument("--max-new-tokens must be >= 1");
  if (o.greedy && o.temperature > 0)
    throw std::invalid_argument("--greedy and --temperature exclude each other");
  if (!o.source.text.empty() || !o.source.tokens.empty())
    throw std::invalid_argument("model generate takes its prompt as --prompt TEXT, --chat TEXT, "
                                "--messages FILE or --prompt-ids, not --text or --tokens");
  LoadedModel m = load_decoder(o.source);
  std::optional<tok::Tokenizer> tokenizer = tokenizer_for(o);
  std::vector<int32_t> prompt = prompt_of(o, tokenizer ? &*tokenizer : nullptr, m.vocab);
  const std::vector<int32_t> eos = stop_ids(o);
  std::unique_ptr<Database> db = open_read_only(o.db);
  KernelPolicy policy = policy_of(o.implementations, db.get());
  KernelSelector selector(*m.host, selection(policy, o.target, o.libraries, db.get(), o.fpmath));
  TokenSampler sampler(sampling_of(o.temperature, o.top_k, o.sampling_seed));

  Generator gen(*m.host, m.config, selector, m.params,
                GenerationShape{o.prompt_buckets, o.capacities, m.max_positions});
  const auto n = static_cast<int64_t>(prompt.size());
  const int64_t total = std::min(n + o.max_new_tokens, gen.max_length());
  if (!o.quiet) {
    std::fprintf(stderr, "%s\ncompiling the prefill and the decode steps up to %lld tokens...\n",
                 m.describe().c_str(), static_cast<long long>(total));
  }
  auto t0 = std::chrono::steady_clock::now();
  gen.prepare(n, total);
  const double compile_s = since(t0);
  gen.prefill(prompt); // warm-up: first touch of every buffer
  std::vector<double> prefills;
  const float* logits = nullptr;
  for (int r = 0; r < o.prefill_repeats; ++r) { // each prefill starts the cache anew
    t0 = std::chrono::steady_clock::now();
    logits = gen.prefill(prompt);
    prefills.push_back(since(t0));
  }
  const double prefill_s = median_of(std::move(prefills));
  // --profile: the prefill's kernels too, in runs of their own (the timed ones stay unprofiled).
  std::vector<std::vector<double>> prefill_groups;
  const CompiledGraph* prefill_graph = nullptr;
  if (o.profile) {
    gen.set_profiling(true);
    for (int r = 0; r < std::max(3, o.prefill_repeats); ++r) {
      logits = gen.prefill(prompt);
      prefill_graph = &gen.last_run();
      prefill_groups.resize(prefill_graph->groups.size());
      for (size_t g = 0; g < prefill_groups.size(); ++g)
        prefill_groups[g].push_back(prefill_graph->exec->group_seconds()[g]);
    }
  }
  std::vector<int32_t> out;
  std::optional<TextStream> text;
  if (tokenizer) text.emplace(*tokenizer);
  auto emit = [&](int32_t id) {
    out.push_back(id);
    if (text) {
      text->push(id);
    } else {
      std::printf(out.size() == 1 ? "%d" : " %d", id);
      std::fflush(stdout);
    }
    return std::find(eos.begin(), eos.end(), id) == eos.end();
  };
  bool more = emit(sampler.next(logits, gen.vocab()));
  t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<double>> per_group; // --profile: the decode steps of the last graph
  const CompiledGraph* profiled = nullptr;
  while (more && static_cast<int64_t>(out.size()) < o.max_new_tokens &&
         gen.length() + 1 <= total - 1) {
    logits = gen.step(out.back());
    if (o.profile) {
      if (profiled != &gen.last_run()) per_group.assign(gen.last_run().groups.size(), {});
      profiled = &gen.last_run();
      for (size_t g = 0; g < per_group.size(); ++g)
        per_group[g].push_back(profiled->exec->group_seconds()[g]);
    }
    more = emit(sampler.next(logits, gen.vocab()));
  }
  const double decode_s = since(t0);
  if (text) text->finish();
  const auto steps = static_cast<int64_t>(out.size()) - 1;
  std::printf("\n");
  if (!more)
    std::printf("stopped at the end-of-sequence token %d\n", out.back());
  else if (static_cast<int64_t>(out.size()) < o.max_new_tokens)
    std::printf("stopped at the longest sequence (%lld tokens)\n",
                static_cast<long long>(gen.max_length()));
  const double tps = steps > 0 && decode_s > 0 ? static_cast<double>(steps) / decode_s : 0;
  std::string graphs;
  for (const std::string& g : gen.compiled())
    graphs += (graphs.empty() ? "" : ", ") + g;
  size_t tuned = 0, library = 0, unrecorded = 0;
  // Graphs with such kernels, by kind and length: ("prefill", 10), ("decode", 128).
  std::set<std::pair<std::string, long long>> untuned_graphs;
  for (const auto& [task, kernel] : gen.kernels()) {
    tuned += kernel.tuned;
    library += kernel.library;
    if (kernel.record_id != 0) continue;
    ++unrecorded;
    const size_t at = task.name.find('@'), slash = task.name.find('/', at);
    if (at == std::string::npos || slash == std::string::npos) continue;
    const std::string graph = task.name.substr(at + 1, slash - at - 1);
    const size_t digits = graph.find_first_of("0123456789");
    if (digits != std::string::npos)
      untuned_graphs.emplace(graph.substr(0, digits), std::stoll(graph.substr(digits)));
  }
  std::printf("prompt %lld tokens: prefill %.2f ms; %lld decode steps: %.2f tokens/s (%.2f ms "
              "per token); %s kernels (%zu distinct: %zu tuned, %zu library); compiled %s in "
              "%.1f s\n",
              static_cast<long long>(n), 1e3 * prefill_s, static_cast<long long>(steps), tps,
              steps ? 1e3 * decode_s / static_cast<double>(steps) : 0.0, to_string(policy),
              gen.kernels().size(), tuned, library, graphs.c_str(), compile_s);
  print_packed_weights(gen.packed_params());
  // A database that was tuned for other shapes, or none: say which graphs ran without
  // records, and how to tune them (their kernels are oneDNN's where it implements them, else
  // unscheduled).
  const bool by_default = o.db.empty() && o.implementations.empty() && !o.quiet;
  if ((by_default ||
       (!o.db.empty() && policy != KernelPolicy::Untuned && policy != KernelPolicy::Library)) &&
      unrecorded > 0) {
    std::string seqs, caps, names;
    size_t prefills = 0;
    for (const auto& [kind, length] : untuned_graphs) {
      names += (names.empty() ? "" : ", ") + kind + "@" + std::to_string(length);
      if (kind == "prefill") {
        seqs += (seqs.empty() ? "" : ",") + std::to_string(length);
        ++prefills;
      }
      if (kind == "decode") caps += (caps.empty() ? "" : ",") + std::to_string(length);
    }
    std::string flags;
    if (prefills) flags += (prefills == 1 ? " --seq " : " --buckets ") + seqs;
    if (!caps.empty()) flags += " --decode-capacities " + caps;
    if (by_default)
      std::printf("no tuning database (--db): %zu of %zu kernels are %s's, the rest untuned; to "
                  "tune them: metatune model tune ... --db tune.db%s, then --db tune.db here\n",
                  library, gen.kernels().size(),
                  o.libraries.empty() ? "the library" : o.libraries.front().c_str(), flags.c_str());
    else
      std::printf("%zu of %zu kernels have no record in %s (%s); to tune them: metatune model "
                  "tune ... --db %s%s\n",
                  unrecorded, gen.kernels().size(), o.db.c_str(), names.c_str(), o.db.c_str(),
                  flags.c_str());
  }
  if (prefill_graph) {
    std::string what = "the prefill of " + std::to_string(n) + " tokens in the bucket of " +
                       std::to_string(prefill_graph->graph.inputs.front().shape()[1]) +
                       ", median of " + std::to_string(prefill_groups.front().size());
    print_task_breakdown(prefill_graph->tasks, prefill_graph->kernels, prefill_groups, what.c_str(),
                         prefill_graph->exec.get());
  }
  if (profiled) {
    std::string what = "decode steps at capacity " +
                       std::to_string(profiled->graph.inputs.back().shape()[1]) + ", median of " +
                       std::to_string(per_group.empty() ? 0 : per_group[0].size());
    print_task_breakdown(profiled->tasks, profiled->kernels, per_group, what.c_str(),
                         profiled->exec.get());
  }
  if (!o.report_json.empty()) {
    nlohmann::json r = {{"prompt_tokens", n},
                        {"new_tokens", out},
                        {"prefill_ms", 1e3 * prefill_s},
                        {"decode_steps", steps},
                        {"decode_tokens_per_s", tps},
                        {"implementations", to_string(policy)},
                        {"compiled", gen.compiled()},
                        {"compile_seconds", compile_s},
                        {"packed_weight_bytes", gen.packed_params().bytes()}};
    std::ofstream(o.report_json) << r.dump(2) << "\n";
  }
  return 0;
}

} // namespace mt::cli
