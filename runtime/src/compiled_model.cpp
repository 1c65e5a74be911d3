// Loading and running an artifact (see compiled_model.h). Everything model.json says is
// checked at load time against the kernel library's descriptor and the weights (argument
// counts and sizes, arena bounds, symbols, tensors), so that run() only checks the inputs.
#include "metatune/runtime/compiled_model.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "artifact_files.h"
#include "program.h"
#include "thread_pool.h"

namespace mt::rt {

using nlohmann::json;

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t TensorInfo::bytes() const {
  return static_cast<size_t>(num_elements()) * dtype_bytes(dtype);
}

std::string TensorInfo::to_string() const {
  std::string s = dtype + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(TensorInfo info)
    : info_(std::move(info)), data_(new std::byte[std::max<size_t>(1, info_.bytes())]()) {}

struct CompiledModel::State {
  std::string dir, model;
  std::unique_ptr<ArtifactFiles> files;
  std::unique_ptr<Program> program; // calls into files' kernels: destroyed first
  size_t num_kernels = 0;
};

CompiledModel CompiledModel::load(const std::string& dir, const LoadOptions& options) {
  auto s = std::make_unique<State>();
  s->dir = dir;
  const std::string path = dir + "/model.json";
  const json m = read_json(path, "the artifact's graph");
  try {
    check_artifact_header(m, path, "metatune-model");
    s->model = m.value("model", "");
    // The graph's fields first: a model.json without them is named for them.
    (void)m.at("inputs");
    s->files = ArtifactFiles::open(m, dir, path, options);
    s->program = std::make_unique<Program>(m, path, s->files->context);
    s->num_kernels = s->files->context.kernels.size();
  } catch (const json::exception& e) {
    throw Error(path + ": " + e.what());
  }
  return CompiledModel(std::move(s));
}

CompiledModel::CompiledModel(std::unique_ptr<State> state) : s_(std::move(state)) {}
CompiledModel::CompiledModel(CompiledModel&&) noexcept = default;
CompiledModel& CompiledModel::operator=(CompiledModel&&) noexcept = default;
CompiledModel::~CompiledModel() = default;

const std::string& CompiledModel::model() const {
  return s_->model;
}
const std::vector<TensorInfo>& CompiledModel::inputs() const {
  return s_->program->inputs();
}
const std::vector<TensorInfo>& CompiledModel::outputs() const {
  return s_->program->outputs();
}
size_t CompiledModel::num_kernels() const {
  return s_->num_kernels;
}
size_t CompiledModel::num_groups() const {
  return s_->program->num_calls();
}
size_t CompiledModel::arena_bytes() const {
  return s_->program->arena_bytes();
}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor>& inputs) {
  const std::vector<TensorInfo>& want_inputs = s_->program->inputs();
  if (inputs.size() != want_inputs.size())
    throw Error("the model takes " + std::to_string(want_inputs.size()) + " inputs, " +
                std::to_string(inputs.size()) + " given");
  std::vector<const void*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& want = want_inputs[i];
    const TensorInfo& have = inputs[i].info();
    if (have.dtype != want.dtype || have.shape != want.shape)
      throw Error("input " + std::to_string(i) + " ('" + want.name + "'): expected " +
                  want.to_string() + ", got " + have.to_string());
    in.push_back(inputs[i].data());
  }
  std::vector<Tensor> outputs;
  std::vector<void*> out;
  for (const TensorInfo& t : s_->program->outputs())
    out.push_back(outputs.emplace_back(t).data());
  s_->program->run(in, out, *s_->files->pool);
  return outputs;
}

std::vector<Tensor> CompiledModel::run(const std::vector<int32_t>& ids) {
  const std::vector<TensorInfo>& inputs = s_->program->inputs();
  if (inputs.size() != 1 || inputs[0].dtype != "i32")
    throw Error("run(ids) is for a model with one i32 input; this one takes " +
                std::to_string(inputs.size()) + " inputs");
  const TensorInfo& want = inputs[0];
  if (static_cast<int64_t>(ids.size()) != want.num_elements())
    throw Error("input 0 ('" + want.name + "'): expected " + want.to_string() + " (" +
                std::to_string(want.num_elements()) + " token ids), got " +
                std::to_string(ids.size()) + " ids");
  Tensor in(want);
  std::memcpy(in.data(), ids.data(), ids.size() * sizeof(int32_t));
  return run(std::vector<Tensor>{std::move(in)});
}

} // namespace mt::rt
