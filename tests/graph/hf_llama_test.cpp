// A Hugging Face Llama checkpoint folder (config.json + model.safetensors in HF's names, random
// weights written here: grouped-query attention, untied head; and the relatives that differ in
// config fields: Qwen2's q/k/v biases and tied head, Mistral's sliding window, Llama 3.1's rope
// scaling, Llama's attention_bias and mlp_bias) loaded through
// core/graph/hf_checkpoint.h -- the rope plugin's rotary QKV layer around std.QKVLinear, RMSNorm,
// SwiGLU -- against a float64 Llama forward computed here from the HF-named arrays (rotate-half
// rotary embeddings with the config's rope_theta); generation with the key/value cache against
// the float64 forward of the whole sequence at every step; and what the loader refuses.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../rope/rope_test_util.h"
#include "cli_run.h"
#include "core/graph/generator.h"
#include "core/graph/hf_checkpoint.h"
#include "core/graph/layer_registry.h"
#include "core/graph/token_sampler.h"
#include "core/model/safetensors_writer.h"
#include "core/tokenizer/tokenizer.h"
#include "graph_test_util.h"
#include "hf_tensors.h"
#include "metatune/runtime/compiled_generator.h"

namespace mt {
namespace {

using namespace graph_test;
namespace fs = std::filesystem;

struct LlamaDims {
  int64_t V = 50, D = 32, L = 2, H = 4, KVH = 2, F = 48;
  double theta = 500.0, eps = 1e-5;
  std::string type = "llama";
  bool qkv_bias = false, o_bias = false, mlp_bias = false, tied = false;
  size_t window = 0; // Mistral's sliding_window
  std::vector<bool> windowed{}; // the layers with the window (empty: all)
  // Llama 3.1's rope scaling when llama3_factor > 0 (see angle_of below).
  double llama3_factor = 0, low = 1, high = 4, original = 8192;
  // YaRN's factor when > 0 (its band: tests/rope/rope_test_util.h); LongRoPE's divisors; the
  // attention factor both put on cos and sin.
  double yarn_factor = 0;
  bool yarn_truncate = true;
  std::vector<double> divisors{};
  double amplitude = 1;
  int64_t max_positions = 64; // what the loader should say (LongRoPE: its original context)
  double linear_factor = 1;   // "linear" rope scaling: frequencies divided by it
  double local_theta = 0;     // Gemma 3: the windowed layers' base (unscaled); 0: theta
  int64_t head_dim = 0; // config.json's head_dim (Qwen3: wider than D / H); 0 = D / H
  bool qk_norm = false; // Qwen3's per-head RMS norms of q and k
  // Gemma: norms scale by 1 + weight, embeddings times sqrt(D), GeGLU (tanh GELU); Gemma 2
  // also norms after attention and MLP, a query_pre_attn_scalar and soft-caps.
  bool gemma = false, sandwich = false;
  bool fused = false; // Phi-3: qkv_proj and gate_up_proj, each one tensor
  double query_scalar = 0, attn_softcap = 0, final_softcap = 0;
  int64_t Dh() const { return head_dim ? head_dim : D / H; }
};

// The folder, removed at the end; tensors base + scale * sin(0.37 i + k), k per tensor.
struct LlamaFolder : HfTensors {
  fs::path dir;

