// Loading the model of a `metatune model` command (see model_source.h).
#include "hosts/cli/model_source.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/graph/hf_checkpoint.h"
#include "core/graph/layer_registry.h"
#include "core/graph/model_executor.h"
#include "core/graph/sequence_buckets.h"
#include "core/model/config_json.h"
#include "core/model/safetensors_file.h"
#include "core/tokenizer/tokenizer.h"
#include "hosts/cli/tune_flags.h"

namespace mt::cli {

std::vector<int32_t> parse_tokens(const std::string& text, const std::string& option) {
  std::vector<int32_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw std::invalid_argument(option + ": '" + item + "' is not an integer");
    }
  }
  return out;
}

namespace {

// A safetensors file whose names are the model's parameter paths; shapes are checked when the
// executor takes them (set_params names the parameter).
std::map<std::string, NDArray> load_weights_file(const std::string& path) {
  SafetensorsFile file = SafetensorsFile::open(path);
  std::map<std::string, NDArray> out;
  for (const SafetensorsTensorInfo& t : file.tensors()) {
    NDArray a(DType::f32(), t.shape);
    file.to_f32(t.name, {a.data_as<float>(), static_cast<size_t>(a.num_elements())});
    out.emplace(t.name, std::move(a));
  }
  return out;
}

} // namespace

void add_model_source_options(CLI::App* cmd, ModelSourceOptions& o, bool shapes_only) {
  cmd->add_option("--config", o.config, "A config tree (JSON; configs/ has GPT-2 and BERT)");
  cmd->add_option("--hf", o.hf, "A Hugging Face folder: config.json + model.safetensors");
  cmd->add_option("--seq", o.seq, "Sequence length (without --tokens)")->capture_default_str();
  cmd->add_option("--batch", o.batch, "Batch size")->capture_default_str();
  cmd->add_option("--buckets", o.buckets,
                  "Sequence-length buckets, e.g. 32,64,128: one compiled model each, a sequence "
                  "runs padded in the smallest that holds it")
      ->delimiter(',');
  cmd->add_flag("--with-token-types", o.with_token_types,
                "An encoder takes token types as an input (all 0 unless --token-types or "
                "--text-pair give them): tune with it for runs that give them");
  if (shapes_only) return; // tuning: the plugin path and seed are the tuning flags'
  cmd->add_option("--weights", o.weights,
                  "Weights for --config: a safetensors file named by parameter paths "
                  "(default: random, from --seed)");
  cmd->add_option("--tokens", o.tokens, "Comma-separated token ids (default: made up)");
  cmd->add_option("--text", o.text,
                  "The input as text, through the tokenizer (BERT: [CLS] ... [SEP] added)");
  cmd->add_option("--text-pair", o.text_pair,
                  "An encoder's second sequence after --text: the pair through the tokenizer "
                  "([CLS] A [SEP] B [SEP] for BERT), with its token types");
  cmd->add_option("--token-types", o.token_types,
                  "An encoder's token types, one per token, e.g. 0,0,0,1,1 (Hugging Face's "
                  "token_type_ids; default: all 0)");
  cmd->add_option("--tokenizer", o.tokenizer,
                  "Folder with tokenizer.json or vocab.txt (default: the --hf folder's)");
  cmd->add_option("--seed", o.seed, "Seed of the random weights")->capture_default_str();
  cmd->add_option("--path", o.plugin_paths, "Plugin directory searched first (repeatable)");
}

int64_t LoadedModel::num_parameters() const {
  int64_t total = 0;
  for (const ModelParam& p : graph.params) {
    int64_t n = 1;
    for (int64_t d : p.shape)
      n *= d;
    total += n;
  }
  return total;
}

std::string LoadedModel::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s: %zu parameter tensors, %.1fM parameters, %zu kernels of %zu distinct "
                "workloads (batch %lld, seq %lld)",
                name.c_str(), graph.params.size(), static_cast<double>(num_parameters()) / 1e6,
                groups.size(), tasks.size(), static_cast<long long>(batch),
                static_cast<long long>(seq));
  return buf;
}

