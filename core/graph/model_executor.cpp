// Running a model's fused groups (see model_executor.h).
#include "core/graph/model_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/graph/packed_params.h"
#include "core/plugin/plugin_components.h"
#include "core/schedule/random.h"

namespace mt {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// FNV-1a of the path, mixed with the seed: each parameter its own stream.
uint64_t param_seed(uint64_t seed, const std::string& path) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : path)
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h ^ (seed * 0x9e3779b97f4a7c15ULL);
}

void fill(NDArray& a, const ModelParam& p, uint64_t seed) {
  if (a.dtype() != DType::f32())
    throw std::invalid_argument("parameter '" + p.path + "': only f32 parameters are initialised");
  nlohmann::json init = p.init.empty()
                            ? nlohmann::json{{"kind", "normal"}, {"std", 0.02}}
                            : nlohmann::json::parse(p.init, nullptr, /*allow_exceptions=*/false);
  std::string kind = init.value("kind", std::string());
  float* d = a.data_as<float>();
  int64_t n = a.num_elements();
  RandomEngine rng(param_seed(seed, p.path));
  if (kind == "zeros" || kind == "ones" || kind == "constant") {
    float v = kind == "zeros" ? 0.f : kind == "ones" ? 1.f : init.value("value", 0.f);
    for (int64_t i = 0; i < n; ++i)
      d[i] = v;
  } else if (kind == "uniform") {
    double s = init.value("scale", 1.0);
    for (int64_t i = 0; i < n; ++i)
      d[i] = static_cast<float>((2 * rng.uniform_real() - 1) * s);
  } else if (kind == "normal") {
    double sd = init.value("std", 0.02);
    for (int64_t i = 0; i < n; i += 2) { // Box-Muller: two values per pair of draws
      double u1 = 1.0 - rng.uniform_real(), u2 = rng.uniform_real();
      double r = std::sqrt(-2.0 * std::log(u1)) * sd;
      d[i] = static_cast<float>(r * std::cos(2 * M_PI * u2));
      if (i + 1 < n) d[i + 1] = static_cast<float>(r * std::sin(2 * M_PI * u2));
    }
  } else {
    throw std::invalid_argument("parameter '" + p.path + "': unknown initialiser '" + p.init +
                                "' (normal, uniform, zeros, ones, constant)");
  }
}

} // namespace

std::map<std::string, NDArray> init_params(const std::vector<ModelParam>& params, uint64_t seed) {
  std::map<std::string, NDArray> out;
  for (const ModelParam& p : params) {
    NDArray a(p.dtype, p.shape);
    fill(a, p, seed);
    out.emplace(p.path, std::move(a));
  }
  return out;
}

namespace {

std::vector<std::shared_ptr<const PluginModule>> build_all(const std::vector<FusedGroup>& groups,
                                                           const PluginTarget& target) {
  std::vector<std::shared_ptr<const PluginModule>> out;
  for (const FusedGroup& g : groups) {
    try {
      out.push_back(target.build(g.func));
    } catch (const std::exception& e) {
      throw std::runtime_error("building kernel '" + g.name + "' with " + target.info().name +
                               ": " + e.what());
    }
  }
  return out;
}

} // namespace

ModelExecutor::ModelExecutor(const ModelGraph& graph, std::vector<FusedGroup> groups,
                             const PluginTarget& target)
    : ModelExecutor(graph, groups, build_all(groups, target)) {}

ModelExecutor::ModelExecutor(const ModelGraph& graph, std::vector<FusedGroup> groups,
                             std::vector<std::shared_ptr<const PluginModule>> kernels)
    : graph_(graph), groups_(std::move(groups)), modules_(std::move(kernels)) {
  if (modules_.size() != groups_.size())
    throw std::invalid_argument("model executor: " + std::to_string(groups_.size()) +
                                " groups but " + std::to_string(modules_.size()) + " kernels");
  for (const ModelParam& p : graph_.params)
    param_by_path_[p.path] = p.placeholder.get();
  allocate();
  plan_state_writes();
}