  LlamaFolder(const LlamaDims& g, const std::string& tag, nlohmann::json extra = {})
      : HfTensors(sine, 0.37, 1) {
    dir = fs::temp_directory_path() / ("mt_llama_" + tag + "_" + std::to_string(getpid()));
    fs::create_directories(dir);
    nlohmann::json cfg = {{"model_type", g.type},
                          {"architectures", {"LlamaForCausalLM"}},
                          {"vocab_size", g.V},
                          {"hidden_size", g.D},
                          {"intermediate_size", g.F},
                          {"num_hidden_layers", g.L},
                          {"num_attention_heads", g.H},
                          {"num_key_value_heads", g.KVH},
                          {"rms_norm_eps", g.eps},
                          {"rope_theta", g.theta},
                          {"max_position_embeddings", 64},
                          {"hidden_act", "silu"},
                          {"tie_word_embeddings", g.tied},
                          {"eos_token_id", 2}};
    if (g.head_dim) cfg["head_dim"] = g.head_dim;
    if (extra.is_object()) cfg.update(extra);
    std::ofstream(dir / "config.json") << cfg.dump(2);
    const int64_t D = g.D, kv = g.KVH * g.Dh(), qd = g.H * g.Dh();
    add("model.embed_tokens.weight", {g.V, D}, 0.5, 0);
    for (int64_t l = 0; l < g.L; ++l) {
      std::string h = "model.layers." + std::to_string(l) + ".";
      add(h + "input_layernorm.weight", {D}, 0.1, g.gemma ? 0 : 1);
      add(h + "self_attn.q_proj.weight", {qd, D}, 0.2, 0);
      add(h + "self_attn.k_proj.weight", {kv, D}, 0.2, 0);
      add(h + "self_attn.v_proj.weight", {kv, D}, 0.2, 0);
      add(h + "self_attn.o_proj.weight", {D, qd}, 0.15, 0);
      if (g.qk_norm) { // Gemma 3's scale by 1 + weight: around 0 in its checkpoints
        add(h + "self_attn.q_norm.weight", {g.Dh()}, 0.3, g.gemma ? 0 : 1);
        add(h + "self_attn.k_norm.weight", {g.Dh()}, 0.3, g.gemma ? 0 : 1);
      }
      if (g.qkv_bias) {
        add(h + "self_attn.q_proj.bias", {qd}, 0.3, 0.1);
        add(h + "self_attn.k_proj.bias", {kv}, 0.3, -0.1);
        add(h + "self_attn.v_proj.bias", {kv}, 0.3, 0);
      }
      if (g.o_bias) add(h + "self_attn.o_proj.bias", {D}, 0.2, 0);
      add(h + "post_attention_layernorm.weight", {D}, 0.1, g.gemma ? 0 : 1);
      if (g.sandwich) {
        add(h + "pre_feedforward_layernorm.weight", {D}, 0.1, 0);
        add(h + "post_feedforward_layernorm.weight", {D}, 0.1, 0);
      }
      add(h + "mlp.gate_proj.weight", {g.F, D}, 0.15, 0);
      add(h + "mlp.up_proj.weight", {g.F, D}, 0.15, 0);
      add(h + "mlp.down_proj.weight", {D, g.F}, 0.15, 0);
      if (g.mlp_bias) {
        add(h + "mlp.gate_proj.bias", {g.F}, 0.2, 0.1);
        add(h + "mlp.up_proj.bias", {g.F}, 0.2, 0);
        add(h + "mlp.down_proj.bias", {D}, 0.2, 0);
      }
    }
    add("model.norm.weight", {D}, 0.1, g.gemma ? 0 : 1);
    if (!g.tied) add("lm_head.weight", {g.V, D}, 0.3, 0);
    if (g.fused) fuse(g);
  }
  // Phi-3's form: q, k, v stacked into qkv_proj, gate and up into gate_up_proj (the separate
  // tensors kept aside for the reference).
  void fuse(const LlamaDims& g) {
    for (int64_t l = 0; l < g.L; ++l) {
      const std::string h = "model.layers." + std::to_string(l) + ".";
      stack(h + "self_attn.qkv_proj.weight",
            {h + "self_attn.q_proj.weight", h + "self_attn.k_proj.weight",
             h + "self_attn.v_proj.weight"});
      stack(h + "mlp.gate_up_proj.weight", {h + "mlp.gate_proj.weight", h + "mlp.up_proj.weight"});
    }
  }
  void stack(const std::string& name, const std::vector<std::string>& parts) {
    std::vector<float> all;
    int64_t rows = 0;
    for (const std::string& p : parts) {
      all.insert(all.end(), tensors.at(p).begin(), tensors.at(p).end());
      rows += shapes.at(p)[0];
      kept[p] = Matrix(tensors.at(p).begin(), tensors.at(p).end());
      tensors.erase(p);
    }
    shapes[name] = {rows, shapes.at(parts[0])[1]};
    tensors[name] = std::move(all);
  }
  Matrix m(const std::string& n) const { return kept.count(n) ? kept.at(n) : HfTensors::m(n); }
  std::map<std::string, Matrix> kept;
  const Matrix* maybe(const std::string& n, Matrix& keep) const {
    if (!tensors.count(n)) return nullptr;
    keep = m(n);
    return &keep;
  }
  ~LlamaFolder() { fs::remove_all(dir); }
  void write() const { HfTensors::write(dir / "model.safetensors"); }
  // As Hugging Face writes a checkpoint past its shard size: the tensors of layer 0 and the
  // embedding in one file, the rest in another, and model.safetensors.index.json mapping each
  // name to its file.
  void write_sharded() const {
    HfTensors first = *this, second = *this;
    nlohmann::json map = nlohmann::json::object();
    for (const auto& [name, v] : tensors) {
      const bool in_first =
          name.find("layers.0.") != std::string::npos || name == "model.embed_tokens.weight";
      (in_first ? second : first).tensors.erase(name);
      map[name] =
          in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    }
    first.write(dir / "model-00001-of-00002.safetensors");
    second.write(dir / "model-00002-of-00002.safetensors");
    std::ofstream(dir / "model.safetensors.index.json")
        << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump(2);
  }
};

// The rotary frequency i of a head of width Dh: theta^(-2i/Dh), under Llama 3.1's scaling
// divided by llama3_factor where it turns fewer than `low` times over the original context,
// kept where it turns `high` times or more, the divisor linear in the turns between.
double frequency(const LlamaDims& g, size_t i, size_t Dh) {
  double f = std::pow(g.theta, -2.0 * static_cast<double>(i) / static_cast<double>(Dh));
  if (g.linear_factor != 1) return f / g.linear_factor;
  if (g.yarn_factor > 0 || !g.divisors.empty()) {
    rope_test::Rotary r{.rotary_dim = Dh,
                        .theta = g.theta,
                        .original = g.original,
                        .yarn_factor = g.yarn_factor,
                        .truncate = g.yarn_truncate,
                        .divisors = g.divisors};
    return rope_test::angle(r, 1, i);
  }
  if (g.llama3_factor <= 0) return f;
  const double turns = g.original * f / (2 * M_PI);
  const double t = std::clamp((turns - g.low) / (g.high - g.low), 0.0, 1.0);
  return t * f + (1 - t) * f / g.llama3_factor;
}

// Rotate-half rotary embedding of x [S, heads * Dh] in place: pairs (i, i + Dh/2) of each head
// turned by position * frequency i.
void rotate_half(Matrix& x, size_t S, size_t heads, size_t Dh, const LlamaDims& g) {
  const size_t half = Dh / 2;
  for (size_t t = 0; t < S; ++t)
    for (size_t h = 0; h < heads; ++h)
      for (size_t i = 0; i < half; ++i) {
        double angle = static_cast<double>(t) * frequency(g, i, Dh);
        double* a = &x[t * heads * Dh + h * Dh + i];
        double* b = a + half;
        double x0 = *a, x1 = *b;
        const double c = g.amplitude * std::cos(angle), s = g.amplitude * std::sin(angle);
        *a = x0 * c - x1 * s;
        *b = x1 * c + x0 * s;
      }
}

// x [S, heads * Dh] with each head's channels divided by their root mean square (+ eps) and
// scaled by w [Dh] (Qwen3's q_norm, k_norm).
Matrix head_rms_norm(Matrix x, const Matrix& w, size_t S, size_t heads, size_t Dh, double eps) {
  for (size_t t = 0; t < S; ++t)
    for (size_t h = 0; h < heads; ++h) {
      double* v = &x[(t * heads + h) * Dh];
      double ss = 0;
      for (size_t e = 0; e < Dh; ++e)
        ss += v[e] * v[e];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(Dh) + eps);
      for (size_t e = 0; e < Dh; ++e)
        v[e] *= inv * w[e];
    }
  return x;
}

// Logits [S, V] of the float64 Llama forward.
Matrix llama_ref(const LlamaFolder& c, const LlamaDims& g, const std::vector<int32_t>& ids) {
  const size_t S = ids.size(), D = g.D, Dh = g.Dh(), kv = g.KVH * Dh, qd = g.H * Dh, F = g.F;
  Matrix emb = c.m("model.embed_tokens.weight"), h(S * D);
  // Gemma's embeddings are scaled by sqrt(D) rounded to f32, as transformers does it.
  const double embed_scale = g.gemma ? static_cast<float>(std::sqrt(static_cast<double>(D))) : 1.0;
  for (size_t t = 0; t < S; ++t)
    for (size_t d = 0; d < D; ++d)
      h[t * D + d] = emb[ids[t] * D + d] * embed_scale;
  // Gemma's norms scale by 1 + weight.
  auto norm_w = [&](const std::string& name) {
    Matrix w = c.m(name);
    if (g.gemma)
      for (double& x : w)
        x += 1;
    return w;
  };
  for (int64_t l = 0; l < g.L; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Matrix n = rms_norm_ref(h, norm_w(p + "input_layernorm.weight"), S, D, g.eps);
    Matrix b[7];
    const std::string sa = p + "self_attn.", mlp = p + "mlp.";
    Matrix q =
        linear_ref(n, c.m(sa + "q_proj.weight"), c.maybe(sa + "q_proj.bias", b[0]), S, D, qd);
    Matrix k =
        linear_ref(n, c.m(sa + "k_proj.weight"), c.maybe(sa + "k_proj.bias", b[1]), S, D, kv);
    Matrix v =
        linear_ref(n, c.m(sa + "v_proj.weight"), c.maybe(sa + "v_proj.bias", b[2]), S, D, kv);
    if (g.qk_norm) {
      q = head_rms_norm(q, norm_w(sa + "q_norm.weight"), S, g.H, Dh, g.eps);
      k = head_rms_norm(k, norm_w(sa + "k_norm.weight"), S, g.KVH, Dh, g.eps);
    }
    const bool windowed_layer = g.windowed.empty() || g.windowed[static_cast<size_t>(l)];
    LlamaDims rope = g; // Gemma 3: the windowed layers' own base, unscaled
    if (g.local_theta > 0 && windowed_layer) {
      rope.theta = g.local_theta;
      rope.linear_factor = 1;
    }
    rotate_half(q, S, g.H, Dh, rope);
    rotate_half(k, S, g.KVH, Dh, rope);
    Dims d{1,
           S,
           D,
           static_cast<size_t>(g.H),
           static_cast<size_t>(g.KVH),
           Dh,
           windowed_layer ? g.window : 0,
           g.query_scalar ? 1.0 / std::sqrt(g.query_scalar) : 0.0,
           g.attn_softcap};
    Matrix a = attention_ref(d, q, k, v, c.m(sa + "o_proj.weight"),
                             c.maybe(sa + "o_proj.bias", b[3]), true, nullptr);
    if (g.sandwich) a = rms_norm_ref(a, norm_w(p + "post_attention_layernorm.weight"), S, D, g.eps);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += a[i];
    Matrix n2 = rms_norm_ref(h,
                             norm_w(p + (g.sandwich ? "pre_feedforward_layernorm.weight"
                                                    : "post_attention_layernorm.weight")),
                             S, D, g.eps);
    Matrix gate = linear_ref(n2, c.m(mlp + "gate_proj.weight"),
                             c.maybe(mlp + "gate_proj.bias", b[4]), S, D, F);
    Matrix up =
        linear_ref(n2, c.m(mlp + "up_proj.weight"), c.maybe(mlp + "up_proj.bias", b[5]), S, D, F);
    for (size_t i = 0; i < gate.size(); ++i) {
      const double x = gate[i];
      const double act =
          g.gemma ? 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)))
                  : x / (1 + std::exp(-x));
      gate[i] = act * up[i];
    }
    Matrix y = linear_ref(gate, c.m(mlp + "down_proj.weight"),
                          c.maybe(mlp + "down_proj.bias", b[6]), S, F, D);
    if (g.sandwich)
      y = rms_norm_ref(y, norm_w(p + "post_feedforward_layernorm.weight"), S, D, g.eps);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += y[i];
  }
  h = rms_norm_ref(h, norm_w("model.norm.weight"), S, D, g.eps);
  Matrix logits = linear_ref(h, c.m(g.tied ? "model.embed_tokens.weight" : "lm_head.weight"),
                             nullptr, S, D, g.V);
  if (g.final_softcap)
    for (double& x : logits)
      x = g.final_softcap * std::tanh(x / g.final_softcap);
  return logits;
}

