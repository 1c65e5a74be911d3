// Sentence embeddings from an artifact (see compiled_embedder.h). Everything embedding.json
// says is checked when it is loaded -- every graph as program.h checks one, and that each takes
// ids i32[B, S] and a mask f32[B, S] and gives the hidden state f32[B, S, hidden] -- so that
// embed() checks only the texts.
#include "metatune/runtime/compiled_embedder.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "artifact_files.h"
#include "metatune/runtime/sentence_dense.h"
#include "metatune/runtime/sentence_pooling.h"
#include "program.h"
#include "thread_pool.h"

namespace mt::rt {

namespace {

using nlohmann::json;

// One bucket at one batch size, with its inputs' and output's buffers made once.
struct Graph {
  std::string name;
  int64_t batch = 0, seq = 0;
  std::unique_ptr<Program> program;
  Tensor ids, mask, hidden;
};

} // namespace

struct CompiledEmbedder::State {
  std::string dir, path, model, tokenizer;
  std::unique_ptr<ArtifactFiles> files;
  std::map<std::pair<int64_t, int64_t>, Graph> graphs; // by (batch, seq)
  std::vector<int64_t> buckets;                        // the seqs at the batch size, ascending
  std::vector<std::string> pooling_names;
  std::vector<SentencePooling> pooling;
  int64_t vocab = 0, hidden = 0, max_length = 0, batch = 1;
  bool normalize = false, lower_case = false;
  std::unique_ptr<WeightsFile> dense_file; // dense.safetensors, where there are Dense modules
  std::vector<DenseLayerView> dense;       // into dense_file