void ModelExecutor::plan_state_writes() {
  state_writes_.assign(groups_.size() + 1, {});
  if (graph_.mode.kind != BuildMode::Kind::Decode) return;
  auto group_index = [&](auto&& has) {
    for (size_t g = 0; g < groups_.size(); ++g)
      if (has(groups_[g])) return g;
    return groups_.size();
  };
  for (size_t i = 0; i < graph_.states.size(); ++i) {
    const ModelState& st = graph_.states[i];
    if (!st.written_in_place || !st.cache) continue;
    auto in = [](const std::vector<te::Tensor>& v, const te::Tensor& t) {
      return std::any_of(v.begin(), v.end(),
                         [&](const te::Tensor& x) { return x.get() == t.get(); });
    };
    // The kernel computing the rows (none: the rows are an input, written before the first).
    size_t producer = group_index([&](const FusedGroup& g) { return in(g.outputs, st.rows); });
    if (producer == groups_.size() && !st.rows.is_placeholder())
      throw std::invalid_argument("state '" + st.path + "': no kernel computes its rows");
    size_t reader = group_index([&](const FusedGroup& g) { return in(g.inputs, st.cache); });
    if (reader != groups_.size() && producer != groups_.size() && reader <= producer)
      throw std::invalid_argument("state '" + st.path + "': kernel '" + groups_[reader].name +
                                  "' reads the cache before kernel '" + groups_[producer].name +
                                  "' has computed the step's rows it must hold");
    state_writes_[producer == groups_.size() ? 0 : producer + 1].push_back(i);
  }
}

void ModelExecutor::write_states(size_t before_group) {
  for (size_t i : state_writes_[before_group]) {
    const ModelState& st = graph_.states[i];
    const NDArray& rows = buffer_of(st.rows.get());
    NDArray& cache = buffer_of(st.cache.get());
    const NDArray& positions = buffer_of(graph_.positions.get());
    const int64_t B = rows.shape()[0], S = rows.shape()[1], C = cache.shape()[1];
    const size_t row = static_cast<size_t>(rows.shape()[2]) * rows.dtype().bytes();
    const auto* pos = positions.data_as<int32_t>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < S; ++j) {
        const int64_t p = pos[b * S + j];
        if (p < 0 || p >= C) continue; // beyond the cache: no kernel can read it
        std::memcpy(static_cast<char*>(cache.data()) + static_cast<size_t>(b * C + p) * row,
                    static_cast<const char*>(rows.data()) + static_cast<size_t>(b * S + j) * row,
                    row);
      }
  }
}

void ModelExecutor::allocate() {
  plan_ = plan_memory(groups_, graph_.outputs);
  plan_.verify();
  // operator new[] of std::byte is aligned only to max_align_t: over-allocate and align.
  arena_storage_ = std::make_unique<std::byte[]>(plan_.arena_bytes + MemoryPlan::kAlignment);
  auto base = reinterpret_cast<uintptr_t>(arena_storage_.get());
  auto* arena = reinterpret_cast<std::byte*>((base + MemoryPlan::kAlignment - 1) /
                                             MemoryPlan::kAlignment * MemoryPlan::kAlignment);
  for (const PlannedBuffer& b : plan_.buffers)
    buffers_.try_emplace(b.tensor, b.tensor->buffer->dtype, b.tensor->buffer->shape,
                         static_cast<void*>(arena + b.offset));
  for (const te::Tensor& t : graph_.outputs)
    buffers_.try_emplace(t.get(), t.dtype(), t.shape());
}

ModelExecutor::~ModelExecutor() = default;

void ModelExecutor::check_params(const std::map<std::string, NDArray>& values) const {
  for (const ModelParam& p : graph_.params) {
    auto it = values.find(p.path);
    if (it != values.end() && (it->second.shape() != p.shape || it->second.dtype() != p.dtype))
      throw std::invalid_argument(
          "parameter '" + p.path + "': expected " + to_string(p.dtype) + " " + shape_text(p.shape) +
          ", got " + to_string(it->second.dtype()) + " " + shape_text(it->second.shape()));
  }
  for (const auto& [path, v] : values)
    if (!param_by_path_.count(path))
      throw std::invalid_argument("no parameter '" + path + "' in the model");
}

void ModelExecutor::set_params(std::map<std::string, NDArray>&& values) {
  check_params(values);
  for (const ModelParam& p : graph_.params) {
    auto it = values.find(p.path);
    if (it != values.end()) buffers_.insert_or_assign(p.placeholder.get(), std::move(it->second));
  }
  drop_packed();
}

void ModelExecutor::set_params(const std::map<std::string, NDArray>& values) {
  check_params(values);
  for (const ModelParam& p : graph_.params) {
    auto it = values.find(p.path);
    if (it == values.end()) continue;
    const NDArray& v = it->second;
    buffers_.insert_or_assign(p.placeholder.get(),
                              NDArray(v.dtype(), v.shape(), const_cast<void*>(v.data())));
  }
  drop_packed();
}

void ModelExecutor::drop_packed() {
  packed_params_.reset();
  packed_flags_.clear();
  packed_views_.clear();
}

