// A Hugging Face GPT-2 checkpoint folder (config.json + model.safetensors with HF's names and
// layouts, random weights written here) loaded through core/graph/hf_checkpoint.h and run,
// against a float64 GPT-2 forward computed here straight from the HF-named arrays (Conv1D
// weights [in, out], fused c_attn, tanh GELU, tied head); and the loader's errors.
#include "core/graph/hf_checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bert_checkpoint.h"
#include "core/graph/layer_registry.h"
#include "core/model/safetensors_writer.h"
#include "graph_test_util.h"
#include "hf_tensors.h"
#include "tuned_model.h"

namespace mt {
namespace {

using namespace graph_test;
namespace fs = std::filesystem;

struct Gpt2Dims {
  int64_t V = 45, P = 16, D = 16, L = 2, H = 2;
};

// A checkpoint folder, removed at the end.
struct Checkpoint : HfTensors {
  fs::path dir;

  explicit Checkpoint(const Gpt2Dims& g, const std::string& tag) : HfTensors(sine, 0.37, 1) {
    dir = fs::temp_directory_path() / ("mt_hf_" + tag + "_" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << nlohmann::json{
        {"model_type", "gpt2"},
        {"vocab_size", g.V},
        {"n_positions", g.P},
        {"n_embd", g.D},
        {"n_layer", g.L},
        {"n_head", g.H},
        {"n_inner", nullptr},
        {"activation_function", "gelu_new"},
        {"layer_norm_epsilon", 1e-5},
        {"architectures",
         {"GPT2LMHeadModel"}}}.dump(2);
    const int64_t D = g.D, F = 4 * g.D;
    add("wte.weight", {g.V, D}, 0.1, 0);
    add("wpe.weight", {g.P, D}, 0.05, 0);
    for (int64_t l = 0; l < g.L; ++l) {
      std::string h = "h." + std::to_string(l) + ".";
      add(h + "ln_1.weight", {D}, 0.1, 1), add(h + "ln_1.bias", {D}, 0.05, 0);
      add(h + "attn.c_attn.weight", {D, 3 * D}, 0.15, 0),
          add(h + "attn.c_attn.bias", {3 * D}, 0.02, 0);
      add(h + "attn.c_proj.weight", {D, D}, 0.1, 0), add(h + "attn.c_proj.bias", {D}, 0.02, 0);
      add(h + "ln_2.weight", {D}, 0.1, 1), add(h + "ln_2.bias", {D}, 0.05, 0);
      add(h + "mlp.c_fc.weight", {D, F}, 0.1, 0), add(h + "mlp.c_fc.bias", {F}, 0.02, 0);
      add(h + "mlp.c_proj.weight", {F, D}, 0.1, 0), add(h + "mlp.c_proj.bias", {D}, 0.02, 0);
      add(h + "attn.bias", {1, 1, g.P, g.P}, 0, 1); // the causal-mask buffer of old exports
    }
    add("ln_f.weight", {D}, 0.1, 1), add("ln_f.bias", {D}, 0.05, 0);
  }
  ~Checkpoint() { fs::remove_all(dir); }

  void write() const { HfTensors::write(dir / "model.safetensors"); }
};

double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// x [rows, in] @ w [in, out] + b: GPT-2's Conv1D.
Matrix conv1d(const Matrix& x, const Matrix& w, const Matrix& b, size_t rows, size_t in,
              size_t out) {
  Matrix y(rows * out);
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) {
      double s = b[o];
      for (size_t k = 0; k < in; ++k)
        s += x[r * in + k] * w[k * out + o];
      y[r * out + o] = s;
    }
  return y;
}

Matrix gpt2_ref(const Checkpoint& c, const Gpt2Dims& g, const std::vector<int32_t>& ids) {
  const size_t S = ids.size(), D = g.D, F = 4 * g.D;
  Matrix wte = c.m("wte.weight"), wpe = c.m("wpe.weight"), h(S * D);
  for (size_t t = 0; t < S; ++t)
    for (size_t d = 0; d < D; ++d)
      h[t * D + d] = wte[ids[t] * D + d] + wpe[t * D + d];
  for (int64_t l = 0; l < g.L; ++l) {
    std::string p = "h." + std::to_string(l) + ".";
    Matrix n = layer_norm_ref(h, c.m(p + "ln_1.weight"), c.m(p + "ln_1.bias"), S, D, 1e-5);
    Matrix qkv = conv1d(n, c.m(p + "attn.c_attn.weight"), c.m(p + "attn.c_attn.bias"), S, D, 3 * D);
    Matrix q(S * D), k(S * D), v(S * D);
    for (size_t r = 0; r < S; ++r)
      for (size_t e = 0; e < D; ++e)
        q[r * D + e] = qkv[r * 3 * D + e], k[r * D + e] = qkv[r * 3 * D + D + e],
                  v[r * D + e] = qkv[r * 3 * D + 2 * D + e];
    // attention_ref's output projection is [out, in]: transpose c_proj.
    Matrix cw = c.m(p + "attn.c_proj.weight"), ow(D * D);
    for (size_t i = 0; i < D; ++i)
      for (size_t o = 0; o < D; ++o)
        ow[o * D + i] = cw[i * D + o];
    Matrix ob = c.m(p + "attn.c_proj.bias");
    Dims d{1, S, D, static_cast<size_t>(g.H), static_cast<size_t>(g.H), D / g.H};
    Matrix a = attention_ref(d, q, k, v, ow, &ob, true, nullptr);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += a[i];
    Matrix n2 = layer_norm_ref(h, c.m(p + "ln_2.weight"), c.m(p + "ln_2.bias"), S, D, 1e-5);
    Matrix u = conv1d(n2, c.m(p + "mlp.c_fc.weight"), c.m(p + "mlp.c_fc.bias"), S, D, F);
    for (double& e : u)
      e = gelu_tanh(e);
    Matrix y = conv1d(u, c.m(p + "mlp.c_proj.weight"), c.m(p + "mlp.c_proj.bias"), S, F, D);
    for (size_t i = 0; i < h.size(); ++i)
      h[i] += y[i];
  }
  h = layer_norm_ref(h, c.m("ln_f.weight"), c.m("ln_f.bias"), S, D, 1e-5);
  return linear_ref(h, wte, nullptr, S, D, g.V); // tied head: logits = h wte^T
}

// The GPT-2 folder's model on its ids, run by `exec` (untuned or tuned kernels), against the
// float64 forward.
void expect_gpt2_matches(const Checkpoint& c, const Gpt2Dims& g, const ModelGraph& graph,
                         ModelExecutor& exec, const HfModel& m, const std::vector<int32_t>& ids) {
  exec.set_params(m.params); // every parameter, by path (set_params refuses unknown ones)
  EXPECT_EQ(m.params.size(), graph.params.size());
  expect_close(run_on_ids(exec, ids), gpt2_ref(c, g, ids), 5e-5);
}

TEST(HfCheckpoint, Gpt2FolderLoadsAndMatchesAFloat64Gpt2Forward) {
  Gpt2Dims g;
  Checkpoint c(g, "ok");
  c.write();
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  EXPECT_EQ(m.model_type, "gpt2");
  std::vector<int32_t> ids = {7, 44, 0, 13, 13, 2};
  te::Tensor in = te::placeholder({1, static_cast<int64_t>(ids.size())}, DType::i32(), "ids");
  ModelGraph graph = instantiate_model(host(), m.config, {in});
  ModelExecutor exec(graph, fuse(graph.outputs), llvm());
  expect_gpt2_matches(c, g, graph, exec, m, ids);
}

TEST(HfCheckpoint, Gpt2FolderTunedMatchesTheFloat64Forward) {
  Gpt2Dims g;
  Checkpoint c(g, "tuned");
  c.write();
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  std::vector<int32_t> ids = {7, 44, 0, 13, 13, 2};
  te::Tensor in = te::placeholder({1, static_cast<int64_t>(ids.size())}, DType::i32(), "ids");
  ModelGraph graph = instantiate_model(host(), m.config, {in});
  TunedModel tuned(graph, "gpt2");
  tuned.expect_all_tuned();
  expect_gpt2_matches(c, g, graph, *tuned.exec, m, ids);
}

// The BERT folder's model on padded ids, run by `exec`, against the float64 forward.
// (`types` given: the model's third input, its token types.)
void expect_bert_matches(const BertCheckpoint& c, const HfModel& m, ModelExecutor& exec,
                         const std::vector<int32_t>& ids, const Matrix& mask,
                         const std::vector<int32_t>& types = {}) {
  const int64_t S = static_cast<int64_t>(ids.size());
  exec.set_params(m.params);
  NDArray x(DType::i32(), {1, S}), xm(DType::f32(), {1, S}), xt(DType::i32(), {1, S});
  std::copy(ids.begin(), ids.end(), x.data_as<int32_t>());
  for (int64_t t = 0; t < S; ++t)
    xm.data_as<float>()[t] = static_cast<float>(mask[t]);
  std::vector<NDArray> in = {x, xm};
  if (!types.empty()) {
    std::copy(types.begin(), types.end(), xt.data_as<int32_t>());
    in.push_back(xt);
  }
  std::vector<NDArray> out = exec.run(in);
  const float* got = out.at(0).data_as<float>();
  expect_close(Matrix(got, got + out[0].num_elements()), c.forward(ids, mask, types), 1e-4);
}

ModelGraph bert_graph(const HfModel& m, int64_t S, bool types = false) {
  std::vector<te::Tensor> in = {te::placeholder({1, S}, DType::i32(), "ids"),
                                te::placeholder({1, S}, DType::f32(), "mask")};
  if (types) in.push_back(te::placeholder({1, S}, DType::i32(), "token_types"));
  return instantiate_model(host(), m.config, in);
}

TEST(HfCheckpoint, BertFolderLoadsAndMatchesAFloat64BertForwardWithPadding) {
  BertCheckpoint c;
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  EXPECT_EQ(m.model_type, "bert");
  std::vector<int32_t> ids = {2, 30, 5, 5, 0, 0, 0};
  ModelGraph graph = bert_graph(m, static_cast<int64_t>(ids.size()));
  ModelExecutor exec(graph, fuse(graph.outputs), llvm());
  expect_bert_matches(c, m, exec, ids, {1, 1, 1, 1, 1, 0, 0});
}

// A sentence pair's token types read the checkpoint's token_type_embeddings row by row.
TEST(HfCheckpoint, BertFolderTakesTokenTypesAsHuggingFacesForward) {
  BertCheckpoint c;
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  std::vector<int32_t> ids = {2, 30, 5, 3, 7, 8, 3};
  ModelGraph graph = bert_graph(m, static_cast<int64_t>(ids.size()), true);
  ModelExecutor exec(graph, fuse(graph.outputs), llvm());
  expect_bert_matches(c, m, exec, ids, {1, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 1, 1, 1});
}

TEST(HfCheckpoint, BertFolderTunedMatchesTheFloat64Forward) {
  BertCheckpoint c;
  HfModel m = load_hf_checkpoint(host(), c.dir.string());
  std::vector<int32_t> ids = {2, 30, 5, 5, 0, 0, 0};
  ModelGraph graph = bert_graph(m, static_cast<int64_t>(ids.size()));
  TunedModel tuned(graph, "bert");
  tuned.expect_all_tuned();
  expect_bert_matches(c, m, *tuned.exec, ids, {1, 1, 1, 1, 1, 0, 0});
}

std::string load_error(Checkpoint& c) {
  try {
    load_hf_checkpoint(host(), c.dir.string());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(HfCheckpoint, BadFoldersAreRefusedNamingFileAndTensor) {
  Gpt2Dims g;
  {
    Checkpoint c(g, "missing");
    c.tensors.erase("h.1.mlp.c_fc.bias");
    c.write();
    std::string e = load_error(c);
    EXPECT_NE(e.find("tensor 'h.1.mlp.c_fc.bias'"), std::string::npos) << e;
    EXPECT_NE(e.find("is missing"), std::string::npos) << e;
  }
  {
    Checkpoint c(g, "shape");
    c.shapes["h.0.attn.c_attn.weight"] = {3 * g.D, g.D}; // [out, in]: not GPT-2's layout
    c.write();
    std::string e = load_error(c);
    EXPECT_NE(e.find("'h.0.attn.c_attn.weight' is [48, 16], [16, 48] expected"), std::string::npos)
        << e;
  }
  {
    Checkpoint c(g, "extra");
    c.tensors["h.0.attn.rotary.inv_freq"] = {1, 2};
    c.shapes["h.0.attn.rotary.inv_freq"] = {2};
    c.write();
    std::string e = load_error(c);
    EXPECT_NE(e.find("tensors the model does not use: h.0.attn.rotary.inv_freq"), std::string::npos)
        << e;
  }
  {
    Checkpoint c(g, "type");
    std::ofstream(c.dir / "config.json") << R"({"model_type": "t5"})";
    EXPECT_NE(load_error(c).find("model_type 't5' is not supported yet"), std::string::npos);
    std::ofstream(c.dir / "config.json") << R"({"model_type": "gpt2", "n_embd": "16"})";
    EXPECT_NE(load_error(c).find("config.json: no \"vocab_size\""), std::string::npos)
        << load_error(c);
  }
}

} // namespace
} // namespace mt
