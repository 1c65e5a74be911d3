// weights.safetensors of an artifact, memory-mapped read-only: the kernels read the
// parameters where they lie in the file. Only what the runtime needs of the format: the
// little-endian header length, the JSON header, dtype/shape/offsets checked against the file
// size. Errors name the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mt::rt {

struct WeightView {
  std::string dtype; // safetensors' name: "F32", ...
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t bytes = 0;
};

class WeightsFile {
public:
  explicit WeightsFile(const std::string& path);
  ~WeightsFile();
  WeightsFile(const WeightsFile&) = delete;
  WeightsFile& operator=(const WeightsFile&) = delete;
  // `what` says who asks for it (for the message when the file does not hold it).
  const WeightView& tensor(const std::string& name, const std::string& what) const;
  const std::string& path() const { return path_; }

private:
  void index(); // the header's tensors

  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, WeightView> tensors_;
};

} // namespace mt::rt
