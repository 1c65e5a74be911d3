// The ahead-of-time model runtime: loads the folder `metatune model compile --out DIR` writes
// (kernels.so, model.json, weights.safetensors; docs/models.md) and runs the model -- the
// kernels in the order of model.json on the weights (memory-mapped) and one arena of
// intermediates -- with neither LLVM nor metatune's core or plugins in the process:
//
//   mt::rt::CompiledModel m = mt::rt::CompiledModel::load("gpt2-aot");
//   std::vector<mt::rt::Tensor> out = m.run(std::vector<int32_t>{464, 2068, 7586});
//   const float* logits = out[0].as<float>();
//
// Errors throw mt::rt::Error naming the file and the thing: a missing file, model.json that
// is not JSON or lacks a field, a symbol kernels.so does not export, a tensor the weights do
// not hold, an input of the wrong dtype or shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mt::rt {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct TensorInfo {
  std::string name;
  std::string dtype; // "f32", "i32", ... (metatune's dtype names)
  std::vector<int64_t> shape;
  int64_t num_elements() const;
  size_t bytes() const;
  std::string to_string() const; // "f32[1, 5, 512]"
};

// A dense, row-major tensor that owns its bytes.
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(TensorInfo info); // zero-filled
  const TensorInfo& info() const { return info_; }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <typename T> T* as() { return static_cast<T*>(data()); }
  template <typename T> const T* as() const { return static_cast<const T*>(data()); }

private:
  TensorInfo info_;
  std::shared_ptr<std::byte[]> data_;
};

struct LoadOptions {
  int num_threads = 0; // threads of the kernels' parallel loops; 0: one per hardware thread
};

class CompiledModel {
public:
  static CompiledModel load(const std::string& dir, const LoadOptions& options = {});
  CompiledModel(CompiledModel&&) noexcept;
  CompiledModel& operator=(CompiledModel&&) noexcept;
  ~CompiledModel();

  const std::string& model() const;               // the config's kind, "std.Decoder"
  const std::vector<TensorInfo>& inputs() const;  // in the order run() takes them
  const std::vector<TensorInfo>& outputs() const; // in the order run() returns them
  size_t num_kernels() const;                     // distinct kernels in kernels.so
  size_t num_groups() const;                      // kernel calls per run
  size_t arena_bytes() const;

  // The outputs for `inputs` (dtype and shape checked against inputs()).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // For a model with one i32 input (token ids, [batch, seq]): its elements in row-major order.
  std::vector<Tensor> run(const std::vector<int32_t>& ids);

  struct State; // opaque: the implementation's

private:
  explicit CompiledModel(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

} // namespace mt::rt