  void load_graph(const json& j);
  void load_dense(const json& m);
  int64_t pooled_dimension() const { return hidden * static_cast<int64_t>(pooling.size()); }
  int64_t dimension() const { return dense.empty() ? pooled_dimension() : dense.back().out; }
  int64_t bucket_for(int64_t length) const;
  // Runs `texts` (indices into `ids`, at most the graph's batch) through `g`; their embeddings
  // into `out` rows.
  void run(Graph& g, const std::vector<std::vector<int32_t>>& ids, const std::vector<size_t>& texts,
           float* out);
};

// The Dense modules after the pooling ("dense", absent in artifacts written before them):
// their sizes must chain from the pooled vector, their weights be dense.safetensors' F32
// tensors of those shapes.
void CompiledEmbedder::State::load_dense(const json& m) {
  if (!m.contains("dense") || m["dense"].empty()) return;
  dense_file = std::make_unique<WeightsFile>(dir + "/" + m.at("dense_weights").get<std::string>());
  int64_t in = pooled_dimension();
  for (size_t k = 0; k < m["dense"].size(); ++k) {
    const json& d = m["dense"][k];
    const std::string what = path + ": Dense module " + std::to_string(k);
    DenseLayerView v;
    v.in = d.at("in").get<int64_t>();
    v.out = d.at("out").get<int64_t>();
    if (v.in != in || v.out < 1)
      throw Error(what + " takes " + std::to_string(v.in) + " floats to " + std::to_string(v.out) +
                  "; it is given " + std::to_string(in));
    const std::string act = d.at("activation").get<std::string>();
    if (!activation_from_name(act, &v.activation))
      throw Error(what + ": activation '" + act +
                  "' is not one this runtime knows (identity, tanh, relu, sigmoid, gelu)");
    auto tensor = [&](const std::string& name, std::vector<int64_t> shape) {
      const WeightView& w = dense_file->tensor(name, what);
      if (w.dtype != "F32" || w.shape != shape)
        throw Error(dense_file->path() + ": " + name + " is not F32 of the shape " + what +
                    " says");
      return static_cast<const float*>(w.data);
    };
    v.weight = tensor(d.at("weight").get<std::string>(), {v.out, v.in});
    if (!d.at("bias").is_null()) v.bias = tensor(d.at("bias").get<std::string>(), {v.out});
    dense.push_back(v);
    in = v.out;
  }
}

void CompiledEmbedder::State::load_graph(const json& j) {
  Graph g;
  g.name = j.at("name").get<std::string>();
  const std::string where = path + ": graph '" + g.name + "'";
  g.program = std::make_unique<Program>(j, where, files->context);
  const std::vector<TensorInfo>& in = g.program->inputs();
  const std::vector<TensorInfo>& out = g.program->outputs();
  if (in.size() != 2 || in[0].dtype != "i32" || in[0].shape.size() != 2 || in[1].dtype != "f32" ||
      in[1].shape != in[0].shape)
    throw Error(where + ": must take the ids i32[B, S] and the padding mask f32[B, S]");
  g.batch = in[0].shape[0];
  g.seq = in[0].shape[1];
  if (out.empty() || out[0].dtype != "f32" ||
      out[0].shape != std::vector<int64_t>{g.batch, g.seq, hidden})
    throw Error(where + ": output 0 must be the hidden state f32[" + std::to_string(g.batch) +
                ", " + std::to_string(g.seq) + ", " + std::to_string(hidden) + "], not " +
                (out.empty() ? std::string("missing") : out[0].to_string()));
  if (g.seq > max_length)
    throw Error(where + ": " + std::to_string(g.seq) + " tokens, longer than max_length " +
                std::to_string(max_length));
  if (g.batch != batch && g.batch != 1)
    throw Error(where + ": batch " + std::to_string(g.batch) + " (the artifact's is " +
                std::to_string(batch) + ", or 1)");
  g.ids = Tensor(in[0]);
  g.mask = Tensor(in[1]);
  g.hidden = Tensor(out[0]);
  const auto key = std::make_pair(g.batch, g.seq);
  if (graphs.count(key)) throw Error(where + ": a second graph of the same batch and length");
  graphs.emplace(key, std::move(g));
}

int64_t CompiledEmbedder::State::bucket_for(int64_t length) const {
  for (int64_t b : buckets)
    if (b >= length) return b;
  throw Error("a text of " + std::to_string(length) +
              " tokens is longer than the largest bucket (" + std::to_string(buckets.back()) +
              ") of " + path);
}

void CompiledEmbedder::State::run(Graph& g, const std::vector<std::vector<int32_t>>& ids,
                                  const std::vector<size_t>& texts, float* out) {
  std::memset(g.ids.data(), 0, g.ids.info().bytes());
  std::memset(g.mask.data(), 0, g.mask.info().bytes());
  for (size_t r = 0; r < texts.size(); ++r) {
    const std::vector<int32_t>& t = ids[texts[r]];
    std::copy(t.begin(), t.end(), g.ids.as<int32_t>() + static_cast<int64_t>(r) * g.seq);
    std::fill_n(g.mask.as<float>() + static_cast<int64_t>(r) * g.seq, t.size(), 1.0f);
  }
  // Rows past the texts (a batch graph run short) are never pooled: give them one token so
  // that the pooling sees no empty row.
  for (size_t r = texts.size(); r < static_cast<size_t>(g.batch); ++r)
    g.mask.as<float>()[static_cast<int64_t>(r) * g.seq] = 1.0f;
  std::vector<void*> outputs{g.hidden.data()};
  g.program->run({g.ids.data(), g.mask.data()}, outputs, *files->pool);
  std::vector<float> pooled;
  embed_sentences(g.hidden.as<float>(), g.mask.as<float>(), g.batch, g.seq, hidden, pooling, dense,
                  normalize, &pooled);
  const int64_t dim = dimension();
  for (size_t r = 0; r < texts.size(); ++r)
    std::copy_n(pooled.data() + static_cast<int64_t>(r) * dim, dim,
                out + static_cast<int64_t>(texts[r]) * dim);
}

CompiledEmbedder CompiledEmbedder::load(const std::string& dir, const LoadOptions& options) {
  auto s = std::make_unique<State>();
  s->dir = dir;
  s->path = dir + "/embedding.json";
  const json m = read_json(s->path, "the artifact's embedding graphs");
  try {
    check_artifact_header(m, s->path, "metatune-embedding");
    s->model = m.value("model", "");
    s->vocab = m.at("vocab").get<int64_t>();
    s->hidden = m.at("hidden").get<int64_t>();
    s->max_length = m.at("max_length").get<int64_t>();
    s->batch = m.at("batch").get<int64_t>();
    s->normalize = m.at("normalize").get<bool>();
    s->lower_case = m.at("lower_case").get<bool>();
    if (s->vocab < 1 || s->hidden < 1 || s->max_length < 1 || s->batch < 1)
      throw Error(s->path + ": vocab, hidden, max_length and batch must be positive");
    s->pooling_names = m.at("pooling").get<std::vector<std::string>>();
    if (s->pooling_names.empty()) throw Error(s->path + ": pooling names no mode");
    for (const std::string& name : s->pooling_names) {
      SentencePooling p;
      if (!pooling_from_name(name, &p))
        throw Error(s->path + ": pooling '" + name +
                    "' is not one this runtime knows (cls, max, mean, mean_sqrt_len, weightedmean, "
                    "lasttoken)");
      s->pooling.push_back(p);
    }
    if (m.contains("tokenizer") && m["tokenizer"].is_string())
      s->tokenizer = dir + "/" + m["tokenizer"].get<std::string>();
    s->load_dense(m);
    s->files = ArtifactFiles::open(m, dir, s->path, options);
    for (const json& j : m.at("graphs"))
      s->load_graph(j);
  } catch (const json::exception& e) {
    throw Error(s->path + ": " + e.what());
  }
  for (const auto& [key, g] : s->graphs)
    if (key.first == s->batch) s->buckets.push_back(key.second);
  if (s->buckets.empty())
    throw Error(s->path + ": no graph of the batch size " + std::to_string(s->batch));
  if (s->batch > 1)
    for (int64_t seq : s->buckets)
      if (!s->graphs.count({1, seq}))
        throw Error(s->path + ": bucket " + std::to_string(seq) + " has no graph of batch 1");
  return CompiledEmbedder(std::move(s));
}

Tensor CompiledEmbedder::embed(const std::vector<std::vector<int32_t>>& texts) {
  State& s = *s_;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (texts[i].empty()) throw Error("text " + std::to_string(i) + " has no tokens");
    if (static_cast<int64_t>(texts[i].size()) > s.max_length)
      throw Error("text " + std::to_string(i) + ": " + std::to_string(texts[i].size()) +
                  " tokens, more than the " + std::to_string(s.max_length) + " the model takes");
    for (int32_t id : texts[i])
      if (id < 0 || id >= s.vocab)
        throw Error("text " + std::to_string(i) + ": token id " + std::to_string(id) +
                    " is outside the vocabulary [0, " + std::to_string(s.vocab) + ")");
  }
  Tensor out(TensorInfo{"embeddings", "f32", {static_cast<int64_t>(texts.size()), dimension()}});
  std::vector<size_t> order(texts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return texts[a].size() > texts[b].size(); });
  // Whole batches of one bucket, longest first; what is left of a bucket one by one.
  size_t i = 0;
  while (i < order.size()) {
    const int64_t seq = s.bucket_for(static_cast<int64_t>(texts[order[i]].size()));
    size_t end = i;
    while (end < order.size() &&
           s.bucket_for(static_cast<int64_t>(texts[order[end]].size())) == seq)
      ++end;
    for (; end - i >= static_cast<size_t>(s.batch); i += static_cast<size_t>(s.batch))
      s.run(s.graphs.at({s.batch, seq}), texts,
            std::vector<size_t>(order.begin() + static_cast<long>(i),
                                order.begin() + static_cast<long>(i) + s.batch),
            out.as<float>());
    for (; i < end; ++i)
      s.run(s.graphs.at({1, seq}), texts, {order[i]}, out.as<float>());
  }
  return out;
}

