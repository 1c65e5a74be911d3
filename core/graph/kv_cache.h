// The state a decoder keeps between generation steps: for every state its layers declared
// (attention's keys and values, ModelGraph::states), one buffer [B, capacity, W] whose row j
// holds position j. The prefill and every decode step hand their new rows over (the graph's
// state outputs); a decode step reads the buffers as its cache inputs. Growing to a larger
// capacity (the next decode bucket) copies the rows kept so far.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/model_executor.h"
#include "core/graph/model_graph.h"
#include "core/runtime/ndarray.h"

namespace mt {

class KvCache {
public:
  // The states of `graph` (a prefill or decode build of the model), batch `batch`.
  KvCache(const ModelGraph& graph, int64_t batch);

  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  // Exactly `capacity` rows (>= length()), keeping the rows there are: a decode step's cache
  // inputs have its graph's capacity.
  void set_capacity(int64_t capacity);
  // The first `count` rows of every state output of the step just run by `exec` (built from
  // `graph`), stored at positions length() onward (a decode step's states written in place are
  // there already: the executor wrote them at the step's positions); length() grows by `count`.
  void append(const ModelGraph& graph, const ModelExecutor& exec, int64_t count);
  // The inputs of a decode step of `graph` other than its ids and positions: the caches, in
  // the graph's input order, as views of the buffers (capacity must match: set_capacity first).
  void bind(const ModelGraph& graph, std::vector<NDArray>& inputs);
  // Forgets every row (a new sequence).
  void clear() { length_ = 0; }
  // Keeps the first `length` rows (<= length()): a sequence continuing differently from there.
  void truncate(int64_t length);
  size_t num_states() const { return states_.size(); }
  size_t bytes() const;

private:
  struct State {
    std::string path;
    DType dtype = DType::f32();
    int64_t width = 0;
    NDArray buffer; // [B, capacity, width]
  };
  State& state(const std::string& path, const char* where);

  std::vector<State> states_;
  int64_t batch_ = 1, length_ = 0, capacity_ = 0;
};

} // namespace mt
