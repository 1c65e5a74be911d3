// Text generation with a decoder: the prompt in one prefill, then one token per decode step
// against the key/value cache (kv_cache.h). Shapes are static, so the prefill is compiled for
// the prompt's length (or the smallest prompt bucket that holds it, padded at the end, which a
// causal decoder never sees) and each decode step for the smallest cache capacity that holds
// the sequence so far: generating n tokens compiles about log2(n) decode graphs, not n, and
// their tasks are tuned once for all lengths (decode_graph() is what `model tune --decode`
// tunes). Equal tasks of different graphs share one kernel. Batch 1.
//
// Tokens can also be appended several at a time (extend(): a decode build of a prompt
// bucket's length against the cache, "chunked prefill"): a prompt longer than the largest
// prompt bucket is prefilled in chunks of it, and a conversation's next prompt reuses the rows
// of the longest prefix it shares with the sequence held (prefill_reusing()), so that a chat
// turn computes its new tokens only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/graph_tasks.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/kv_cache.h"
#include "core/graph/model_executor.h"
#include "core/graph/packed_params.h"
#include "core/model/config.h"

namespace mt {

class PluginHost;

struct GenerationShape {
  std::vector<int64_t> prompt_buckets; // empty: each prompt's exact length
  std::vector<int64_t> capacities = {64, 128, 256, 512, 1024, 2048};
  // The longest sequence the model is right for, where its config does not say it (a Hugging
  // Face folder's: LongRoPE's original context, ...); 0: the capacities' and config's limit.
  int64_t max_length = 0;
};

// One build of the model (a prefill or a decode step) with its kernels.
struct CompiledGraph {
  ModelGraph graph;
  std::vector<FusedGroup> groups;
  std::vector<GraphTask> tasks;
  std::vector<TaskKernel> kernels;
  std::unique_ptr<ModelExecutor> exec;
};

class Generator {
public:
  // `params` by path, as ModelExecutor::set_params (kept by reference: they must outlive the
  // generator). Kernels from `selector`, chosen when a graph is first needed.
  Generator(const PluginHost& host, const Config& config, const KernelSelector& selector,
            const std::map<std::string, NDArray>& params, GenerationShape shape = {});
  ~Generator();

  // Starts a sequence with `prompt` (>= 1 token); the logits after its last token (vocab()
  // floats, valid until the next call). A prompt longer than the largest prompt bucket is
  // prefilled in chunks of it.
  const float* prefill(const std::vector<int32_t>& prompt);
  // Appends `token` at position length(); the logits after it.
  const float* step(int32_t token);
  // Appends `tokens` (>= 1) at positions length() onward, in chunks of at most the largest
  // prompt bucket, each padded to its bucket; the logits after the last. Starts a sequence
  // when none is held.
  const float* extend(const std::vector<int32_t>& tokens);
  // Keeps the first `length` positions of the sequence held (<= length()).
  void truncate(int64_t length);
  // Starts a sequence with `prompt`, keeping the rows of the longest prefix it shares with the
  // sequence held (all but its last token at most: the logits after it are computed) and
  // appending the rest; the logits after its last token. Equal to prefill(prompt) up to
  // rounding: a row depends on the tokens up to its own position only.
  const float* prefill_reusing(const std::vector<int32_t>& prompt);
  // Positions the last prefill_reusing() kept from the sequence held.
  int64_t last_reused() const { return last_reused_; }
  // The tokens of the sequence held, position by position.
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // Compiles ahead what a prompt of `prompt_length` tokens grown to `total_length` will need
  // (its prefill and every decode capacity on the way), so that timing excludes compilation.
  void prepare(int64_t prompt_length, int64_t total_length);
  // Compiles every prefill bucket and decode capacity the longest sequence can need (what an
  // ahead-of-time artifact holds: generation_artifact.h), and with `extend_chunk` > 0 an
  // extend build of that many tokens at every capacity that holds them; needs prompt buckets.
  void compile_all(int64_t extend_chunk = 0);
  // The graphs compiled so far: prefills by length, decode steps by capacity, extend builds by
  // length and capacity.
  std::vector<const CompiledGraph*> prefill_graphs() const;
  std::vector<const CompiledGraph*> decode_graphs() const;
  std::vector<const CompiledGraph*> extend_graphs() const;
  // Compiles ahead the decode capacities a sequence of `length` tokens grown to
  // `total_length` will need (prepare() without the prefill).
  void prepare_steps(int64_t length, int64_t total_length);
  int64_t length() const;
  int64_t vocab() const { return vocab_; }
  // The longest sequence: the largest capacity, and the model's max_positions when it has one.
  int64_t max_length() const { return max_length_; }
  // What max_length() is for a model of `config` generating with `shape`: the largest
  // capacity, within the config's max_positions and the shape's max_length.
  static int64_t max_length_for(const Config& config, const GenerationShape& shape);
  // The graph the last prefill() or step() ran (its executor's group_seconds() when
  // profiling is on).
  CompiledGraph& last_run() const { return *last_; }
  void set_profiling(bool on);
  // Seconds spent compiling graphs so far (a first prefill or step of a shape includes them).
  double compile_seconds() const { return compile_seconds_; }
  // Graphs compiled so far ("prefill@7", "decode@64", "extend@8:64", ...), for reports.
  std::vector<std::string> compiled() const;
  // Kernels chosen so far, one per distinct task, with the task (for reports).
  const std::vector<std::pair<GraphTask, TaskKernel>>& kernels() const { return kernels_; }