// The folder's whole-sequence logits against the float64 forward.
void check_forward(const LlamaDims& g, const std::string& tag, nlohmann::json extra = {}) {
  SCOPED_TRACE(g.type + " " + tag);
  LlamaFolder c(g, tag, std::move(extra));
  c.write();
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  EXPECT_EQ(m.model_type, g.type);
  EXPECT_EQ(m.max_positions, g.max_positions);
  std::vector<int32_t> ids = {7, 44, 0, 13, 13, 2, 31};
  te::Tensor in = te::placeholder({1, static_cast<int64_t>(ids.size())}, DType::i32(), "ids");
  ModelGraph graph = instantiate_model(host(), m.config, {in});
  EXPECT_EQ(m.params.size(), graph.params.size());
  std::vector<FusedGroup> groups = fuse(graph.outputs);
  // Every layer's rotary cosine table is the same function of the positions: one kernel
  // (repeated_groups.h), read by both layers.
  size_t cos_tables = 0;
  for (const FusedGroup& grp : groups)
    cos_tables += grp.name.find("rope_cos_turns") != std::string::npos;
  // (Gemma 3: one per rotary base.)
  EXPECT_EQ(cos_tables, g.local_theta > 0 ? 2u : 1u) << "for " << g.L << " layers";
  ModelExecutor exec(graph, groups, llvm());
  exec.set_params(m.params);
  expect_close(run_on_ids(exec, ids), llama_ref(c, g, ids), 5e-5);
}

