// `metatune model chat` (see model_chat.h).
#include "hosts/cli/model_chat.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/graph/generator.h"
#include "core/graph/token_sampler.h"
#include "core/tokenizer/chat_template.h"
#include "core/tuner/tune_log.h"
#include "hosts/cli/generation_flags.h"
#include "hosts/cli/generation_text.h"
#include "hosts/cli/model_execution.h"

namespace mt::cli {

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The buckets that fit the model, and the model's longest sequence as the last one.
std::vector<int64_t> buckets_within(std::vector<int64_t> buckets, int64_t max_length) {
  std::erase_if(buckets, [&](int64_t b) { return b <= 0 || b >= max_length; });
  std::sort(buckets.begin(), buckets.end());
  buckets.push_back(max_length);
  return buckets;
}

// One conversation: its turns so far, and the model, tokenizer and template it runs through.
class Conversation {
public:
  Conversation(const ModelChatOptions& o, Generator& gen, const tok::Tokenizer& tokenizer,
               const tok::ChatTemplate& chat, TokenSampler& sampler, std::vector<int32_t> eos)
      : o_(o), gen_(gen), tokenizer_(tokenizer), chat_(chat), sampler_(sampler),
        eos_(std::move(eos)) {
    reset();
  }

  void reset() {
    messages_.clear();
    if (!o_.system.empty()) messages_.push_back({"system", o_.system});
  }

  // The reply to `text`, printed as it comes; false where the conversation no longer fits the
  // model (the turn is dropped, the conversation kept).
  bool answer(const std::string& text) {
    messages_.push_back({"user", text});
    const std::string prompt = chat_.render(messages_, /*add_generation_prompt=*/true);
    std::vector<int32_t> ids;
    for (tok::TokenId id : tokenizer_.encode(prompt, /*add_special_tokens=*/false))
      ids.push_back(static_cast<int32_t>(id));
    const auto n = static_cast<int64_t>(ids.size());
    if (n >= gen_.max_length()) {
      messages_.pop_back();
      std::fprintf(stderr,
                   "the conversation is %lld tokens with this turn, the model takes %lld: /reset "
                   "to start over\n",
                   static_cast<long long>(n), static_cast<long long>(gen_.max_length()));
      return false;
    }
    const int64_t total = std::min(n + o_.max_new_tokens, gen_.max_length());
    // The conversation so far is in the cache: only the tokens after the prefix this prompt
    // shares with it (the new turn, and whatever the template renders differently) are
    // computed. Compilation, on a turn that needs a new shape, is reported apart.
    const double compiled_before = gen_.compile_seconds();
    auto t0 = std::chrono::steady_clock::now();
    const float* logits = o_.no_prefix_cache ? gen_.prefill(ids) : gen_.prefill_reusing(ids);
    const double prefill_s = std::max(0.0, since(t0) - (gen_.compile_seconds() - compiled_before));
    gen_.prepare_steps(n, total);
    const double compile_s = gen_.compile_seconds() - compiled_before;
    const int64_t reused = o_.no_prefix_cache ? 0 : gen_.last_reused();
    TextStream stream(tokenizer_);
    std::vector<int32_t> out;
    t0 = std::chrono::steady_clock::now();
    bool ended = false;
    for (;;) {
      const int32_t next = sampler_.next(logits, gen_.vocab());
      out.push_back(next);
      if (std::find(eos_.begin(), eos_.end(), next) != eos_.end()) {
        ended = true;
        break;
      }
      stream.push(next);
      if (static_cast<int64_t>(out.size()) >= o_.max_new_tokens || gen_.length() + 1 >= total)
        break;
      logits = gen_.step(next);
    }
    const double decode_s = since(t0);
    stream.finish();
    std::printf("\n");
    std::fflush(stdout);
    std::vector<tok::TokenId> reply_ids;
    for (int32_t id : out)
      if (tokenizer_.id_to_token(static_cast<tok::TokenId>(id)))
        reply_ids.push_back(static_cast<tok::TokenId>(id));
    const std::string reply = tokenizer_.decode(reply_ids); // special tokens skipped
    messages_.push_back({"assistant", reply});
    const double tps =
        out.size() > 1 && decode_s > 0 ? static_cast<double>(out.size() - 1) / decode_s : 0;
    if (!o_.quiet) {
      char compiled[64] = "";
      if (compile_s > 0.05)
        std::snprintf(compiled, sizeof compiled, ", compiled in %.1f s", compile_s);
      std::fprintf(stderr,
                   "(%lld prompt tokens, %lld of them cached: prefill %.1f ms%s; %zu new, %.1f "
                   "tokens/s%s)\n",
                   static_cast<long long>(n), static_cast<long long>(reused), 1e3 * prefill_s,
                   compiled, out.size(), tps, ended ? "" : "; stopped at --max-new-tokens");
    }
    turns_.push_back({{"prompt", prompt},
                      {"prompt_ids", ids},
                      {"new_tokens", out},
                      {"reply", reply},
                      {"ended_at_eos", ended},
                      {"cached_tokens", reused},
                      {"prefill_ms", 1e3 * prefill_s},
                      {"compile_ms", 1e3 * compile_s},
                      {"decode_tokens_per_s", tps}});
    return true;
  }

