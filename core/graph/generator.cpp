// Generation with a key/value cache (see generator.h).
#include "core/graph/generator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "core/graph/last_position.h"
#include "core/graph/layer_registry.h"
#include "core/ir/structural.h"

namespace mt {

namespace {

std::vector<int64_t> sorted_distinct(std::vector<int64_t> v, const char* what) {
  std::sort(v.begin(), v.end());
  if ((!v.empty() && v.front() < 1) || std::adjacent_find(v.begin(), v.end()) != v.end())
    throw std::invalid_argument(std::string(what) + " must be distinct positive lengths");
  return v;
}

} // namespace

ModelGraph Generator::prefill_graph(const PluginHost& host, const Config& config, int64_t seq) {
  ModelGraph g = instantiate_model(host, config, {te::placeholder({1, seq}, DType::i32(), "ids")},
                                   BuildMode::prefill());
  keep_last_position_logits(g); // the first new token needs the last position's logits only
  return g;
}

ModelGraph Generator::decode_graph(const PluginHost& host, const Config& config, int64_t capacity,
                                   int64_t seq) {
  ModelGraph g = instantiate_model(host, config, {te::placeholder({1, seq}, DType::i32(), "ids")},
                                   BuildMode::decode(capacity));
  if (seq > 1) keep_last_position_logits(g); // as the prefill: the next token needs one row
  return g;
}

Generator::Generator(const PluginHost& host, const Config& config, const KernelSelector& selector,
                     const std::map<std::string, NDArray>& params, GenerationShape shape)
    : host_(host), config_(config), selector_(selector), params_(params), shape_(std::move(shape)) {
  shape_.prompt_buckets = sorted_distinct(shape_.prompt_buckets, "prompt buckets");
  shape_.capacities = sorted_distinct(shape_.capacities, "cache capacities");
  max_length_ = max_length_for(config_, shape_); // refuses an empty list of capacities
}

int64_t Generator::max_length_for(const Config& config, const GenerationShape& shape) {
  if (shape.capacities.empty()) throw std::invalid_argument("no cache capacity given");
  int64_t longest = *std::max_element(shape.capacities.begin(), shape.capacities.end());
  if (shape.max_length > 0) longest = std::min(longest, shape.max_length);
  if (config.kind() == "std.Decoder" && config.is_set("max_positions")) {
    auto positions = config.get<int64_t>("max_positions");
    if (positions > 0) longest = std::min(longest, positions);
  }
  return longest;
}

Generator::~Generator() = default;

std::unique_ptr<CompiledGraph> Generator::compile(ModelGraph graph, const std::string& name) {
  const auto start = std::chrono::steady_clock::now();
  auto c = std::make_unique<CompiledGraph>();
  c->graph = std::move(graph);
  c->groups = fuse(c->graph.outputs);
  c->tasks = graph_tasks(c->groups, config_.kind() + "@" + name);
  for (const GraphTask& t : c->tasks) {
    const TaskKernel* found = nullptr;
    for (const auto& [task, kernel] : kernels_)
      if (task.hash == t.hash && structural_equal(task.workload, t.workload)) found = &kernel;
    if (!found) {
      kernels_.emplace_back(t, selector_.select(t));
      found = &kernels_.back().second;
    }
    c->kernels.push_back(*found);
  }
  c->exec = std::make_unique<ModelExecutor>(c->graph, c->groups,
                                            group_kernels(c->tasks, c->kernels, c->groups.size()));
  c->exec->set_params(params_);
  c->exec->pack_params(packed_);
  c->exec->set_profiling(profiling_);
  if (c->graph.num_root_outputs < 1 || c->graph.outputs[0].ndim() != 3)
    throw std::invalid_argument(config_.kind() + ": a generating model's first output must be "
                                                 "logits [B, S, vocab]");
  vocab_ = c->graph.outputs[0].shape()[2];
  if (!cache_) cache_.emplace(c->graph, 1);
  compile_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

CompiledGraph& Generator::prefill_for(int64_t seq) {
  auto it = prefills_.find(seq);
  if (it == prefills_.end())
    it = prefills_
             .emplace(seq,
                      compile(prefill_graph(host_, config_, seq), "prefill" + std::to_string(seq)))
             .first;
  return *it->second;
}

CompiledGraph& Generator::decode_for(int64_t capacity) {
  auto it = decodes_.find(capacity);
  if (it == decodes_.end())
    it = decodes_
             .emplace(capacity, compile(decode_graph(host_, config_, capacity),
                                        "decode" + std::to_string(capacity)))
             .first;
  return *it->second;
}

CompiledGraph& Generator::extend_for(int64_t seq, int64_t capacity) {
  auto it = extends_.find({seq, capacity});
  if (it == extends_.end())
    it = extends_
             .emplace(std::pair{seq, capacity},
                      compile(decode_graph(host_, config_, capacity, seq),
                              "extend" + std::to_string(seq) + ":" + std::to_string(capacity)))
             .first;
  return *it->second;
}

const float* Generator::last_logits(const CompiledGraph& g, int64_t position) const {
  const NDArray& logits = g.exec->output(0);
  return logits.data_as<float>() + position * vocab_;
}

void Generator::check_room(int64_t length) const {
  if (length >= max_length_)
    throw std::invalid_argument("a prompt of " + std::to_string(length) +
                                " tokens leaves no room: the longest sequence is " +
                                std::to_string(max_length_));
}

int64_t Generator::chunk_limit() const {
  return shape_.prompt_buckets.empty() ? INT64_MAX : shape_.prompt_buckets.back();
}

int64_t Generator::prompt_bucket(int64_t n) const {
  if (shape_.prompt_buckets.empty()) return n;
  return *std::lower_bound(shape_.prompt_buckets.begin(), shape_.prompt_buckets.end(), n);
}

int64_t Generator::capacity_for(int64_t length) const {
  if (length > max_length_)
    throw std::invalid_argument("the sequence reached its longest (" + std::to_string(max_length_) +
                                " tokens)");
  return *std::lower_bound(shape_.capacities.begin(), shape_.capacities.end(), length);
}

void Generator::prepare(int64_t prompt_length, int64_t total_length) {
  if (prompt_length < 1) throw std::invalid_argument("the prompt is empty");
  check_room(prompt_length);
  prefill_for(prompt_bucket(std::min(prompt_length, chunk_limit())));
  prepare_steps(prompt_length, total_length);
}

void Generator::compile_all(int64_t extend_chunk) {
  if (shape_.prompt_buckets.empty())
    throw std::invalid_argument("every prefill a generator can need: it needs prompt buckets");
  for (int64_t b : shape_.prompt_buckets) {
    prefill_for(b);
    if (b >= max_length_ - 1) break; // the longest prompt fits: larger buckets go unused
  }
  prepare_steps(0, max_length_);
  if (extend_chunk <= 0) return;
  if (extend_chunk >= max_length_)
    throw std::invalid_argument("an extend chunk of " + std::to_string(extend_chunk) +
                                " tokens: the longest sequence is " + std::to_string(max_length_));
  for (int64_t c : shape_.capacities) {
    if (c < extend_chunk) continue;
    extend_for(extend_chunk, c);
    if (c >= max_length_) break;
  }
}

std::vector<const CompiledGraph*> Generator::extend_graphs() const {
  std::vector<const CompiledGraph*> out;
  for (const auto& [key, g] : extends_)
    out.push_back(g.get());
  return out;
}

std::vector<const CompiledGraph*> Generator::prefill_graphs() const {
  std::vector<const CompiledGraph*> out;
  for (const auto& [seq, g] : prefills_)
    out.push_back(g.get());
  return out;
}

std::vector<const CompiledGraph*> Generator::decode_graphs() const {
  std::vector<const CompiledGraph*> out;
  for (const auto& [capacity, g] : decodes_)
    out.push_back(g.get());
  return out;
}

void Generator::prepare_steps(int64_t length, int64_t total_length) {
  for (int64_t c : shape_.capacities) {
    if (c <= length) continue;
    decode_for(c);
    if (c >= std::min(total_length, max_length_)) break;
  }
}

const float* Generator::prefill(const std::vector<int32_t>& prompt) {
  const auto total = static_cast<int64_t>(prompt.size());
  if (total < 1) throw std::invalid_argument("the prompt is empty");
  check_room(total);
  // A prompt longer than the largest bucket: its first chunk here, the rest by extend_chunk.
  const int64_t n = std::min(total, chunk_limit());
  const int64_t seq = prompt_bucket(n);
  CompiledGraph& g = prefill_for(seq);
  NDArray ids(DType::i32(), {1, seq}); // padding: id 0 after the prompt, causally invisible
  std::memset(ids.data(), 0, ids.nbytes());
  std::memcpy(ids.data(), prompt.data(), static_cast<size_t>(n) * sizeof(int32_t));
  std::vector<NDArray> in(g.graph.inputs.size());
  in[0] = ids;
  const bool one_row = g.graph.last_position_input != SIZE_MAX;
  if (one_row) {
    NDArray last(DType::i32(), {1});
    last.data_as<int32_t>()[0] = static_cast<int32_t>(n - 1);
    in[g.graph.last_position_input] = last;
  }
  g.exec->execute(in);
  cache_->clear();
  cache_->set_capacity(capacity_for(n + 1));
  cache_->append(g.graph, *g.exec, n);
  tokens_.assign(prompt.begin(), prompt.begin() + n);
  last_ = &g;
  last_row_ = one_row ? 0 : n - 1;
  for (auto done = static_cast<size_t>(n); done < prompt.size();)
    done += static_cast<size_t>(extend_chunk(prompt, done));
  return last_logits(*last_, last_row_);
}

int64_t Generator::extend_chunk(const std::vector<int32_t>& tokens, size_t first) {
  const int64_t pos = cache_->length();
  const int64_t n = std::min(static_cast<int64_t>(tokens.size() - first), chunk_limit());
  int64_t seq = prompt_bucket(n);
  // The rows of the chunk's padding past the capacity are not written (model_executor.cpp),
  // those within it are rows past length(), overwritten before any position reads them.
  auto cap =
      std::lower_bound(shape_.capacities.begin(), shape_.capacities.end(), std::max(pos + n, seq));
  if (cap == shape_.capacities.end()) { // a bucket larger than the cache: the exact length
    seq = n;
    cap = std::lower_bound(shape_.capacities.begin(), shape_.capacities.end(), pos + n);
  }
  CompiledGraph& g = extend_for(seq, *cap);
  cache_->set_capacity(*cap);
  NDArray ids(DType::i32(), {1, seq}), positions(DType::i32(), {1, seq});
  std::memset(ids.data(), 0, ids.nbytes());
  std::memcpy(ids.data(), tokens.data() + first, static_cast<size_t>(n) * sizeof(int32_t));
  for (int64_t j = 0; j < seq; ++j)
    positions.data_as<int32_t>()[j] = static_cast<int32_t>(pos + j);
  std::vector<NDArray> in(g.graph.inputs.size());
  in[0] = ids;
  in[g.graph.positions_input] = positions;
  if (g.graph.last_position_input != SIZE_MAX) {
    NDArray last(DType::i32(), {1});
    last.data_as<int32_t>()[0] = static_cast<int32_t>(n - 1);
    in[g.graph.last_position_input] = last;
  }
  cache_->bind(g.graph, in);
  g.exec->execute(in);
  cache_->append(g.graph, *g.exec, n);
  tokens_.insert(tokens_.end(), tokens.begin() + static_cast<std::ptrdiff_t>(first),
                 tokens.begin() + static_cast<std::ptrdiff_t>(first) + n);
  last_ = &g;
  last_row_ = g.graph.last_position_input != SIZE_MAX ? 0 : n - 1;
  return n;
}

const float* Generator::extend(const std::vector<int32_t>& tokens) {
  if (!cache_ || cache_->length() == 0) return prefill(tokens);
  if (tokens.empty()) throw std::invalid_argument("extend: no token given");
  check_room(cache_->length() + static_cast<int64_t>(tokens.size()));
  for (size_t done = 0; done < tokens.size();)
    done += static_cast<size_t>(extend_chunk(tokens, done));
  return last_logits(*last_, last_row_);
}

void Generator::truncate(int64_t length) {
  if (length < 0 || length > this->length())
    throw std::invalid_argument("truncate to " + std::to_string(length) + " of " +
                                std::to_string(this->length()) + " positions");
  if (cache_) cache_->truncate(length);
  tokens_.resize(static_cast<size_t>(length));
}

const float* Generator::prefill_reusing(const std::vector<int32_t>& prompt) {
  if (prompt.empty()) throw std::invalid_argument("the prompt is empty");
  check_room(static_cast<int64_t>(prompt.size())); // before anything held is dropped
  const size_t limit = std::min(tokens_.size(), prompt.size() - 1);
  size_t keep = 0;
  while (keep < limit && tokens_[keep] == prompt[keep])
    ++keep;
  last_reused_ = static_cast<int64_t>(keep);
  if (keep == 0) return prefill(prompt);
  truncate(last_reused_);
  return extend(
      std::vector<int32_t>(prompt.begin() + static_cast<std::ptrdiff_t>(keep), prompt.end()));
}

const float* Generator::step(int32_t token) {
  if (!cache_ || cache_->length() == 0) throw std::logic_error("step() before prefill()");
  const int64_t pos = cache_->length();
  const int64_t cap = capacity_for(pos + 1);
  CompiledGraph& g = decode_for(cap);
  cache_->set_capacity(cap);
  NDArray ids(DType::i32(), {1, 1}), positions(DType::i32(), {1, 1});
  ids.data_as<int32_t>()[0] = token;
  positions.data_as<int32_t>()[0] = static_cast<int32_t>(pos);
  std::vector<NDArray> in(g.graph.inputs.size());
  in[0] = ids;
  in[g.graph.positions_input] = positions;
  cache_->bind(g.graph, in);
  g.exec->execute(in);
  cache_->append(g.graph, *g.exec, 1);
  tokens_.push_back(token);
  last_ = &g;
  last_row_ = 0;
  return last_logits(g, 0);
}

int64_t Generator::length() const {
  return cache_ ? cache_->length() : 0;
}

void Generator::set_profiling(bool on) {
  profiling_ = on;
  for (auto& [seq, g] : prefills_)
    g->exec->set_profiling(on);
  for (auto& [cap, g] : decodes_)
    g->exec->set_profiling(on);
  for (auto& [key, g] : extends_)
    g->exec->set_profiling(on);
}

std::vector<std::string> Generator::compiled() const {
  std::vector<std::string> out;
  for (const auto& [seq, g] : prefills_)
    out.push_back("prefill@" + std::to_string(seq));
  for (const auto& [cap, g] : decodes_)
    out.push_back("decode@" + std::to_string(cap));
  for (const auto& [key, g] : extends_)
    out.push_back("extend@" + std::to_string(key.first) + ":" + std::to_string(key.second));
  return out;
}

} // namespace mt