// Greedy generation with the cache: every step's logits against the float64 forward of the
// whole sequence so far, and the same tokens.
void check_generation(const LlamaDims& g, const std::string& tag, nlohmann::json extra = {},
                      KernelPolicy policy = KernelPolicy::Untuned) {
  SCOPED_TRACE(g.type + " " + tag + " " + to_string(policy));
  LlamaFolder c(g, tag, std::move(extra));
  c.write();
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  KernelSelectionOptions options;
  options.policy = policy;
  KernelSelector sel(host(), options);
  Generator gen(host(), m.config, sel, m.params, GenerationShape{{}, {8, 16}});
  TokenSampler greedy(SamplingOptions{});
  std::vector<int32_t> tokens = {3, 17, 41, 8};
  const float* logits = gen.prefill(tokens);
  for (int step = 0; step < 8; ++step) {
    Matrix want = llama_ref(c, g, tokens);
    const size_t V = g.V, last = tokens.size() - 1;
    Matrix got(logits, logits + V), want_last(want.begin() + last * V, want.begin() + last * V + V);
    expect_close(got, want_last, 5e-5);
    int32_t next = greedy.next(logits, gen.vocab());
    std::vector<float> wf(want_last.begin(), want_last.end());
    EXPECT_EQ(next, greedy.next(wf.data(), gen.vocab())) << "step " << step;
    tokens.push_back(next);
    logits = gen.step(next);
  }
  // Several tokens at a time against the cache, padded to buckets of 2 and 4: a prompt of 7
  // in two chunks, a run of 5 more (a chat turn's), then a prompt sharing the first 6 tokens
  // of those 12 (a conversation re-rendered differently from there). Rotations, windows and
  // the library's kernels see positions past the first chunk's.
  Generator chunked(host(), m.config, sel, m.params, GenerationShape{{2, 4}, {8, 16}});
  auto expect_last = [&](const float* got, const std::vector<int32_t>& seq, const char* what) {
    SCOPED_TRACE(what);
    Matrix want = llama_ref(c, g, seq);
    const size_t V = g.V, last = seq.size() - 1;
    expect_close(Matrix(got, got + V), Matrix(want.begin() + last * V, want.begin() + last * V + V),
                 5e-5);
  };
  std::vector<int32_t> seq = {3, 17, 41, 8, 29, 4, 40};
  expect_last(chunked.prefill(seq), seq, "a prompt in chunks");
  const std::vector<int32_t> more = {5, 9, 2, 33, 12};
  seq.insert(seq.end(), more.begin(), more.end());
  expect_last(chunked.extend(more), seq, "extended");
  std::vector<int32_t> other(seq.begin(), seq.begin() + 6);
  other.insert(other.end(), {21, 22, 23});
  expect_last(chunked.prefill_reusing(other), other, "reusing a prefix");
  EXPECT_EQ(chunked.last_reused(), 6);
}