  const nlohmann::json& turns() const { return turns_; }

private:
  const ModelChatOptions& o_;
  Generator& gen_;
  const tok::Tokenizer& tokenizer_;
  const tok::ChatTemplate& chat_;
  TokenSampler& sampler_;
  std::vector<int32_t> eos_;
  std::vector<tok::ChatMessage> messages_;
  nlohmann::json turns_ = nlohmann::json::array();
};

} // namespace

void add_model_chat_options(CLI::App* cmd, ModelChatOptions& o) {
  add_model_source_options(cmd, o.source);
  cmd->add_option("--system", o.system, "A system turn at the start of the conversation");
  cmd->add_option("--max-new-tokens", o.max_new_tokens, "Longest reply, in tokens")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--ignore-eos", o.ignore_eos,
                "Do not stop a reply at the end-of-sequence ids (replies of --max-new-tokens)");
  add_sampling_flags(cmd, o.temperature, o.top_k, o.sampling_seed);
  add_capacities_flag(cmd, o.capacities);
  cmd->add_option("--prompt-buckets", o.prompt_buckets,
                  "Lengths compiled for the prefill (a turn's new tokens are padded to the "
                  "smallest that holds them; longer runs go in chunks of the largest)")
      ->delimiter(',')
      ->capture_default_str();
  add_kernel_flags(cmd, o.db, o.implementations, o.target, o.libraries, o.fpmath);
  cmd->add_flag("--no-prefix-cache", o.no_prefix_cache,
                "Prefill the whole conversation every turn (by default a turn computes only what "
                "follows the prefix its prompt shares with the key/value cache)");
  cmd->add_option("--report-json", o.report_json,
                  "Write every turn (its prompt, ids, reply, prefill ms, tokens/s) to this file");
  cmd->add_flag("-q,--quiet", o.quiet, "Print only the replies");
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off");
}

int chat(const ModelChatOptions& o) {
  configure_logging(o.log_level);
  if (o.source.hf.empty() && o.source.tokenizer.empty())
    throw std::invalid_argument("model chat needs a checkpoint folder with a chat template: "
                                "--hf DIR (or --tokenizer DIR beside --config)");
  LoadedModel m = load_decoder(o.source);
  const std::optional<tok::Tokenizer> tokenizer = tokenizer_of(o.source.tokenizer, o.source.hf);
  const std::string dir = !o.source.tokenizer.empty() ? o.source.tokenizer : o.source.hf;
  if (!tokenizer)
    throw std::invalid_argument(dir + " has no tokenizer.json or vocab.txt: model chat needs one");
  const std::optional<tok::ChatTemplate> chat_template = tok::ChatTemplate::load(dir);
  if (!chat_template)
    throw std::invalid_argument(dir + " has no chat template (chat_template.jinja, or "
                                      "tokenizer_config.json's \"chat_template\"): model chat "
                                      "needs one; `model generate --prompt` takes text as it is");
  std::unique_ptr<Database> db = open_read_only(o.db);
  KernelPolicy policy = policy_of(o.implementations, db.get());
  KernelSelector selector(*m.host, selection(policy, o.target, o.libraries, db.get(), o.fpmath));
  TokenSampler sampler(sampling_of(o.temperature, o.top_k, o.sampling_seed));
  GenerationShape shape{{}, o.capacities, m.max_positions};
  shape.prompt_buckets =
      buckets_within(o.prompt_buckets, Generator::max_length_for(m.config, shape));
  Generator gen(*m.host, m.config, selector, m.params, shape);
  Conversation conversation(o, gen, *tokenizer, *chat_template, sampler,
                            o.ignore_eos ? std::vector<int32_t>{} : eos_ids(o.source.hf));
  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (!o.quiet)
    std::fprintf(stderr, "%s; chat template of %s\n%s", m.describe().c_str(),
                 chat_template->origin().c_str(),
                 interactive ? "type a message (/reset: start over, /exit or Ctrl-D: quit)\n" : "");
  for (std::string line;;) {
    if (interactive) std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line == "/reset") {
      conversation.reset();
      if (!o.quiet) std::fprintf(stderr, "(a new conversation)\n");
      continue;
    }
    if (line.empty()) continue;
    conversation.answer(line);
  }
  if (!o.report_json.empty())
    std::ofstream(o.report_json) << nlohmann::json{{"implementations", to_string(policy)},
                                                   {"compiled", gen.compiled()},
                                                   {"turns", conversation.turns()}}
                                        .dump(2)
                                 << "\n";
  return 0;
}

} // namespace mt::cli
