// Sequence-length buckets (see sequence_buckets.h).
#include "core/graph/sequence_buckets.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/graph/layer_registry.h"
#include "core/graph/packed_params.h"

namespace mt {

ModelGraph BucketedModel::graph_for(const PluginHost& host, const Config& config, int64_t batch,
                                    int64_t seq, bool with_mask, bool with_types) {
  std::vector<te::Tensor> inputs = {te::placeholder({batch, seq}, DType::i32(), "ids")};
  if (with_mask) inputs.push_back(te::placeholder({batch, seq}, DType::f32(), "mask"));
  if (with_types) inputs.push_back(te::placeholder({batch, seq}, DType::i32(), "token_types"));
  return instantiate_model(host, config, inputs);
}

BucketedModel::BucketedModel(const PluginHost& host, const Config& config,
                             std::vector<int64_t> buckets, int64_t batch, bool with_mask,
                             const KernelSelector& selector,
                             const std::map<std::string, NDArray>& params, bool with_types)
    : with_mask_(with_mask), with_types_(with_types), batch_(batch) {
  std::sort(buckets.begin(), buckets.end());
  if (buckets.empty() || buckets.front() < 1 ||
      std::adjacent_find(buckets.begin(), buckets.end()) != buckets.end())
    throw std::invalid_argument("sequence buckets must be distinct positive lengths");
  // Each bucket's executor keeps a reference to its bucket's graph: reserve so they stay put.
  buckets_.reserve(buckets.size());
  auto packed = std::make_shared<PackedParams>(); // one copy of each packed weight for all
  for (int64_t seq : buckets) {
    SequenceBucket& b = buckets_.emplace_back();
    b.seq = seq;
    b.graph = graph_for(host, config, batch, seq, with_mask, with_types);
    b.groups = fuse(b.graph.outputs);
    b.tasks = graph_tasks(b.groups, config.kind() + "@" + std::to_string(seq));
    b.kernels = select_kernels(selector, b.tasks);
    b.exec = std::make_unique<ModelExecutor>(b.graph, b.groups,
                                             group_kernels(b.tasks, b.kernels, b.groups.size()));
    b.exec->set_params(params);
    b.exec->pack_params(packed);
  }
}

const SequenceBucket& BucketedModel::bucket_for(int64_t seq) const {
  for (const SequenceBucket& b : buckets_)
    if (b.seq >= seq) return b;
  throw std::invalid_argument("a sequence of " + std::to_string(seq) +
                              " tokens is longer than the largest bucket (" +
                              std::to_string(buckets_.back().seq) + ")");
}

std::vector<NDArray> BucketedModel::run(const NDArray& ids, const NDArray* mask,
                                        const NDArray* types) {
  if (ids.ndim() != 2 || ids.shape()[0] != batch_ || ids.dtype() != DType::i32())
    throw std::invalid_argument("ids must be i32 [" + std::to_string(batch_) + ", S], got " +
                                ids.shape_string());
  if (mask && mask->shape() != ids.shape())
    throw std::invalid_argument("the mask must have the shape of the ids");
  if (types && (types->shape() != ids.shape() || types->dtype() != DType::i32()))
    throw std::invalid_argument("the token types must be i32 of the shape of the ids, got " +
                                types->shape_string());
  const int64_t s = ids.shape()[1];
  const SequenceBucket& b = bucket_for(s);
  // Padding: id 0 and type 0 (any valid ones: masked or causally invisible), mask 0.
  NDArray padded(DType::i32(), {batch_, b.seq});
  NDArray pmask(DType::f32(), {batch_, b.seq});
  NDArray ptypes(DType::i32(), {batch_, b.seq});
  std::memset(ptypes.data(), 0, ptypes.nbytes());
  for (int64_t r = 0; r < batch_; ++r) {
    std::memcpy(padded.data_as<int32_t>() + r * b.seq, ids.data_as<int32_t>() + r * s,
                static_cast<size_t>(s) * sizeof(int32_t));
    if (types)
      std::memcpy(ptypes.data_as<int32_t>() + r * b.seq, types->data_as<int32_t>() + r * s,
                  static_cast<size_t>(s) * sizeof(int32_t));
    for (int64_t t = 0; t < s; ++t)
      pmask.data_as<float>()[r * b.seq + t] = mask ? mask->data_as<float>()[r * s + t] : 1.0f;
  }
  std::vector<NDArray> in = {padded};
  if (with_mask_) in.push_back(pmask);
  if (with_types_) in.push_back(ptypes);
  std::vector<NDArray> full = b.exec->run(in);
  std::vector<NDArray> out;
  for (const NDArray& f : full) {
    if (f.ndim() < 2 || f.shape()[1] != b.seq) {
      out.push_back(f); // not per position
      continue;
    }
    std::vector<int64_t> shape = f.shape();
    shape[1] = s;
    NDArray cut(f.dtype(), shape);
    size_t row = f.nbytes() / static_cast<size_t>(batch_ * b.seq); // bytes per position
    for (int64_t r = 0; r < batch_; ++r)
      std::memcpy(static_cast<char*>(cut.data()) + static_cast<size_t>(r * s) * row,
                  static_cast<const char*>(f.data()) + static_cast<size_t>(r * b.seq) * row,
                  static_cast<size_t>(s) * row);
    out.push_back(std::move(cut));
  }
  return out;
}

} // namespace mt