// The folder's generation artifact (`model compile --generation`) run by the runtime's
// CompiledGenerator (no LLVM, no core): every greedy step's logits against the float64
// forward of the whole sequence -- rotations, grouped-query attention, and Mistral's window of
// 3 -- across the capacities 8 and 16, then a prompt reusing a prefix of the cache.
void check_artifact_generation(const LlamaDims& g, const std::string& tag,
                               nlohmann::json extra = {}) {
  SCOPED_TRACE(g.type + " " + tag);
  LlamaFolder c(g, tag, std::move(extra));
  c.write();
  const fs::path out = c.dir / "artifact";
  CliResult r =
      metatune("model compile --hf " + c.dir.string() +
               " --generation --prompt-buckets 4,8 --capacities 8,16 -q --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  rt::CompiledGenerator gen = rt::CompiledGenerator::load(out.string());
  ASSERT_EQ(gen.vocab(), g.V);
  std::vector<int32_t> tokens = {3, 17, 41, 8, 29};
  const float* logits = gen.prefill(tokens);
  TokenSampler greedy(SamplingOptions{});
  for (int step = 0; step < 7; ++step) {
    Matrix want = llama_ref(c, g, tokens);
    const size_t V = g.V, last = tokens.size() - 1;
    Matrix want_last(want.begin() + last * V, want.begin() + last * V + V);
    expect_close(Matrix(logits, logits + V), want_last, 5e-5);
    const int32_t next = greedy.next(logits, gen.vocab());
    std::vector<float> wf(want_last.begin(), want_last.end());
    EXPECT_EQ(next, greedy.next(wf.data(), gen.vocab())) << "step " << step;
    tokens.push_back(next);
    logits = gen.step(next);
  }
  // A prompt sharing the first 6 of those tokens: the rest through the extend builds (4 tokens,
  // rotated at their positions past the shared prefix).
  std::vector<int32_t> other(tokens.begin(), tokens.begin() + 6);
  other.insert(other.end(), {21, 22, 23, 24, 25});
  logits = gen.prefill_reusing(other);
  EXPECT_EQ(gen.last_reused(), 6);
  Matrix want = llama_ref(c, g, other);
  const size_t V = g.V, last = other.size() - 1;
  expect_close(Matrix(logits, logits + V),
               Matrix(want.begin() + last * V, want.begin() + last * V + V), 5e-5);
}

TEST(HfLlama, GenerationArtifactMatchesTheFloat64Recompute) {
  check_artifact_generation(LlamaDims{}, "aot_gen");
  LlamaDims mistral;
  mistral.type = "mistral";
  mistral.window = 3;
  check_artifact_generation(mistral, "aot_gen_mistral", {{"sliding_window", 3}});
}

TEST(HfLlama, FolderLoadsAndMatchesAFloat64LlamaForward) {
  check_forward(LlamaDims{}, "ok");
}

TEST(HfLlama, GenerationWithTheCacheMatchesTheFloat64Recompute) {
  check_generation(LlamaDims{}, "gen");
}

// Qwen2 (Qwen2.5): biases on q, k and v, none on o; a tied head.
TEST(HfLlama, Qwen2WithItsProjectionBiasesMatches) {
  LlamaDims g;
  g.type = "qwen2";
  g.qkv_bias = g.tied = true;
  check_forward(g, "qwen2", {{"use_sliding_window", false}, {"sliding_window", 4}});
  check_generation(g, "qwen2_gen");
}

// Mistral's sliding window (3 positions) in the prompt and in every decode step, where the
// cache holds more rows than the window lets a query see.
TEST(HfLlama, MistralSlidingWindowMatchesInPromptAndGeneration) {
  LlamaDims g;
  g.type = "mistral";
  g.window = 3;
  check_forward(g, "mistral", {{"sliding_window", 3}});
  check_generation(g, "mistral_gen", {{"sliding_window", 3}});
  // The library's kernels (oneDNN's matrix products take the window's mask as a post-op).
  check_generation(g, "mistral_lib", {{"sliding_window", 3}}, KernelPolicy::Library);
  g.window = 0; // null: no window
  check_forward(g, "mistral_null", {{"sliding_window", nullptr}});
}

// Qwen3: q and k RMS-normalised per head before the rotation, heads wider than hidden / heads
// (head_dim 16 with hidden 32 and 4 heads: q is 64 wide), a tied head.
TEST(HfLlama, Qwen3WithItsPerHeadNormsMatches) {
  LlamaDims g;
  g.type = "qwen3";
  g.qk_norm = g.tied = true;
  g.head_dim = 16;
  check_forward(g, "qwen3", {{"attention_bias", false}, {"use_sliding_window", false}});
  check_generation(g, "qwen3_gen");
}

// Phi-3: one qkv_proj and one gate_up_proj (split into the layers' parameters at load), a
// sliding window; in transformers 5's form the partial rotary factor sits in rope_parameters.
TEST(HfLlama, Phi3WithFusedProjectionsMatches) {
  LlamaDims g;
  g.type = "phi3";
  g.fused = true;
  g.window = 5;
  check_forward(g, "phi3", {{"sliding_window", 5}});
  check_generation(g, "phi3_gen", {{"sliding_window", 5}});
  LlamaFolder partial(
      g, "phi3_partial",
      {{"rope_parameters",
        {{"rope_type", "default"}, {"rope_theta", 500.0}, {"partial_rotary_factor", 0.5}}},
       {"rope_theta", nullptr}});
  partial.write();
  EXPECT_EQ(load_hf_checkpoint(host(), partial.dir.string())
                .config.get<int64_t>("transformer.layer.self_attention.attention.qkv.rotary_dim"),
            g.Dh() / 2);
}

// YaRN (Qwen2.5's and Qwen3's long-context rope_scaling): an original context of 256 with head
// width 8 and theta 500 puts frequencies on both sides of its band and two inside; the attention
// factor 0.1 ln(4) + 1 on cos and sin. LongRoPE (Phi-3.5, Phi-4): the short factors, the
// original context at the top of config.json, sqrt(1 + ln(128 / 32) / ln(32)) on cos and sin,
// and sequences limited to that original context (transformers switches to the long factors
// past it).
TEST(HfLlama, YarnAndLongRopeMatch) {
  LlamaDims q;
  q.type = "qwen2";
  q.qkv_bias = true;
  q.yarn_factor = 4;
  q.original = 256;
  q.amplitude = 0.1 * std::log(4.0) + 1;
  nlohmann::json yarn = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 256}};
  check_forward(q, "yarn", {{"rope_scaling", yarn}, {"use_sliding_window", false}});
  check_generation(q, "yarn_gen", {{"rope_scaling", yarn}, {"use_sliding_window", false}});
  q.yarn_truncate = false;
  yarn["truncate"] = false;
  yarn["beta_fast"] = nullptr; // transformers: `beta_fast or 32`
  check_forward(q, "yarn_loose", {{"rope_scaling", yarn}, {"use_sliding_window", false}});

  LlamaDims p;
  p.type = "phi3";
  p.fused = true;
  p.divisors = {1.0, 1.5, 2.25, 7.0};
  p.amplitude = std::sqrt(1 + std::log(4.0) / std::log(32.0));
  p.max_positions = 32;
  const nlohmann::json longrope = {
      {"rope_scaling",
       {{"type", "longrope"}, {"short_factor", p.divisors}, {"long_factor", {2.0, 3.0, 4.0, 5.0}}}},
      {"original_max_position_embeddings", 32},
      {"max_position_embeddings", 128}};
  check_forward(p, "longrope", longrope);
  check_generation(p, "longrope_gen", longrope);
  LlamaFolder limited(p, "longrope_limit", longrope);
  limited.write();
  EXPECT_EQ(load_hf_checkpoint(host(), limited.dir.string()).max_positions, 32);
  // The CLI holds to it: generation stops there, a longer run is refused.
  std::string ids;
  for (int i = 0; i < 30; ++i)
    ids += (ids.empty() ? "" : ",") + std::to_string(3 + i % 40);
  graph_test::CliResult gen =
      graph_test::metatune("model generate --hf " + limited.dir.string() + " --prompt-ids " + ids +
                           " --max-new-tokens 8 --ignore-eos --greedy -q");
  ASSERT_EQ(gen.status, 0) << gen.output;
  EXPECT_NE(gen.output.find("stopped at the longest sequence (32 tokens)"), std::string::npos)
      << gen.output;
  graph_test::CliResult run = graph_test::metatune("model run --hf " + limited.dir.string() +
                                                   " --tokens " + ids + ",5,5,5 -q");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.output.find("33 tokens: " + limited.dir.string() + " is right for 32 positions"),
            std::string::npos)
      << run.output;
  // A "dynamic" (NTK) scaling changes nothing up to max_position_embeddings.
  check_forward(LlamaDims{}, "dynamic",
                {{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}}});
}

