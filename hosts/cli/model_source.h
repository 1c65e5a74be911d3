// The model a `metatune model ...` command works on, from its command line: a config tree
// (--config FILE) or a Hugging Face folder (--hf DIR), optional weights (--weights FILE: a
// safetensors file named by metatune's parameter paths; an HF folder brings its own), the
// input shape (--batch, --seq or --tokens) -- instantiated, fused and cut into tasks, with
// the input values to run it on.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/graph/fusion.h"
#include "core/graph/graph_tasks.h"
#include "core/graph/model_graph.h"
#include "core/model/config.h"
#include "core/plugin/plugin_host.h"
#include "core/runtime/ndarray.h"

namespace mt::cli {

struct ModelSourceOptions {
  std::string config, hf, weights, tokens;
  // The input as text through a tokenizer (--tokenizer DIR, else the --hf folder's
  // tokenizer.json or vocab.txt), its special tokens added as Hugging Face's encode() does.
  std::string text, tokenizer;
  // A sentence pair for an encoder: --text and --text-pair through the tokenizer's pair form
  // ([CLS] A [SEP] B [SEP]), which gives the token types too.
  std::string text_pair;
  // An encoder's token types (segment ids, Hugging Face's token_type_ids), one per token:
  // "0,0,0,1,1". Without them the model has no such input and every token is of type 0.
  std::string token_types;
  // The model takes token types without their values (all 0): what `model tune` compiles for a
  // model that will run with --token-types or --text-pair.
  bool with_token_types = false;
  int64_t seq = 16, batch = 1;
  uint64_t seed = 1;
  std::vector<std::string> plugin_paths;
  // Sequence-length buckets (core/graph/sequence_buckets.h): run pads into the smallest that
  // holds the sequence; tune tunes the tasks of all of them.
  std::vector<int64_t> buckets;
};

// `shapes_only`: what tuning needs (the model and its input shape), no weights or tokens.
void add_model_source_options(CLI::App* cmd, ModelSourceOptions& o, bool shapes_only = false);

struct LoadedModel {
  std::unique_ptr<PluginHost> host;
  Config config;
  std::string name; // the config's kind, or the HF folder's model_type
  bool encoder = false;
  bool token_types = false; // the graph's third input (--token-types given)
  int64_t batch = 1, seq = 1, vocab = 0;
  // The longest sequence the model is right for (a Hugging Face folder's; 0: no limit known).
  int64_t max_positions = 0;
  ModelGraph graph;
  std::vector<FusedGroup> groups;
  std::vector<GraphTask> tasks;
  std::vector<NDArray> inputs; // token ids (and an encoder's all-ones mask and token types)
  std::map<std::string, NDArray> params; // the loaded weights, else initialised from the seed
  int64_t num_parameters() const;
  std::string describe() const; // "std.Decoder: 148 parameter tensors, 124.4M parameters, ..."
};

// "1,2,3" as token ids; std::invalid_argument naming the option and the item that is not one.
std::vector<int32_t> parse_tokens(const std::string& text, const std::string& option = "--tokens");

// Throws std::invalid_argument naming the file and field or tensor for bad input.
LoadedModel load_model(const ModelSourceOptions& o);
// The model for generation (generate, chat, compile --generation): its own graph of one token
// (only described: a Generator builds the graphs that run), no --tokens; an encoder refused.
LoadedModel load_decoder(const ModelSourceOptions& o);

// `m` at another sequence length (a bucket of --buckets): its graph, groups, tasks and inputs
// rebuilt (placeholder ids; the weights kept). Throws std::invalid_argument for a length the
// model is not right for.
void set_sequence(LoadedModel& m, int64_t seq);

} // namespace mt::cli
