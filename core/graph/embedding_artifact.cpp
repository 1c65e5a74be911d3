// Writing a sentence encoder's embedding artifact (see embedding_artifact.h).
#include "core/graph/embedding_artifact.h"

#include <filesystem>
#include <span>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/graph/artifact_graph.h"
#include "core/model/safetensors_writer.h"
#include "core/plugin/plugin_components.h"

namespace mt {

ModelArtifactSummary write_embedding_artifact(const EmbeddingArtifactSource& src,
                                              const std::string& dir) {
  if (!src.batched || src.batched->buckets().empty())
    throw std::invalid_argument("embedding artifact: no buckets compiled");
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const fs::path root(dir);

  ModelArtifactSummary summary;
  ArtifactKernels kernels;
  nlohmann::json graphs = nlohmann::json::array();
  for (const BucketedModel* model : {src.batched, src.single}) {
    if (!model) continue;
    for (const SequenceBucket& b : model->buckets()) {
      const int64_t batch = b.graph.inputs.at(0).shape()[0];
      nlohmann::json j = artifact_graph_json(
          b.graph, b.groups, kernels.add(b.graph, b.groups, b.tasks, b.kernels), nullptr);
      j["name"] = "embed@" + std::to_string(batch) + "x" + std::to_string(b.seq);
      j["batch"] = batch;
      j["seq"] = b.seq;
      summary.groups += b.groups.size();
      summary.arena_bytes = std::max(summary.arena_bytes, j["arena_bytes"].get<size_t>());
      graphs.push_back(std::move(j));
    }
  }
  nlohmann::json pooling = nlohmann::json::array();
  for (SentencePooling p : src.pipeline->poolings)
    pooling.push_back(to_string(p));

  nlohmann::json m = artifact_header("metatune-embedding", src.model);
  m["vocab"] = src.vocab;
  m["hidden"] = src.hidden;
  m["max_length"] = src.max_length;
  m["batch"] = src.batch;
  m["pooling"] = pooling;
  // Dense modules after the pooling: their sizes here, their weights in dense.safetensors.
  nlohmann::json dense = nlohmann::json::array();
  std::vector<SafetensorsTensor> dense_tensors;
  for (size_t k = 0; k < src.pipeline->dense.size(); ++k) {
    const SentenceDense& d = src.pipeline->dense[k];
    const std::string name = "dense." + std::to_string(k);
    dense.push_back(
        {{"in", d.in},
         {"out", d.out},
         {"activation", d.activation},
         {"weight", name + ".weight"},
         {"bias", d.bias.empty() ? nlohmann::json(nullptr) : nlohmann::json(name + ".bias")}});
    dense_tensors.push_back({name + ".weight",
                             SafetensorsDtype::F32,
                             {d.out, d.in},
                             std::as_bytes(std::span(d.weight))});
    if (!d.bias.empty())
      dense_tensors.push_back(
          {name + ".bias", SafetensorsDtype::F32, {d.out}, std::as_bytes(std::span(d.bias))});
  }
  m["dense"] = dense;
  m["dense_weights"] = nullptr;
  if (!dense_tensors.empty()) {
    write_safetensors((root / "dense.safetensors").string(), dense_tensors);
    m["dense_weights"] = "dense.safetensors";
  }
  m["normalize"] = src.pipeline->normalize;
  m["lower_case"] = src.pipeline->lower_case;
  nlohmann::json tokenizer = nullptr;
  for (const char* name : {"vocab.txt", "tokenizer.json"}) { // tokenizer.json preferred
    const fs::path from = fs::path(src.tokenizer_dir) / name;
    if (src.tokenizer_dir.empty() || !fs::exists(from)) continue;
    fs::copy_file(from, root / name, fs::copy_options::overwrite_existing);
    tokenizer = name;
  }
  m["tokenizer"] = tokenizer;
  m["graphs"] = graphs;
  m["library"] = kernels.export_to(*src.target, (root / "kernels.so").string());
  summary.weight_bytes = write_artifact_weights(src.batched->buckets().front().graph, *src.params,
                                                (root / "weights.safetensors").string());
  write_artifact_text((root / "embedding.json").string(), m.dump(1) + "\n");
  summary.kernels = kernels.size();
  return summary;
}

} // namespace mt
