// Generation from an artifact (see compiled_generator.h). Everything generation.json says is
// checked when it is loaded -- every graph as program.h checks one, and that each prefill and
// decode graph has the inputs and outputs generation needs, of the shapes of the states it
// declares -- so that prefill() and step() check only the lengths.
#include "metatune/runtime/compiled_generator.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "artifact_files.h"
#include "program.h"
#include "thread_pool.h"

namespace mt::rt {

namespace {

using nlohmann::json;

// One state the decoder keeps across steps (attention's keys or values of one layer).
struct StateInfo {
  std::string path, dtype;
  int64_t width = 0;
  size_t row_bytes = 0;
};

// A graph with its outputs' buffers, made once and reused by every call.
struct Graph {
  std::string name;
  std::unique_ptr<Program> program;
  std::vector<Tensor> outputs;
  std::vector<void*> output_ptrs;
  std::vector<size_t> state_rows; // per state: the output holding its rows
  size_t logits_rows = 0;         // positions in output 0

  void run(const std::vector<const void*>& inputs, const ThreadPool& pool) {
    program->run(inputs, output_ptrs, pool);
  }
  const float* logits(int64_t row, int64_t vocab) const {
    return outputs[0].as<float>() + row * vocab;
  }
};

struct Prefill : Graph {
  int64_t seq = 0;
  size_t last_position_input = SIZE_MAX;
};

// A decode step (one token) or an extend build (a chunk of tokens) against the cache.
struct Decode : Graph {
  int64_t capacity = 0;
  size_t positions_input = 0;
  size_t last_position_input = SIZE_MAX; // extend builds: the chunk's last real token
  std::vector<size_t> state_caches;      // per state: the input reading its cache
  std::vector<bool> state_written;       // per state: written in place by the program
};

size_t index_field(const json& g, const char* key) {
  const json& v = g.at(key);
  return v.is_null() ? SIZE_MAX : v.get<size_t>();
}

} // namespace

struct CompiledGenerator::State {
  std::string dir, path, model;
  std::unique_ptr<ArtifactFiles> files;
  std::vector<StateInfo> states;
  std::vector<Prefill> prefills; // by seq, ascending
  std::vector<Decode> decodes;   // by capacity, ascending
  std::vector<Decode> extends;   // by capacity, ascending; all of extend_chunk tokens
  int64_t extend_chunk = 0;
  std::vector<int64_t> buckets, capacities;
  int64_t vocab = 0, max_length = 0;
  // The key/value cache: per state [1, capacity, width]; row j holds position j.
  std::vector<std::vector<std::byte>> cache;
  int64_t length = 0, capacity = 0;
  std::vector<int32_t> tokens; // the sequence in the cache
  int64_t last_reused = 0;