  // The model's builds for generation at batch 1: a prefill of `seq` tokens, a decode step of
  // `seq` tokens (one by default) against a cache of `capacity` rows.
  static ModelGraph prefill_graph(const PluginHost& host, const Config& config, int64_t seq);
  static ModelGraph decode_graph(const PluginHost& host, const Config& config, int64_t capacity,
                                 int64_t seq = 1);

  // The weights packed for the kernels that take them so, shared by every graph.
  const PackedParams& packed_params() const { return *packed_; }

private:
  // Refuses a sequence of `length` tokens that leaves no room for a new one.
  void check_room(int64_t length) const;
  // The most tokens one prefill or extend build takes: the largest prompt bucket.
  int64_t chunk_limit() const;
  // The bucket `n` tokens (at most chunk_limit()) are padded to.
  int64_t prompt_bucket(int64_t n) const;
  int64_t capacity_for(int64_t length) const;
  CompiledGraph& prefill_for(int64_t seq);
  CompiledGraph& decode_for(int64_t capacity);
  CompiledGraph& extend_for(int64_t seq, int64_t capacity);
  // Appends at most the largest prompt bucket of `tokens` from `first`; how many it appended.
  int64_t extend_chunk(const std::vector<int32_t>& tokens, size_t first);
  std::unique_ptr<CompiledGraph> compile(ModelGraph graph, const std::string& name);
  const float* last_logits(const CompiledGraph& g, int64_t position) const;

  const PluginHost& host_;
  Config config_;
  const KernelSelector& selector_;
  const std::map<std::string, NDArray>& params_;
  GenerationShape shape_;
  int64_t vocab_ = 0, max_length_ = 0;
  std::map<int64_t, std::unique_ptr<CompiledGraph>> prefills_, decodes_;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<CompiledGraph>> extends_; // seq, capacity
  std::vector<int32_t> tokens_;
  int64_t last_reused_ = 0;
  int64_t last_row_ = 0; // the row of last_'s first output holding the latest logits
  double compile_seconds_ = 0;
  std::vector<std::pair<GraphTask, TaskKernel>> kernels_;
  // The weights packed for the library kernels, one copy for all graphs (packed_params.h).
  std::shared_ptr<PackedParams> packed_ = std::make_shared<PackedParams>();
  std::optional<KvCache> cache_;
  CompiledGraph* last_ = nullptr;
  bool profiling_ = false;
};

} // namespace mt
