// The decoder's key/value cache (see kv_cache.h).
#include "core/graph/kv_cache.h"

#include <cstring>
#include <stdexcept>

namespace mt {

KvCache::KvCache(const ModelGraph& graph, int64_t batch) : batch_(batch) {
  if (graph.states.empty())
    throw std::invalid_argument("kv cache: the model keeps no state across steps");
  for (const ModelState& s : graph.states)
    states_.push_back({s.path, s.rows.dtype(), s.rows.shape()[2], NDArray()});
}

KvCache::State& KvCache::state(const std::string& path, const char* where) {
  for (State& s : states_)
    if (s.path == path) return s;
  throw std::invalid_argument(std::string("kv cache (") + where + "): the step has a state '" +
                              path + "' the cache was not made for");
}

void KvCache::set_capacity(int64_t capacity) {
  if (capacity == capacity_) return;
  if (capacity < length_)
    throw std::invalid_argument("kv cache: capacity " + std::to_string(capacity) + " below the " +
                                std::to_string(length_) + " rows kept");
  for (State& s : states_) {
    NDArray grown(s.dtype, {batch_, capacity, s.width});
    std::memset(grown.data(), 0, grown.nbytes());
    const size_t row = static_cast<size_t>(s.width) * s.dtype.bytes();
    for (int64_t b = 0; b < batch_ && length_ > 0; ++b)
      std::memcpy(static_cast<char*>(grown.data()) + static_cast<size_t>(b * capacity) * row,
                  static_cast<const char*>(s.buffer.data()) +
                      static_cast<size_t>(b * capacity_) * row,
                  static_cast<size_t>(length_) * row);
    s.buffer = std::move(grown);
  }
  capacity_ = capacity;
}

void KvCache::append(const ModelGraph& graph, const ModelExecutor& exec, int64_t count) {
  if (length_ + count > capacity_)
    throw std::invalid_argument("kv cache: " + std::to_string(length_) + " + " +
                                std::to_string(count) + " rows exceed the capacity " +
                                std::to_string(capacity_) + " (set_capacity first)");
  for (const ModelState& ms : graph.states) {
    State& s = state(ms.path, "append");
    const NDArray& rows = exec.output(ms.output);
    const int64_t step = rows.shape()[1];
    if (count > step || rows.shape()[0] != batch_ || rows.shape()[2] != s.width)
      throw std::invalid_argument("kv cache: rows of '" + ms.path + "' are " + rows.shape_string() +
                                  ", " + std::to_string(count) + " rows of width " +
                                  std::to_string(s.width) + " expected");
    // A state written in place (ABI 1.9) got its rows from the executor as the step ran.
    if (ms.written_in_place && ms.cache) continue;
    const size_t row = static_cast<size_t>(s.width) * s.dtype.bytes();
    for (int64_t b = 0; b < batch_; ++b)
      std::memcpy(static_cast<char*>(s.buffer.data()) +
                      static_cast<size_t>(b * capacity_ + length_) * row,
                  static_cast<const char*>(rows.data()) + static_cast<size_t>(b * step) * row,
                  static_cast<size_t>(count) * row);
  }
  length_ += count;
}

void KvCache::bind(const ModelGraph& graph, std::vector<NDArray>& inputs) {
  for (const ModelState& ms : graph.states) {
    State& s = state(ms.path, "bind");
    if (!ms.cache || ms.cache.shape()[1] != capacity_)
      throw std::invalid_argument("kv cache: the step reads '" + ms.path + "' with capacity " +
                                  (ms.cache ? std::to_string(ms.cache.shape()[1]) : "none") +
                                  ", the cache has " + std::to_string(capacity_));
    if (inputs.size() <= ms.input) inputs.resize(ms.input + 1);
    inputs[ms.input] = NDArray(s.dtype, {batch_, capacity_, s.width}, s.buffer.data());
  }
}

void KvCache::truncate(int64_t length) {
  if (length < 0 || length > length_)
    throw std::invalid_argument("kv cache: truncate to " + std::to_string(length) + " of " +
                                std::to_string(length_) + " rows");
  length_ = length;
}

size_t KvCache::bytes() const {
  size_t n = 0;
  for (const State& s : states_)
    n += s.buffer.nbytes();
  return n;
}

} // namespace mt