namespace {

// The ids a model runs on when it is given none: spread over the vocabulary.
std::vector<int32_t> placeholder_ids(int64_t seq, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < seq; ++t)
    ids.push_back(static_cast<int32_t>((t * 7919 + 11) % vocab));
  return ids;
}

// m's graph, groups, tasks and inputs for its batch and sequence length: `ids` (m.seq of
// them, repeated over the batch), an encoder's all-ones mask, and `types` where the model
// takes token types.
void shape_model(LoadedModel& m, const std::vector<int32_t>& ids,
                 const std::vector<int32_t>& types) {
  m.inputs.clear();
  m.graph = BucketedModel::graph_for(*m.host, m.config, m.batch, m.seq, m.encoder, m.token_types);
  m.groups = fuse(m.graph.outputs);
  m.tasks = graph_tasks(m.groups, m.name, m.graph.params);

  NDArray in(DType::i32(), {m.batch, m.seq});
  for (int64_t b = 0; b < m.batch; ++b)
    std::copy(ids.begin(), ids.end(), in.data_as<int32_t>() + b * m.seq);
  m.inputs.push_back(std::move(in));
  if (m.encoder) {
    NDArray mask(DType::f32(), {m.batch, m.seq});
    mask.fill(1.0);
    m.inputs.push_back(std::move(mask));
  }
  if (m.token_types) {
    NDArray in_types(DType::i32(), {m.batch, m.seq});
    for (int64_t b = 0; b < m.batch; ++b)
      std::copy(types.begin(), types.end(), in_types.data_as<int32_t>() + b * m.seq);
    m.inputs.push_back(std::move(in_types));
  }
}

} // namespace

LoadedModel load_decoder(const ModelSourceOptions& o) {
  ModelSourceOptions src = o;
  src.tokens.clear();
  src.seq = 1;
  LoadedModel m = load_model(src);
  if (m.encoder) throw std::invalid_argument(m.name + " is an encoder: it does not generate");
  return m;
}