// Gemma: norms scaling by 1 + weight, embeddings times sqrt(hidden), GeGLU with the tanh GELU,
// a tied head. Gemma 2: norms after the attention and the MLP too, the scores scaled by
// query_pre_attn_scalar^-1/2 and soft-capped, the logits soft-capped (caps that bite here), and
// its even layers over a sliding window, the odd ones over everything (a window of 3 under
// prompts of 7 and up to 12 tokens).
TEST(HfLlama, GemmaAndGemma2Match) {
  LlamaDims g;
  g.type = "gemma";
  g.gemma = g.tied = true;
  g.head_dim = 16;
  check_forward(g, "gemma", {{"hidden_activation", "gelu_pytorch_tanh"}});
  g.type = "gemma2";
  g.sandwich = true;
  g.query_scalar = 24;
  g.attn_softcap = 1.5;
  g.final_softcap = 2.0;
  const nlohmann::json gemma2 = {{"hidden_activation", "gelu_pytorch_tanh"},
                                 {"query_pre_attn_scalar", 24},
                                 {"attn_logit_softcapping", 1.5},
                                 {"final_logit_softcapping", 2.0},
                                 {"sliding_window", 3}};
  g.window = 3;
  g.windowed = {true, false};
  check_forward(g, "gemma2", gemma2);
  check_generation(g, "gemma2_gen", gemma2);
  check_generation(g, "gemma2_lib", gemma2, KernelPolicy::Library);
  // transformers 5's layer_types say which layers are which.
  nlohmann::json typed = gemma2;
  typed["layer_types"] = {"full_attention", "sliding_attention"};
  g.windowed = {false, true};
  check_forward(g, "gemma2_typed", typed);
}

// Qwen2 with use_sliding_window: layers from max_window_layers on are windowed, the ones before
// attend over everything; without use_sliding_window the window is ignored, as transformers
// does.
TEST(HfLlama, Qwen2WindowFromMaxWindowLayersOn) {
  LlamaDims q;
  q.type = "qwen2";
  q.qkv_bias = true;
  q.window = 3;
  q.windowed = {false, true};
  const nlohmann::json windowed = {
      {"use_sliding_window", true}, {"sliding_window", 3}, {"max_window_layers", 1}};
  check_forward(q, "qwen2_window", windowed);
  check_generation(q, "qwen2_window_gen", windowed);
  q.windowed = {false, false};
  check_forward(q, "qwen2_unused_window",
                {{"use_sliding_window", false}, {"sliding_window", 3}, {"max_window_layers", 1}});
}

// Gemma 3 (gemma3_text, the 1B's form): Gemma 2's sandwich norms and query scalar without its
// soft-caps, q and k RMS-normalised per head by 1 + weight, every second layer global here
// (sliding_window_pattern 2; 6 in the checkpoints) and windowed the others, and two rotary
// tables: the windowed layers' base rope_local_base_freq, the global layers' rope_theta with
// its linear scaling -- in transformers 4's fields and transformers 5's nested rope_parameters.
TEST(HfLlama, Gemma3Matches) {
  LlamaDims g;
  g.type = "gemma3_text";
  g.gemma = g.tied = g.sandwich = g.qk_norm = true;
  g.head_dim = 16;
  g.query_scalar = 24;
  g.window = 3;
  g.windowed = {true, false};
  g.theta = 500;
  g.linear_factor = 2;
  g.local_theta = 50;
  const nlohmann::json v4 = {{"hidden_activation", "gelu_pytorch_tanh"},
                             {"query_pre_attn_scalar", 24},
                             {"final_logit_softcapping", nullptr},
                             {"attn_logit_softcapping", nullptr},
                             {"sliding_window", 3},
                             {"sliding_window_pattern", 2},
                             {"rope_theta", 500.0},
                             {"rope_local_base_freq", 50.0},
                             {"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}}};
  check_forward(g, "gemma3", v4);
  check_generation(g, "gemma3_gen", v4);
  nlohmann::json v5 = v4;
  v5.erase("rope_scaling");
  v5.erase("rope_local_base_freq");
  v5.erase("sliding_window_pattern");
  v5["rope_theta"] = nullptr;
  v5["rope_parameters"] = {
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 50.0}}},
      {"full_attention", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 500.0}}}};
  v5["layer_types"] = {"sliding_attention", "full_attention"};
  check_forward(g, "gemma3_v5", v5);
}

// Llama 3.1/3.2: "llama3" rope scaling (an original context of 64 positions, so that with head
// width 8 and theta 500 the four frequencies are kept, blended and divided) -- in transformers
// 4's rope_scaling and transformers 5's rope_parameters -- and Llama's attention_bias (q, k, v
// and o) and mlp_bias.
TEST(HfLlama, Llama3RopeScalingAndBiasesMatch) {
  LlamaDims g;
  g.llama3_factor = 8;
  g.low = 1;
  g.high = 4;
  g.original = 64;
  int kept = 0, divided = 0;
  for (size_t i = 0; i < 4; ++i) {
    LlamaDims plain;
    double ratio = frequency(plain, i, 8) / frequency(g, i, 8);
    kept += std::abs(ratio - 1) < 1e-12;
    divided += std::abs(ratio - 8) < 1e-9;
  }
  ASSERT_EQ(kept, 1);
  ASSERT_EQ(divided, 2);
  nlohmann::json scaling = {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 64}};
  check_forward(g, "llama3", {{"rope_scaling", scaling}});
  nlohmann::json params = scaling;
  params["rope_theta"] = g.theta;
  check_forward(g, "llama3_v5", {{"rope_parameters", params}, {"rope_theta", nullptr}});
  g.qkv_bias = g.o_bias = g.mlp_bias = true;
  check_forward(g, "llama3_bias",
                {{"rope_scaling", scaling}, {"attention_bias", true}, {"mlp_bias", true}});
  check_generation(g, "llama3_gen",
                   {{"rope_scaling", scaling}, {"attention_bias", true}, {"mlp_bias", true}});
}