CompiledEmbedder::CompiledEmbedder(std::unique_ptr<State> state) : s_(std::move(state)) {}
CompiledEmbedder::CompiledEmbedder(CompiledEmbedder&&) noexcept = default;
CompiledEmbedder& CompiledEmbedder::operator=(CompiledEmbedder&&) noexcept = default;
CompiledEmbedder::~CompiledEmbedder() = default;

int64_t CompiledEmbedder::dimension() const {
  return s_->dimension();
}
int64_t CompiledEmbedder::max_length() const {
  return s_->max_length;
}
int64_t CompiledEmbedder::vocab() const {
  return s_->vocab;
}
int64_t CompiledEmbedder::batch() const {
  return s_->batch;
}
const std::vector<int64_t>& CompiledEmbedder::buckets() const {
  return s_->buckets;
}
const std::vector<std::string>& CompiledEmbedder::pooling() const {
  return s_->pooling_names;
}
bool CompiledEmbedder::normalize() const {
  return s_->normalize;
}
bool CompiledEmbedder::lower_case() const {
  return s_->lower_case;
}
const std::string& CompiledEmbedder::tokenizer() const {
  return s_->tokenizer;
}
const std::string& CompiledEmbedder::model() const {
  return s_->model;
}
size_t CompiledEmbedder::num_kernels() const {
  return s_->files->context.kernels.size();
}

} // namespace mt::rt
