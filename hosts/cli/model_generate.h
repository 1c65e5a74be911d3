// `metatune model generate --hf DIR | --config FILE (--prompt-ids 1,2,3 | --prompt TEXT)
// --max-new-tokens N`: text generation with a decoder (core/graph/generator.h) -- the prompt
// in one prefill, then one token per decode step against the key/value cache, greedy or
// sampled (--temperature, --top-k, --sampling-seed) -- printing the tokens as they come and
// the prefill latency and decode tokens/s at the end (--report-json FILE: the same as JSON).
// With a tokenizer (the --hf folder's tokenizer.json or vocab.txt, or --tokenizer DIR) the
// prompt may be text and the tokens print as text, or a conversation (--chat, --messages) put
// into the prompt by the checkpoint's chat template; generation stops at config.json's (and
// generation_config.json's) eos_token_id unless --ignore-eos.
// Kernels as `model run` chooses them (--db, --implementations).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "hosts/cli/chat_prompt.h"
#include "hosts/cli/model_source.h"

namespace mt::cli {

struct ModelGenerateOptions {
  ModelSourceOptions source;
  ChatOptions chat;
  std::string db, target = "llvm", implementations, prompt_ids, prompt, tokenizer, report_json,
                  log_level;
  std::string fpmath = "f32";
  std::vector<std::string> libraries{"onednn.cpu"};
  std::vector<int64_t> capacities{64, 128, 256, 512, 1024, 2048}, prompt_buckets;
  int64_t max_new_tokens = 32;
  int prefill_repeats = 1; // timed prefills: the median is reported
  bool greedy = false;
  double temperature = 0; // 0: greedy
  int64_t top_k = 0;
  uint64_t sampling_seed = 0;
  bool quiet = false, profile = false, ignore_eos = false;
};

void add_model_generate_options(CLI::App* cmd, ModelGenerateOptions& o);

int generate_text(const ModelGenerateOptions& o);

} // namespace mt::cli