std::string load_error(const LlamaFolder& c) {
  try {
    load_hf_checkpoint(host(), c.dir.string());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(loaded)";
}

// `model generate --hf` stops at an end-of-sequence id that only generation_config.json names
// (as an instruct model's end of turn is), and at config.json's; --ignore-eos runs on.
TEST(HfLlama, GenerateStopsAtTheEosOfEitherConfig) {
  LlamaDims g;
  LlamaFolder c(g, "eos", {{"eos_token_id", nullptr}});
  c.write();
  const std::string base = "model generate --hf " + c.dir.string() +
                           " --prompt-ids 3,17,41,8 --max-new-tokens 6 --greedy";
  graph_test::CliResult free_run = graph_test::metatune(base);
  ASSERT_EQ(free_run.status, 0) << free_run.output;
  // The first generated id: the line before "prompt N tokens" holds the ids.
  const std::string out = free_run.output;
  const size_t line_end = out.find("\nprompt ");
  ASSERT_NE(line_end, std::string::npos) << out;
  const size_t line_start = out.rfind('\n', line_end - 1) + 1;
  const int first = std::stoi(out.substr(line_start, line_end - line_start));
  EXPECT_EQ(out.find("stopped at the end-of-sequence"), std::string::npos) << out;
  std::ofstream(c.dir / "generation_config.json")
      << nlohmann::json{{"eos_token_id", {999, first}}}.dump();
  graph_test::CliResult stopped = graph_test::metatune(base);
  ASSERT_EQ(stopped.status, 0) << stopped.output;
  EXPECT_NE(stopped.output.find("stopped at the end-of-sequence token " + std::to_string(first)),
            std::string::npos)
      << stopped.output;
  graph_test::CliResult ignored = graph_test::metatune(base + " --ignore-eos");
  EXPECT_EQ(ignored.output.find("stopped at the end-of-sequence"), std::string::npos)
      << ignored.output;
}

// `model chat`: each input line a user turn; the conversation so far goes through the folder's
// chat template (here one whose text the test writes out itself), the prompt's ids are the
// tokenizer's of that text, the reply is what `model generate --prompt-ids` gives for them, and
// it joins the conversation as the assistant's turn; /reset starts over.
TEST(HfLlama, ChatCarriesTheConversationThroughItsTemplate) {
  LlamaDims g;
  LlamaFolder c(g, "chat");
  c.write();
  std::vector<std::string> words = {"[PAD]", "[UNK]",     "[CLS]", "[SEP]", "[MASK]",
                                    "user",  "assistant", ":",     "hello", "there",
                                    "how",   "are",       "you"};
  for (int i = 0; static_cast<int64_t>(words.size()) < g.V; ++i)
    words.push_back("w" + std::to_string(i));
  std::ofstream vocab(c.dir / "vocab.txt");
  for (const std::string& w : words)
    vocab << w << "\n";
  vocab.close();
  std::ofstream(c.dir / "tokenizer_config.json")
      << nlohmann::json{{"chat_template",
                         "{% for m in messages %}{{ m.role }} : {{ m.content }} {% endfor %}"
                         "{% if add_generation_prompt %}assistant :{% endif %}"}}
             .dump();
  std::ofstream(c.dir / "input.txt") << "hello there\nhow are you\n/reset\nhello there\n";
  const std::string report = (c.dir / "chat.json").string();
  graph_test::CliResult r = graph_test::metatune(
      "model chat --hf " + c.dir.string() + " --max-new-tokens 3 --ignore-eos -q --report-json " +
      report + " < " + (c.dir / "input.txt").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json turns = nlohmann::json::parse(std::ifstream(report))["turns"];
  ASSERT_EQ(turns.size(), 3u) << r.output;
  const std::string first = "user : hello there assistant :";
  EXPECT_EQ(turns[0]["prompt"], first);
  const std::string reply = turns[0]["reply"].get<std::string>();
  EXPECT_EQ(turns[1]["prompt"],
            "user : hello there assistant : " + reply + " user : how are you assistant :");
  EXPECT_EQ(turns[2]["prompt"], first);
  EXPECT_EQ(turns[2]["new_tokens"], turns[0]["new_tokens"]);
  // Each turn computes what follows the prefix its prompt shares with the conversation held:
  // turn 2 all of turn 1's prompt at least, turn 3 (after /reset: turn 1's prompt again) all
  // but its last token.
  EXPECT_EQ(turns[0]["cached_tokens"], 0);
  EXPECT_GE(turns[1]["cached_tokens"].get<size_t>(), turns[0]["prompt_ids"].size());
  EXPECT_EQ(turns[2]["cached_tokens"].get<size_t>(), turns[2]["prompt_ids"].size() - 1);
  const tok::Tokenizer tokenizer = tok::Tokenizer::load(c.dir.string());
  for (const auto& t : turns) {
    std::vector<int32_t> ids;
    for (tok::TokenId id : tokenizer.encode(t["prompt"].get<std::string>()))
      ids.push_back(static_cast<int32_t>(id));
    EXPECT_EQ(t["prompt_ids"].get<std::vector<int32_t>>(), ids);
    ASSERT_EQ(t["new_tokens"].size(), 3u);
  }
  // The second turn's reply, as `model generate` gives it for the same ids.
  std::string ids;
  for (const auto& id : turns[1]["prompt_ids"])
    ids += (ids.empty() ? "" : ",") + id.dump();
  const std::string gen_report = (c.dir / "generate.json").string();
  graph_test::CliResult gen = graph_test::metatune(
      "model generate --hf " + c.dir.string() + " --prompt-ids " + ids +
      " --max-new-tokens 3 --ignore-eos --greedy -q --report-json " + gen_report);
  ASSERT_EQ(gen.status, 0) << gen.output;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(gen_report))["new_tokens"], turns[1]["new_tokens"]);
  // Without a chat template the folder is refused by name.
  fs::remove(c.dir / "tokenizer_config.json");
  graph_test::CliResult none = graph_test::metatune("model chat --hf " + c.dir.string() + " < " +
                                                    (c.dir / "input.txt").string());
  EXPECT_NE(none.status, 0);
  EXPECT_NE(none.output.find("has no chat template"), std::string::npos) << none.output;
}

