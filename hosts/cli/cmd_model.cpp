// `metatune model run --config FILE | --hf DIR [--seq N] [--batch B] [--tokens 1,2,...]
// [--seed S] [--repeats R]`: a model instantiated from a config tree of the loaded layers (or a
// Hugging Face checkpoint folder), fused into kernels, built by the LLVM target and run --
// untuned for now: the tuned path is issue 14's next step. Prints the kernels, the latency
// and, for a decoder, the most likely next token.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/graph/fusion.h"
#include "core/graph/hf_checkpoint.h"
#include "core/graph/layer_registry.h"
#include "core/graph/model_executor.h"
#include "core/model/config_json.h"
#include "core/plugin/plugin_host.h"
#include "core/tuner/target_setup.h"
#include "hosts/cli/command.h"

namespace mt::cli {

namespace {

struct ModelRunOptions {
  std::string config, hf, tokens;
  int64_t seq = 16, batch = 1;
  uint64_t seed = 1;
  int repeats = 3;
  std::vector<std::string> plugin_paths;
};

std::vector<int32_t> parse_tokens(const std::string& text) {
  std::vector<int32_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(std::stoi(item));
  return out;
}

int run_model(const ModelRunOptions& o) {
  if (o.config.empty() == o.hf.empty())
    throw std::invalid_argument("give one of --config FILE or --hf DIR");
  PluginHost host;
  std::vector<std::filesystem::path> search(o.plugin_paths.begin(), o.plugin_paths.end());
  for (const auto& p : PluginHost::default_search_path())
    search.push_back(p);
  host.discover(search);
  Config config;
  std::map<std::string, NDArray> weights;
  if (!o.hf.empty()) {
    HfModel m = load_hf_checkpoint(host, o.hf);
    config = m.config;
    weights = std::move(m.params);
  } else {
    config = load_config_file(layer_config_registry(host), o.config);
  }
  std::vector<int32_t> ids = parse_tokens(o.tokens);
  int64_t seq = ids.empty() ? o.seq : static_cast<int64_t>(ids.size());
  if (o.batch < 1 || seq < 1) throw std::invalid_argument("--batch and --seq must be positive");
  Config resolved = config;
  resolved.resolve();
  int64_t vocab = resolved.get<int64_t>("vocab_size");
  if (ids.empty())
    for (int64_t t = 0; t < seq; ++t)
      ids.push_back(static_cast<int32_t>((t * 7919 + 11) % vocab));
  bool encoder = config.kind() == "std.Encoder";
  std::vector<te::Tensor> inputs = {te::placeholder({o.batch, seq}, DType::i32(), "ids")};
  if (encoder) inputs.push_back(te::placeholder({o.batch, seq}, DType::f32(), "mask"));

  auto t0 = std::chrono::steady_clock::now();
  ModelGraph graph = instantiate_model(host, config, inputs);
  std::vector<FusedGroup> groups = fuse(graph.outputs);
  int64_t params = 0;
  for (const ModelParam& p : graph.params) {
    int64_t n = 1;
    for (int64_t d : p.shape)
      n *= d;
    params += n;
  }
  std::printf("%s: %zu parameter tensors, %.1fM parameters, %zu kernels (batch %lld, seq %lld)\n",
              config.kind().c_str(), graph.params.size(), static_cast<double>(params) / 1e6,
              groups.size(), static_cast<long long>(o.batch), static_cast<long long>(seq));
  std::printf("building the kernels with the llvm target (untuned)...\n");
  std::fflush(stdout);
  TargetSetup target = setup_target(host, "llvm");
  ModelExecutor exec(graph, std::move(groups), *target.target);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  exec.set_params(weights.empty() ? init_params(graph.params, o.seed) : weights);

  NDArray in(DType::i32(), {o.batch, seq});
  for (int64_t b = 0; b < o.batch; ++b)
    std::copy(ids.begin(), ids.end(), in.data_as<int32_t>() + b * seq);
  std::vector<NDArray> args = {in};
  if (encoder) {
    NDArray mask(DType::f32(), {o.batch, seq});
    std::fill(mask.data_as<float>(), mask.data_as<float>() + mask.num_elements(), 1.0f);
    args.push_back(mask);
  }
  std::vector<NDArray> out = exec.run(args); // warm-up
  std::vector<double> times;
  for (int r = 0; r < std::max(1, o.repeats); ++r) {
    auto s = std::chrono::steady_clock::now();
    out = exec.run(args);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("built in %.1f s; latency %.2f ms (median of %zu runs; every kernel: llvm, "
              "untuned)\n",
              build_s, 1e3 * times[times.size() / 2], times.size());
  if (!encoder) {
    const float* last = out[0].data_as<float>() + (seq - 1) * vocab;
    int64_t best = std::max_element(last, last + vocab) - last;
    std::printf("next token after the last position: %lld (logit %.4f)\n",
                static_cast<long long>(best), last[best]);
  }
  return 0;
}

RegisterCommand reg("model", [](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<ModelRunOptions>();
  auto* model = app.add_subcommand("model", "Models from config trees or Hugging Face folders");
  model->require_subcommand(1);
  auto* run = model->add_subcommand("run", "Instantiate, fuse, build and run a model (untuned)");
  run->add_option("--config", opt->config, "A config tree (JSON; configs/ has GPT-2 and BERT)");
  run->add_option("--hf", opt->hf, "A Hugging Face folder: config.json + model.safetensors");
  run->add_option("--seq", opt->seq, "Sequence length (without --tokens)")->capture_default_str();
  run->add_option("--batch", opt->batch, "Batch size")->capture_default_str();
  run->add_option("--tokens", opt->tokens, "Comma-separated token ids (default: made up)");
  run->add_option("--seed", opt->seed, "Seed of the random weights (without --hf)")
      ->capture_default_str();
  run->add_option("--repeats", opt->repeats, "Timed runs after one warm-up")->capture_default_str();
  run->add_option("--path", opt->plugin_paths, "Plugin directory searched first (repeatable)");
  return [opt] { return run_model(*opt); };
});

} // namespace

} // namespace mt::cli
