// `metatune model chat --hf DIR [--system TEXT]`: a conversation with an instruct checkpoint.
// Each line read from standard input is a user turn; the whole conversation so far goes through
// the checkpoint's chat template (core/tokenizer/chat_template.h); what follows the prefix the
// prompt shares with the sequence in the key/value cache (the previous prompt and reply) is
// prefilled against it (Generator::prefill_reusing), and the reply is generated and printed
// as it comes, up to the end-of-turn token (generation_config.json's eos) or
// --max-new-tokens; the reply's text then joins the conversation as the assistant's turn.
// "/reset" starts the conversation over, "/exit" (or the end of the input) ends it. The new
// tokens are padded into power-of-two buckets, so that few shapes are ever compiled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "hosts/cli/model_source.h"

namespace mt::cli {

struct ModelChatOptions {
  ModelSourceOptions source;
  std::string system, db, target = "llvm", implementations, report_json, log_level;
  std::string fpmath = "f32";
  std::vector<std::string> libraries{"onednn.cpu"};
  std::vector<int64_t> capacities{64, 128, 256, 512, 1024, 2048, 4096},
      prompt_buckets{32, 64, 128, 256, 512, 1024, 2048, 4096};
  int64_t max_new_tokens = 256;
  double temperature = 0; // 0: greedy
  int64_t top_k = 0;
  uint64_t sampling_seed = 0;
  bool ignore_eos = false, quiet = false;
  bool no_prefix_cache = false; // every turn prefills the whole conversation
};

void add_model_chat_options(CLI::App* cmd, ModelChatOptions& o);

int chat(const ModelChatOptions& o);

} // namespace mt::cli