// A sharded checkpoint loads the same parameters as the single file; a broken index is named.
TEST(HfLlama, ShardedCheckpointsLoadAsOne) {
  LlamaDims g;
  LlamaFolder one(g, "single"), two(g, "sharded");
  one.write();
  two.write_sharded();
  HfModel a = load_hf_checkpoint(host(), one.dir.string());
  HfModel b = load_hf_checkpoint(host(), two.dir.string());
  ASSERT_EQ(a.params.size(), b.params.size());
  for (const auto& [path, x] : a.params) {
    const NDArray& y = b.params.at(path);
    ASSERT_EQ(x.shape(), y.shape()) << path;
    EXPECT_TRUE(
        std::equal(x.data_as<float>(), x.data_as<float>() + x.num_elements(), y.data_as<float>()))
        << path;
  }
  // A shard the index names is missing; a tensor the index puts in the wrong shard; a name
  // that leaves the folder.
  const fs::path index = two.dir / "model.safetensors.index.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(index));
  fs::rename(two.dir / "model-00002-of-00002.safetensors", two.dir / "moved.safetensors");
  EXPECT_NE(load_error(two).find("model-00002-of-00002.safetensors"), std::string::npos)
      << load_error(two);
  fs::rename(two.dir / "moved.safetensors", two.dir / "model-00002-of-00002.safetensors");
  j["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors";
  std::ofstream(index) << j.dump();
  EXPECT_NE(load_error(two).find("weight_map puts 'model.norm.weight' in "
                                 "model-00001-of-00002.safetensors, which has no such tensor"),
            std::string::npos)
      << load_error(two);
  j["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
  std::ofstream(index) << j.dump();
  EXPECT_NE(load_error(two).find("names '../elsewhere.safetensors', not a file of the folder"),
            std::string::npos)
      << load_error(two);
  std::ofstream(index) << "{\"weight_map\": 3}";
  EXPECT_NE(load_error(two).find("not a JSON object with a \"weight_map\""), std::string::npos)
      << load_error(two);
}

TEST(HfLlama, WhatTheLoaderRefusesIsNamed) {
  LlamaDims g;
  LlamaFolder scaling(g, "scaling", {{"rope_scaling", {{"type", "su"}, {"factor", 2.0}}}});
  scaling.write();
  EXPECT_NE(load_error(scaling).find("rope type 'su' is not supported (default, linear, llama3, "
                                     "yarn, longrope, dynamic)"),
            std::string::npos)
      << load_error(scaling);
  LlamaFolder no_short(g, "no_short",
                       {{"rope_scaling", {{"type", "longrope"}, {"long_factor", {1.0}}}}});
  no_short.write();
  EXPECT_NE(load_error(no_short).find("rope_scaling needs a list of numbers 'short_factor'"),
            std::string::npos)
      << load_error(no_short);
  LlamaFolder no_factor(g, "no_factor", {{"rope_scaling", {{"rope_type", "llama3"}}}});
  no_factor.write();
  EXPECT_NE(load_error(no_factor).find("rope_scaling needs a number 'factor'"), std::string::npos)
      << load_error(no_factor);
  LlamaDims q = g;
  q.type = "qwen2";
  q.qkv_bias = true;
  LlamaFolder windowed(q, "windowed",
                       {{"use_sliding_window", true},
                        {"sliding_window", 4},
                        {"layer_types", {"sliding_attention", "chunked_attention"}}});
  windowed.write();
  EXPECT_NE(load_error(windowed).find("layer_types[1] 'chunked_attention' is not supported"),
            std::string::npos)
      << load_error(windowed);
  LlamaFolder bias_text(g, "bias_text", {{"attention_bias", "yes"}});
  bias_text.write();
  EXPECT_NE(load_error(bias_text).find("\"attention_bias\" is not true or false: \"yes\""),
            std::string::npos)
      << load_error(bias_text);
  // A bias the config promises and the file lacks is named.
  LlamaDims qb = q;
  LlamaFolder no_bias(qb, "no_bias");
  no_bias.tensors.erase("model.layers.0.self_attn.k_proj.bias");
  no_bias.write();
  EXPECT_NE(load_error(no_bias).find("model.layers.0.self_attn.k_proj.bias"), std::string::npos)
      << load_error(no_bias);
  LlamaFolder gqa(g, "gqa", {{"num_key_value_heads", 3}});
  gqa.write();
  EXPECT_NE(load_error(gqa).find("num_key_value_heads 3"), std::string::npos) << load_error(gqa);
  LlamaFolder missing(g, "missing");
  missing.tensors.erase("model.layers.1.mlp.up_proj.weight");
  missing.write();
  EXPECT_NE(load_error(missing).find("model.layers.1.mlp.up_proj.weight"), std::string::npos)
      << load_error(missing);
}

} // namespace
} // namespace mt
