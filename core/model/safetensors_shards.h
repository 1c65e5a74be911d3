// A checkpoint's weights as one set of named tensors, whether Hugging Face wrote them as one
// model.safetensors or split them into shards listed by model.safetensors.index.json (its
// "weight_map": tensor name -> shard file in the same folder), as it does past a few GB.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/safetensors_file.h"

namespace mt {

class SafetensorsShards {
public:
  // DIR/model.safetensors if there is one, else the shards DIR/model.safetensors.index.json
  // names. Throws std::invalid_argument naming the file when neither exists, the index is not
  // JSON with a weight_map of tensor -> file name, it names a file outside the folder, or a
  // tensor its shard does not hold; SafetensorsError for a shard that is missing or malformed.
  static SafetensorsShards open(const std::string& dir);

  // model.safetensors, or the index.
  const std::string& path() const { return path_; }
  // The file that holds `name` (path() when no file does).
  const std::string& path_of(std::string_view name) const;
  // Every tensor, in file order within each file, the files in the index's order.
  std::vector<std::string> names() const;
  const SafetensorsTensorInfo* find(std::string_view name) const;
  std::vector<float> to_f32(std::string_view name) const;
  size_t files() const { return files_.size(); }

private:
  std::string path_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t, std::less<>> by_name_; // tensor -> index in files_
};

} // namespace mt
