// A Hugging Face Llama checkpoint folder (config.json + model.safetensors in HF's names, random
// weights written here: grouped-query attention, untied head) loaded through
// core/graph/hf_checkpoint.h -- the rope plugin's rotary QKV layer around std.QKVLinear, RMSNorm,
// SwiGLU -- against a float64 Llama forward computed here from the HF-named arrays (rotate-half
// rotary embeddings with the config's rope_theta); generation with the key/value cache against
// the float64 forward of the whole sequence at every step; and what the loader refuses.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/graph/generator.h"
#include "core/graph/hf_checkpoint.h"
#include "core/graph/layer_registry.h"
#include "core/graph/token_sampler.h"
#include "core/model/safetensors_writer.h"
#include "graph_test_util.h"
#include "hf_tensors.h"

namespace mt {
namespace {

using namespace graph_test;
namespace fs = std::filesystem;

struct LlamaDims {
  int64_t V = 50, D = 32, L = 2, H = 4, KVH = 2, F = 48;
  double theta = 500.0, eps = 1e-5;
  int64_t Dh() const { return D / H; }
};

// The folder, removed at the end; tensors base + scale * sin(0.37 i + k), k per tensor.
struct LlamaFolder : HfTensors {
  fs::path dir;

  LlamaFolder(const LlamaDims& g, const std::string& tag, nlohmann::json extra = {})
      : HfTensors(sine, 0.37, 1) {
    dir = fs::temp_directory_path() / ("mt_llama_" + tag + "_" + std::to_string(getpid()));
    fs::create_directories(dir);
    nlohmann::json cfg = {{"model_type", "llama"},
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
                          {"tie_word_embeddings", false},
                          {"eos_token_id", 2}};
    if (extra.is_object()) cfg.update(extra);
    std::ofstream(dir / "config.json") << cfg.dump(2);
    const int64_t D = g.D, kv = g.KVH * g.Dh();
    add("model.embed_tokens.weight", {g.V, D}, 0.5, 0);
    for (int64_t l = 0; l < g.L; ++l) {
      std::string h = "model.layers." + std::to_string(l) + ".";
      add(h + "input_layernorm.weight", {D}, 0.1, 1);
      add(h + "self_attn.q_proj.weight", {D, D}, 0.2, 0);
      add(h + "self_attn.k_proj.weight", {kv, D}, 0.2, 0);
      add(h + "self_attn.v_proj.weight", {kv, D}, 0.2, 0);
      add(h + "self_attn.o_proj.weight", {D, D}, 0.15, 0);
      add(h + "post_attention_layernorm.weight", {D}, 0.1, 1);
      add(h + "mlp.gate_proj.weight", {g.F, D}, 0.15, 0);
      add(h + "mlp.up_proj.weight", {g.F, D}, 0.15, 0);
      add(h + "mlp.down_proj.weight", {D, g.F}, 0.15, 0);
    }
    add("model.norm.weight", {D}, 0.1, 1);
    add("lm_head.weight", {g.V, D}, 0.3, 0);
  }
  ~LlamaFolder() { fs::remove_all(dir); }
  void write() const { HfTensors::write(dir / "model.safetensors"); }
};

// Rotate-half rotary embedding of x [S, heads * Dh] in place: pairs (i, i + Dh/2) of each head
// turned by position * theta^(-2i/Dh).
void rotate_half(Matrix& x, size_t S, size_t heads, size_t Dh, double theta) {
  const size_t half = Dh / 2;
  for (size_t t = 0; t < S; ++t)
    for (size_t h = 0; h < heads; ++h)
      for (size_t i = 0; i < half; ++i) {
        double angle = static_cast<double>(t) *
                       std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(Dh));
        double* a = &x[t * heads * Dh + h * Dh + i];
        double* b = a + half;
        double x0 = *a, x1 = *b;
        *a = x0 * std::cos(angle) - x1 * std::sin(angle);
        *b = x1 * std::cos(angle) + x0 * std::sin(angle);
      }
}

// Logits [S, V] of the float64 Llama forward.
Matrix llama_ref(const LlamaFolder& c, const LlamaDims& g, const std::vector<int32_t>& ids) {
  const size_t S = ids.size(), D = g.D, Dh = g.Dh(), kv = g.KVH * Dh, F = g.F;
  Matrix emb = c.m("model.embed_tokens.weight"), h(S * D);
  for (size_t t = 0; t < S; ++t)
    for (size_t d = 0; d < D; ++d)
      h[t * D + d] = emb[ids[t] * D + d];
  for (int64_t l = 0; l < g.L; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Matrix n = rms_norm_ref(h, c.m(p + "input_layernorm.weight"), S, D, g.eps);
    Matrix q = linear_ref(n, c.m(p + "self_attn.q_proj.weight"), nullptr, S, D, D);
    Matrix k = linear_ref(n, c.m(p + "self_attn.k_proj.weight"), nullptr, S, D, kv);
    Matrix v = linear_ref(n, c.m(p + "self_attn.v_proj.weight"), nullptr, S, D, kv);
    rotate_half(q, S, g.H, Dh, g.theta);
    rotate_half(k, S, g.KVH, Dh, g.theta);
    Dims d{1, S, D, static_cast<size_t>(g.H), static_cast<size_t>(g.KVH), Dh};
    Matrix a =
        attention_ref(d, q, k, v, c.m(p + "self_attn.o_proj.weight"), nullptr, true, nullptr);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += a[i];
    Matrix n2 = rms_norm_ref(h, c.m(p + "post_attention_layernorm.weight"), S, D, g.eps);
    Matrix gate = linear_ref(n2, c.m(p + "mlp.gate_proj.weight"), nullptr, S, D, F);
    Matrix up = linear_ref(n2, c.m(p + "mlp.up_proj.weight"), nullptr, S, D, F);
    for (size_t i = 0; i < gate.size(); ++i)
      gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
    Matrix y = linear_ref(gate, c.m(p + "mlp.down_proj.weight"), nullptr, S, F, D);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += y[i];
  }
  h = rms_norm_ref(h, c.m("model.norm.weight"), S, D, g.eps);
  return linear_ref(h, c.m("lm_head.weight"), nullptr, S, D, g.V);
}

TEST(HfLlama, FolderLoadsAndMatchesAFloat64LlamaForward) {
  LlamaDims g;
  LlamaFolder c(g, "ok");
  c.write();
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  EXPECT_EQ(m.model_type, "llama");
  EXPECT_EQ(m.max_positions, 64);
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
  EXPECT_EQ(cos_tables, 1u) << "for " << g.L << " layers";
  ModelExecutor exec(graph, groups, llvm());
  exec.set_params(m.params);
  expect_close(run_on_ids(exec, ids), llama_ref(c, g, ids), 5e-5);
}

// Greedy generation with the cache: every step's logits against the float64 forward of the
// whole sequence so far, and the same tokens.
TEST(HfLlama, GenerationWithTheCacheMatchesTheFloat64Recompute) {
  LlamaDims g;
  LlamaFolder c(g, "gen");
  c.write();
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  KernelSelector sel(host(), KernelSelectionOptions{});
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
}

std::string load_error(const LlamaFolder& c) {
  try {
    load_hf_checkpoint(host(), c.dir.string());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(HfLlama, WhatTheLoaderRefusesIsNamed) {
  LlamaDims g;
  LlamaFolder scaling(g, "scaling", {{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}});
  scaling.write();
  EXPECT_NE(load_error(scaling).find("rope_scaling"), std::string::npos) << load_error(scaling);
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
