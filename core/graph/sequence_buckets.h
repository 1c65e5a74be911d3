// One model for a range of sequence lengths: compiled once per bucket (a sequence length), a
// run of s tokens goes to the smallest bucket that holds it, padded at the end and masked.
// Shapes in the IR are static, so this is how a compiled model serves inputs that vary at run
// time; docs/models.md ("Inputs of varying length") has the measured cost of the padding and
// of tuning one task set per bucket.
//
// Exactness: a causal decoder's position t reads positions <= t only, so padding after the
// last token changes none of the real positions; an encoder takes a padding mask (1 = token,
// 0 = padding) and every padded key is masked out of attention. The outputs of the real
// positions are those of an exact-length model up to summation order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/graph_tasks.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/model_executor.h"
#include "core/model/config.h"
#include "core/runtime/ndarray.h"

namespace mt {

class PluginHost;

struct SequenceBucket {
  int64_t seq = 0;
  ModelGraph graph;
  std::vector<FusedGroup> groups;
  std::vector<GraphTask> tasks;
  std::vector<TaskKernel> kernels;
  std::unique_ptr<ModelExecutor> exec;
};

class BucketedModel {
public:
  // The model of `config` at batch `batch` for each length of `buckets` (distinct, > 0),
  // with inputs ids [B, S] (i32) and, when `with_mask`, a padding mask [B, S] (f32), and when
  // `with_types`, token types [B, S] (i32; an encoder's segment ids). Kernels from `selector`,
  // parameters from `params` (by path, as ModelExecutor::set_params).
  BucketedModel(const PluginHost& host, const Config& config, std::vector<int64_t> buckets,
                int64_t batch, bool with_mask, const KernelSelector& selector,
                const std::map<std::string, NDArray>& params, bool with_types = false);

  // The smallest bucket >= seq; std::invalid_argument naming the largest when none holds it.
  const SequenceBucket& bucket_for(int64_t seq) const;
  // ids [B, s]; mask [B, s] (1 = token) when the model has one (nullptr: all tokens); token
  // types [B, s] when the model takes them (nullptr: all 0). The outputs for the s real
  // positions: each output's dimension 1 cut from the bucket's length to s.
  std::vector<NDArray> run(const NDArray& ids, const NDArray* mask = nullptr,
                           const NDArray* types = nullptr);
  const std::vector<SequenceBucket>& buckets() const { return buckets_; }

  // The graph of the model at one sequence length (used per bucket; tuning uses it too).
  static ModelGraph graph_for(const PluginHost& host, const Config& config, int64_t batch,
                              int64_t seq, bool with_mask, bool with_types = false);

private:
  std::vector<SequenceBucket> buckets_; // by increasing length
  bool with_mask_, with_types_;
  int64_t batch_;
};

} // namespace mt