LoadedModel load_model(const ModelSourceOptions& o) {
  if (o.config.empty() == o.hf.empty())
    throw std::invalid_argument("give one of --config FILE or --hf DIR");
  if (!o.hf.empty() && !o.weights.empty())
    throw std::invalid_argument("--weights is for --config; an --hf folder has its own weights");
  // A model mixes kernels of targets with different thread runtimes on the same cores: the
  // llvm target's pool, and oneDNN's GNU OpenMP. OpenMP's default keeps its threads spinning
  // for about 3 ms after each primitive, taking the cores the next llvm kernel's threads need
  // (GPT-2's oneDNN layer norms once ran 100x slower mixed than alone); not spinning at all
  // (OMP_WAIT_POLICY=passive) makes every primitive wake its sleeping threads, tens of
  // microseconds on a VM, which a decode step of some 60 short primitives paid with a quarter
  // of its time. A short spin bridges the gap between one primitive and the next without
  // holding the cores for long. Read by libgomp when a plugin first loads it, so it is set
  // before any plugin is loaded; a user's OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
    setenv("GOMP_SPINCOUNT", "10000", /*overwrite=*/0);
  LoadedModel m;
  m.host = std::make_unique<PluginHost>();
  m.host->discover(plugin_search_path(o.plugin_paths));
  if (!o.hf.empty()) {
    HfModel hf = load_hf_checkpoint(*m.host, o.hf);
    m.config = hf.config;
    m.max_positions = hf.max_positions;
    m.params = std::move(hf.params);
  } else {
    m.config = load_config_file(layer_config_registry(*m.host), o.config);
    if (!o.weights.empty()) m.params = load_weights_file(o.weights);
  }
  m.name = m.config.kind();
  if (!o.text.empty() && !o.tokens.empty())
    throw std::invalid_argument("give --text or --tokens, not both");
  std::vector<int32_t> ids = parse_tokens(o.tokens);
  std::vector<int32_t> types = parse_tokens(o.token_types, "--token-types");
  if (!o.text_pair.empty() && o.text.empty())
    throw std::invalid_argument("--text-pair is the second sequence of --text: give both");
  if (!o.text_pair.empty() && !o.token_types.empty())
    throw std::invalid_argument("give --text-pair or --token-types, not both (the pair's types "
                                "come from the tokenizer)");
  if (!o.text.empty()) {
    std::string dir = o.tokenizer.empty() ? o.hf : o.tokenizer;
    if (dir.empty())
      throw std::invalid_argument("--text needs a tokenizer: --tokenizer DIR or an --hf folder");
    const tok::Tokenizer tokenizer = tok::Tokenizer::load(dir);
    if (o.text_pair.empty()) {
      for (tok::TokenId id : tokenizer.encode(o.text, /*add_special_tokens=*/true))
        ids.push_back(static_cast<int32_t>(id));
    } else {
      const tok::Encoding pair = tokenizer.encode_pair(o.text, o.text_pair, true);
      ids.assign(pair.ids.begin(), pair.ids.end());
      types.assign(pair.type_ids.begin(), pair.type_ids.end());
    }
    if (ids.empty()) throw std::invalid_argument("--text: the tokenizer gave no tokens");
  }
  m.batch = o.batch;
  m.seq = ids.empty() ? o.seq : static_cast<int64_t>(ids.size());
  if (m.batch < 1 || m.seq < 1) throw std::invalid_argument("--batch and --seq must be positive");
  if (m.max_positions > 0 && m.seq > m.max_positions)
    throw std::invalid_argument(std::to_string(m.seq) + " tokens: " + o.hf + " is right for " +
                                std::to_string(m.max_positions) + " positions at most");
  Config resolved = m.config;
  resolved.resolve();
  m.vocab = resolved.get<int64_t>("vocab_size");
  for (int32_t id : ids)
    if (id < 0 || id >= m.vocab)
      throw std::invalid_argument("--tokens: id " + std::to_string(id) +
                                  " is outside the vocabulary [0, " + std::to_string(m.vocab) +
                                  ")");
  if (ids.empty()) ids = placeholder_ids(m.seq, m.vocab);
  m.encoder = m.config.kind() == "std.Encoder";
  m.token_types = !o.token_types.empty() || !o.text_pair.empty() || o.with_token_types;
  if (m.token_types) {
    const std::string option = !o.text_pair.empty()     ? "--text-pair"
                               : !o.token_types.empty() ? "--token-types"
                                                        : "--with-token-types";
    if (types.empty()) types.assign(static_cast<size_t>(m.seq), 0);
    if (!m.encoder)
      throw std::invalid_argument(option + ": " + m.name +
                                  " is not an encoder (std.Encoder); it takes no token types");
    if (static_cast<int64_t>(types.size()) != m.seq)
      throw std::invalid_argument("--token-types: " + std::to_string(types.size()) + " types for " +
                                  std::to_string(m.seq) + " tokens");
    const int64_t n = resolved.get<int64_t>("type_vocab_size");
    for (size_t t = 0; t < types.size(); ++t)
      if (types[t] < 0 || types[t] >= n)
        throw std::invalid_argument("--token-types: type " + std::to_string(types[t]) + " (token " +
                                    std::to_string(t) + ") is outside [0, " + std::to_string(n) +
                                    ") (type_vocab_size)");
  }

  shape_model(m, ids, types);
  if (m.params.empty()) m.params = init_params(m.graph.params, o.seed);
  return m;
}

void set_sequence(LoadedModel& m, int64_t seq) {
  if (seq < 1) throw std::invalid_argument("a sequence length must be positive");
  if (m.max_positions > 0 && seq > m.max_positions)
    throw std::invalid_argument(std::to_string(seq) + " tokens: the model is right for " +
                                std::to_string(m.max_positions) + " positions at most");
  m.seq = seq;
  shape_model(m, placeholder_ids(seq, m.vocab),
              m.token_types ? std::vector<int32_t>(static_cast<size_t>(seq), 0)
                            : std::vector<int32_t>{});
}

} // namespace mt::cli