  void load_graph(Graph& g, const json& j);
  // A decode step (`seq` 1) or an extend build (`seq` tokens, with its last position input).
  void load_cached_graph(Decode& d, const json& j, int64_t seq);
  void check_room(int64_t n) const;
  // Appends `count` (<= extend_chunk) of `ids` from `first` with an extend build.
  const float* extend_chunk_of(const std::vector<int32_t>& ids, size_t first, int64_t count);
  // Appends `ids` from `first` on (at least one) in chunks of extend_chunk; the last logits.
  const float* extend_from(const std::vector<int32_t>& ids, size_t first);
  void set_capacity(int64_t c);
  // Copies rows [0, count) of each state's rows output of `g` to positions length.. of the
  // cache, but those `written` (the program wrote them at their positions already).
  void append(const Graph& g, int64_t count, const std::vector<bool>* written);
  int64_t capacity_for(int64_t length) const;
};

void CompiledGenerator::State::load_graph(Graph& g, const json& j) {
  g.name = j.at("name").get<std::string>();
  const std::string where = path + ": graph '" + g.name + "'";
  g.program = std::make_unique<Program>(j, where, files->context);
  for (const TensorInfo& t : g.program->outputs())
    g.output_ptrs.push_back(g.outputs.emplace_back(t).data());
  const std::vector<TensorInfo>& in = g.program->inputs();
  const std::vector<TensorInfo>& out = g.program->outputs();
  if (in.empty() || in[0].dtype != "i32" || in[0].shape.size() != 2 || in[0].shape[0] != 1)
    throw Error(where + ": input 0 must be the token ids i32[1, S], not " +
                (in.empty() ? std::string("missing") : in[0].to_string()));
  if (out.empty() || out[0].dtype != "f32" || out[0].shape.size() != 3 || out[0].shape[0] != 1 ||
      out[0].shape[2] != vocab)
    throw Error(where + ": output 0 must be the logits f32[1, S, " + std::to_string(vocab) +
                "], not " + (out.empty() ? std::string("missing") : out[0].to_string()));
  g.logits_rows = static_cast<size_t>(out[0].shape[1]);
  g.state_rows = j.at("state_rows").get<std::vector<size_t>>();
  if (g.state_rows.size() != states.size())
    throw Error(where + ": state_rows names " + std::to_string(g.state_rows.size()) +
                " states, the artifact has " + std::to_string(states.size()));
  for (size_t s = 0; s < states.size(); ++s) {
    const size_t o = g.state_rows[s];
    if (o >= out.size() || out[o].dtype != states[s].dtype || out[o].shape.size() != 3 ||
        out[o].shape[1] != in[0].shape[1] || out[o].shape[2] != states[s].width)
      throw Error(where + ": the rows of state '" + states[s].path + "' (output " +
                  std::to_string(o) + ") are not " + states[s].dtype + "[1, " +
                  std::to_string(in[0].shape[1]) + ", " + std::to_string(states[s].width) + "]");
  }
}

void CompiledGenerator::State::load_cached_graph(Decode& d, const json& j, int64_t seq) {
  load_graph(d, j);
  d.capacity = j.at("capacity").get<int64_t>();
  d.positions_input = index_field(j, "positions_input");
  d.state_caches = j.at("state_caches").get<std::vector<size_t>>();
  d.state_written = j.at("state_written").get<std::vector<bool>>();
  if (seq > 1) d.last_position_input = index_field(j, "last_position_input");
  const auto& in = d.program->inputs();
  const std::string where = path + ": graph '" + d.name + "'";
  if (in[0].shape[1] != seq)
    throw Error(where + ": takes " + std::to_string(in[0].shape[1]) + " tokens, " +
                std::to_string(seq) + " expected");
  if (d.positions_input >= in.size() || in[d.positions_input].dtype != "i32" ||
      in[d.positions_input].num_elements() != seq)
    throw Error(where + ": positions_input is not an input i32[1, " + std::to_string(seq) + "]");
  if (seq > 1 && (d.last_position_input >= in.size() || in[d.last_position_input].dtype != "i32" ||
                  in[d.last_position_input].num_elements() != 1))
    throw Error(where + ": last_position_input is not an input i32[1]");
  if (d.state_caches.size() != states.size() || d.state_written.size() != states.size())
    throw Error(where + ": state_caches and state_written must name every state");
  for (size_t k = 0; k < states.size(); ++k) {
    const size_t i = d.state_caches[k];
    if (i >= in.size() || in[i].shape != std::vector<int64_t>{1, d.capacity, states[k].width} ||
        in[i].dtype != states[k].dtype)
      throw Error(where + ": the cache of state '" + states[k].path + "' (input " +
                  std::to_string(i) + ") is not " + states[k].dtype + "[1, " +
                  std::to_string(d.capacity) + ", " + std::to_string(states[k].width) + "]");
  }
  if (in.size() != (seq > 1 ? 3 : 2) + states.size())
    throw Error(where + ": takes " + std::to_string(in.size()) + " inputs; the ids, the positions" +
                (seq > 1 ? ", the last position" : "") + " and the caches expected");
}

void CompiledGenerator::State::check_room(int64_t n) const {
  if (n >= max_length)
    throw Error("a prompt of " + std::to_string(n) +
                " tokens leaves no room: the longest sequence is " + std::to_string(max_length));
}

const float* CompiledGenerator::State::extend_chunk_of(const std::vector<int32_t>& ids,
                                                       size_t first, int64_t count) {
  const int64_t pos = length;
  // The padding's rows land past the sequence (or past the capacity, where they are not
  // written), overwritten before any position reads them.
  auto e = std::find_if(extends.begin(), extends.end(), [&](const Decode& d) {
    return d.capacity >= std::max(pos + count, extend_chunk);
  });
  if (e == extends.end())
    throw Error("the sequence reached its longest (" + std::to_string(max_length) + " tokens)");
  set_capacity(e->capacity);
  std::vector<int32_t> chunk(static_cast<size_t>(extend_chunk), 0), positions(chunk.size());
  std::copy(ids.begin() + static_cast<std::ptrdiff_t>(first),
            ids.begin() + static_cast<std::ptrdiff_t>(first) + count, chunk.begin());
  for (size_t j = 0; j < positions.size(); ++j)
    positions[j] = static_cast<int32_t>(pos + static_cast<int64_t>(j));
  const auto last = static_cast<int32_t>(count - 1);
  std::vector<const void*> in(e->program->inputs().size());
  in[0] = chunk.data();
  in[e->positions_input] = positions.data();
  in[e->last_position_input] = &last;
  for (size_t k = 0; k < states.size(); ++k)
    in[e->state_caches[k]] = cache[k].data();
  e->run(in, *files->pool);
  append(*e, count, &e->state_written);
  tokens.insert(tokens.end(), chunk.begin(), chunk.begin() + count);
  return e->logits(0, vocab);
}

const float* CompiledGenerator::State::extend_from(const std::vector<int32_t>& ids, size_t first) {
  const float* logits = nullptr;
  for (size_t done = first; done < ids.size();) {
    const int64_t count = std::min<int64_t>(static_cast<int64_t>(ids.size() - done), extend_chunk);
    logits = extend_chunk_of(ids, done, count);
    done += static_cast<size_t>(count);
  }
  return logits;
}

void CompiledGenerator::State::set_capacity(int64_t c) {
  if (c == capacity) return;
  for (size_t s = 0; s < states.size(); ++s) {
    std::vector<std::byte> grown(static_cast<size_t>(c) * states[s].row_bytes);
    std::memcpy(grown.data(), cache[s].data(), static_cast<size_t>(length) * states[s].row_bytes);
    cache[s] = std::move(grown);
  }
  capacity = c;
}

void CompiledGenerator::State::append(const Graph& g, int64_t count,
                                      const std::vector<bool>* written) {
  for (size_t s = 0; s < states.size(); ++s) {
    if (written && (*written)[s]) continue;
    std::memcpy(cache[s].data() + static_cast<size_t>(length) * states[s].row_bytes,
                g.outputs[g.state_rows[s]].data(),
                static_cast<size_t>(count) * states[s].row_bytes);
  }
  length += count;
}

int64_t CompiledGenerator::State::capacity_for(int64_t n) const {
  if (n > max_length)
    throw Error("the sequence reached its longest (" + std::to_string(max_length) + " tokens)");
  return *std::lower_bound(capacities.begin(), capacities.end(), n);
}

CompiledGenerator CompiledGenerator::load(const std::string& dir, const LoadOptions& options) {
  auto s = std::make_unique<State>();
  s->dir = dir;
  s->path = dir + "/generation.json";
  const json m = read_json(s->path, "the artifact's generation graphs");
  try {
    check_artifact_header(m, s->path, "metatune-generation");
    s->model = m.value("model", "");
    s->vocab = m.at("vocab").get<int64_t>();
    s->max_length = m.at("max_length").get<int64_t>();
    for (const json& st : m.at("states")) {
      StateInfo info{st.at("path").get<std::string>(), st.at("dtype").get<std::string>(),
                     st.at("width").get<int64_t>(), 0};
      info.row_bytes = static_cast<size_t>(info.width) * dtype_bytes(info.dtype);
      if (info.row_bytes == 0)
        throw Error(s->path + ": state '" + info.path + "' has no rows (" + st.dump() + ")");
      s->states.push_back(std::move(info));
    }
    if (s->states.empty()) throw Error(s->path + ": the decoder keeps no state");
    s->files = ArtifactFiles::open(m, dir, s->path, options);
    for (const json& j : m.at("prefills")) {
      Prefill& p = s->prefills.emplace_back();
      s->load_graph(p, j);
      p.seq = p.program->inputs()[0].shape[1];
      p.last_position_input = index_field(j, "last_position_input");
      const auto& in = p.program->inputs();
      if (in.size() != (p.last_position_input == SIZE_MAX ? 1u : 2u) ||
          (p.last_position_input != SIZE_MAX &&
           (p.last_position_input != 1 || in[1].dtype != "i32" || in[1].num_elements() != 1)))
        throw Error(s->path + ": graph '" + p.name +
                    "' must take the ids and at most the last position i32[1]");
    }
    for (const json& j : m.at("decodes"))
      s->load_cached_graph(s->decodes.emplace_back(), j, 1);
    for (const json& j : m.value("extends", json::array())) {
      const int64_t seq = j.at("inputs").at(0).at("shape").at(1).get<int64_t>();
      if (s->extend_chunk != 0 && seq != s->extend_chunk)
        throw Error(s->path + ": extend builds of " + std::to_string(s->extend_chunk) + " and " +
                    std::to_string(seq) + " tokens (one length expected)");
      s->extend_chunk = seq;
      s->load_cached_graph(s->extends.emplace_back(), j, seq);
    }
  } catch (const json::exception& e) {
    throw Error(s->path + ": " + e.what());
  }
  if (s->prefills.empty() || s->decodes.empty())
    throw Error(s->path + ": needs at least one prefill and one decode graph");
  std::sort(s->prefills.begin(), s->prefills.end(),
            [](const Prefill& a, const Prefill& b) { return a.seq < b.seq; });
  std::sort(s->decodes.begin(), s->decodes.end(),
            [](const Decode& a, const Decode& b) { return a.capacity < b.capacity; });
  std::sort(s->extends.begin(), s->extends.end(),
            [](const Decode& a, const Decode& b) { return a.capacity < b.capacity; });
  for (const Prefill& p : s->prefills)
    s->buckets.push_back(p.seq);
  for (const Decode& d : s->decodes)
    s->capacities.push_back(d.capacity);
  s->max_length = std::min(s->max_length, s->capacities.back());
  s->cache.resize(s->states.size());
  return CompiledGenerator(std::move(s));
}

CompiledGenerator::CompiledGenerator(std::unique_ptr<State> state) : s_(std::move(state)) {}
CompiledGenerator::CompiledGenerator(CompiledGenerator&&) noexcept = default;
CompiledGenerator& CompiledGenerator::operator=(CompiledGenerator&&) noexcept = default;
CompiledGenerator::~CompiledGenerator() = default;

const float* CompiledGenerator::prefill(const std::vector<int32_t>& prompt) {
  const auto total = static_cast<int64_t>(prompt.size());
  if (total < 1) throw Error("the prompt is empty");
  s_->check_room(total);
  // A prompt longer than the largest bucket: its first chunk here, the rest by extend builds.
  const int64_t n = s_->extend_chunk > 0 ? std::min(total, s_->buckets.back()) : total;
  auto p = std::find_if(s_->prefills.begin(), s_->prefills.end(),
                        [&](const Prefill& g) { return g.seq >= n; });
  if (p == s_->prefills.end())
    throw Error("a prompt of " + std::to_string(n) +
                " tokens is longer than the artifact's largest prompt bucket (" +
                std::to_string(s_->buckets.back()) +
                "; `model compile --generation --prompt-buckets` sets them, and its extend "
                "builds take longer prompts in chunks)");
  Tensor ids(p->program->inputs()[0]); // zero-filled: the padding, causally invisible
  std::memcpy(ids.data(), prompt.data(), static_cast<size_t>(n) * sizeof(int32_t));
  Tensor last(TensorInfo{"last_position", "i32", {1}});
  last.as<int32_t>()[0] = static_cast<int32_t>(n - 1);
  std::vector<const void*> in = {ids.data()};
  if (p->last_position_input != SIZE_MAX) in.push_back(last.data());
  p->run(in, *s_->files->pool);
  s_->length = 0;
  s_->set_capacity(s_->capacity_for(n + 1));
  s_->append(*p, n, nullptr);
  s_->tokens.assign(prompt.begin(), prompt.begin() + n);
  const float* logits = p->logits(p->last_position_input != SIZE_MAX ? 0 : n - 1, s_->vocab);
  return n < total ? s_->extend_from(prompt, static_cast<size_t>(n)) : logits;
}

const float* CompiledGenerator::step(int32_t token) {
  if (s_->length == 0) throw Error("step() before prefill()");
  const int64_t pos = s_->length;
  const int64_t cap = s_->capacity_for(pos + 1);
  Decode& d = *std::find_if(s_->decodes.begin(), s_->decodes.end(),
                            [&](const Decode& g) { return g.capacity == cap; });
  s_->set_capacity(cap);
  const auto position = static_cast<int32_t>(pos);
  std::vector<const void*> in(d.program->inputs().size());
  in[0] = &token;
  in[d.positions_input] = &position;
  for (size_t k = 0; k < s_->states.size(); ++k)
    in[d.state_caches[k]] = s_->cache[k].data();
  d.run(in, *s_->files->pool);
  s_->append(d, 1, &d.state_written);
  s_->tokens.push_back(token);
  return d.logits(0, s_->vocab);
}

const float* CompiledGenerator::extend(const std::vector<int32_t>& tokens) {
  if (s_->length == 0) return prefill(tokens);
  if (tokens.empty()) throw Error("extend: no token given");
  if (s_->extend_chunk == 0)
    throw Error("the artifact has no extend builds (`model compile --generation "
                "--extend-chunk N`)");
  s_->check_room(s_->length + static_cast<int64_t>(tokens.size()));
  return s_->extend_from(tokens, 0);
}

void CompiledGenerator::truncate(int64_t length) {
  if (length < 0 || length > s_->length)
    throw Error("truncate to " + std::to_string(length) + " of " + std::to_string(s_->length) +
                " positions");
  s_->length = length;
  s_->tokens.resize(static_cast<size_t>(length));
}

const float* CompiledGenerator::prefill_reusing(const std::vector<int32_t>& prompt) {
  if (prompt.empty()) throw Error("the prompt is empty");
  s_->check_room(static_cast<int64_t>(prompt.size())); // before anything held is dropped
  size_t keep = 0;
  if (s_->extend_chunk > 0) {
    const size_t limit = std::min(s_->tokens.size(), prompt.size() - 1);
    while (keep < limit && s_->tokens[keep] == prompt[keep])
      ++keep;
  }
  s_->last_reused = static_cast<int64_t>(keep);
  if (keep == 0) return prefill(prompt);
  truncate(s_->last_reused);
  return extend(
      std::vector<int32_t>(prompt.begin() + static_cast<std::ptrdiff_t>(keep), prompt.end()));
}

int64_t CompiledGenerator::last_reused() const {
  return s_->last_reused;
}
const std::vector<int32_t>& CompiledGenerator::tokens() const {
  return s_->tokens;
}
int64_t CompiledGenerator::extend_chunk() const {
  return s_->extend_chunk;
}

int64_t CompiledGenerator::length() const {
  return s_->length;
}
int64_t CompiledGenerator::vocab() const {
  return s_->vocab;
}
int64_t CompiledGenerator::max_length() const {
  return s_->max_length;
}
const std::string& CompiledGenerator::model() const {
  return s_->model;
}
const std::vector<int64_t>& CompiledGenerator::prompt_buckets() const {
  return s_->buckets;
}
const std::vector<int64_t>& CompiledGenerator::capacities() const {
  return s_->capacities;
}
size_t CompiledGenerator::num_kernels() const {
  return s_->files->context.kernels.size();
}

} // namespace mt::rt
