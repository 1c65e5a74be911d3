// Tensors of a Hugging Face checkpoint folder being written by a test: deterministic values
// base + scale * wave(f * i + k), k counting the tensors added so each tensor differs, kept
// in HF's names for the test's float64 reference and written as one model.safetensors.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/model/safetensors_writer.h"
#include "graph_test_util.h"

namespace mt::graph_test {

struct HfTensors {
  std::map<std::string, std::vector<float>> tensors;
  std::map<std::string, std::vector<int64_t>> shapes;
  double (*wave)(double) = nullptr;
  double freq = 0;
  uint64_t k = 0;

  HfTensors(double (*w)(double), double f, uint64_t first) : wave(w), freq(f), k(first) {}
  void add(const std::string& n, std::vector<int64_t> shape, double scale, double base) {
    size_t count = 1;
    for (int64_t x : shape)
      count *= static_cast<size_t>(x);
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i)
      v[i] = static_cast<float>(base + scale * wave(freq * static_cast<double>(i) + k));
    ++k;
    tensors[n] = std::move(v);
    shapes[n] = std::move(shape);
  }
  void write(const std::filesystem::path& file) const {
    std::vector<SafetensorsTensor> ts;
    for (const auto& [n, v] : tensors)
      ts.push_back({n, SafetensorsDtype::F32, shapes.at(n), std::as_bytes(std::span(v))});
    write_safetensors(file.string(), ts);
  }
  Matrix m(const std::string& n) const {
    return Matrix(tensors.at(n).begin(), tensors.at(n).end());
  }
};

inline double sine(double x) {
  return std::sin(x);
}
inline double cosine(double x) {
  return std::cos(x);
}

} // namespace mt::graph_test