size_t ModelExecutor::pack_params(std::shared_ptr<PackedParams> cache) {
  packed_params_ = cache ? std::move(cache) : std::make_shared<PackedParams>();
  packed_flags_.assign(groups_.size(), {});
  packed_views_.assign(groups_.size(), {});
  std::map<const te::TensorNode*, std::string> params;
  for (const auto& [path, t] : param_by_path_)
    params.emplace(t, path);
  size_t n = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::vector<te::Tensor>& in = groups_[g].inputs;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!params.count(in[i].get()) || !buffers_.count(in[i].get())) continue; // unset
      const NDArray& src = buffer_of(in[i].get());
      void* data = nullptr;
      try {
        std::optional<PluginModule::PackedLayout> layout = modules_[g]->packed_layout(i);
        if (!layout) continue;
        data = packed_params_->get(params.at(in[i].get()), *modules_[g], i, *layout, src);
      } catch (const std::exception& e) {
        // A kernel that fails to pack still runs, reading the weight as given.
        spdlog::warn("kernel '{}': packing parameter '{}' failed ({}); it reads it as given",
                     groups_[g].name, params.at(in[i].get()), e.what());
        continue;
      }
      if (packed_flags_[g].empty()) {
        packed_flags_[g].assign(in.size() + groups_[g].outputs.size(), 0);
        packed_views_[g].resize(in.size());
      }
      packed_flags_[g][i] = 1;
      packed_views_[g][i] = NDArray(src.dtype(), src.shape(), data);
      ++n;
    }
  }
  return n;
}

size_t ModelExecutor::packed_args(size_t group) const {
  if (group >= packed_flags_.size()) return 0;
  return static_cast<size_t>(
      std::count(packed_flags_[group].begin(), packed_flags_[group].end(), uint8_t{1}));
}

NDArray& ModelExecutor::buffer_of(const te::TensorNode* t) {
  auto it = buffers_.find(t);
  if (it == buffers_.end()) {
    for (const ModelParam& p : graph_.params)
      if (p.placeholder.get() == t)
        throw std::invalid_argument("parameter '" + p.path + "' has no value (set_params)");
    throw std::logic_error("model executor: tensor '" + t->buffer->name +
                           "' has no buffer (a bug in metatune)");
  }
  return it->second;
}

std::vector<NDArray> ModelExecutor::run(const std::vector<NDArray>& inputs) {
  execute(inputs);
  std::vector<NDArray> out;
  for (size_t i = 0; i < graph_.outputs.size(); ++i)
    out.push_back(output(i));
  return out;
}

const NDArray& ModelExecutor::output(size_t i) const {
  return buffers_.at(graph_.outputs.at(i).get());
}

void ModelExecutor::execute(const std::vector<NDArray>& inputs) {
  if (inputs.size() != graph_.inputs.size())
    throw std::invalid_argument("the model takes " + std::to_string(graph_.inputs.size()) +
                                " inputs, " + std::to_string(inputs.size()) + " given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const te::Tensor& t = graph_.inputs[i];
    if (inputs[i].shape() != t.shape() || inputs[i].dtype() != t.dtype())
      throw std::invalid_argument("input " + std::to_string(i) + " ('" + t.name() +
                                  "'): expected " + to_string(t.dtype()) + " " +
                                  shape_text(t.shape()) + ", got " + to_string(inputs[i].dtype()) +
                                  " " + shape_text(inputs[i].shape()));
    // A view, not a copy: a decode step's inputs include the whole key/value cache.
    buffers_.insert_or_assign(t.get(), NDArray(inputs[i].dtype(), inputs[i].shape(),
                                               const_cast<void*>(inputs[i].data())));
  }
  group_seconds_.assign(profiling_ ? groups_.size() : 0, 0.0);
  for (size_t g = 0; g < groups_.size(); ++g) {
    write_states(g);
    const bool packed = g < packed_flags_.size() && !packed_flags_[g].empty();
    std::vector<NDArray*> args;
    for (size_t i = 0; i < groups_[g].inputs.size(); ++i)
      args.push_back(packed && packed_flags_[g][i] ? &packed_views_[g][i]
                                                   : &buffer_of(groups_[g].inputs[i].get()));
    for (const te::Tensor& t : groups_[g].outputs)
      args.push_back(&buffer_of(t.get()));
    auto call = [&] {
      if (packed)
        modules_[g]->run_packed(args, packed_flags_[g]);
      else
        modules_[g]->run(args);
    };
    if (!profiling_) {
      call();
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    call();
    group_seconds_[g] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  write_states(groups_.size());
}

} // namespace mt
