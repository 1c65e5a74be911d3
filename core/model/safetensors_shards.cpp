#include "core/model/safetensors_shards.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace mt {

SafetensorsShards SafetensorsShards::open(const std::string& dir) {
  namespace fs = std::filesystem;
  SafetensorsShards s;
  const std::string single = dir + "/model.safetensors",
                    index = dir + "/model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(single, ec) || !fs::exists(index, ec)) {
    if (!fs::exists(single, ec))
      throw std::invalid_argument(single + ": missing (the checkpoint's weights; no " +
                                  "model.safetensors.index.json either)");
    s.path_ = single;
    s.files_.push_back(SafetensorsFile::open(single));
  } else {
    s.path_ = index;
    std::ifstream in(index);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
        !j["weight_map"].is_object())
      throw std::invalid_argument(index + ": not a JSON object with a \"weight_map\"");
    std::map<std::string, size_t> shard_of_file;
    std::vector<std::pair<std::string, std::string>> wanted; // tensor, file
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        throw std::invalid_argument(index + ": weight_map[\"" + it.key() +
                                    "\"] is not a file name: " + it.value().dump());
      const std::string file = it.value().get<std::string>();
      if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
        throw std::invalid_argument(index + ": weight_map[\"" + it.key() + "\"] names '" + file +
                                    "', not a file of the folder");
      if (!shard_of_file.count(file)) {
        shard_of_file[file] = s.files_.size();
        s.files_.push_back(SafetensorsFile::open(dir + "/" + file));
      }
      wanted.emplace_back(it.key(), file);
    }
    for (const auto& [tensor, file] : wanted) {
      const size_t shard = shard_of_file.at(file);
      if (!s.files_[shard].find(tensor))
        throw std::invalid_argument(index + ": weight_map puts '" + tensor + "' in " + file +
                                    ", which has no such tensor");
      s.by_name_[tensor] = shard;
    }
  }
  // Tensors a shard holds beyond the index are still there (the loader names the unused).
  for (size_t f = 0; f < s.files_.size(); ++f)
    for (const SafetensorsTensorInfo& t : s.files_[f].tensors())
      s.by_name_.emplace(t.name, f);
  return s;
}

const std::string& SafetensorsShards::path_of(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? path_ : files_[it->second].path();
}

std::vector<std::string> SafetensorsShards::names() const {
  std::vector<std::string> out;
  for (const SafetensorsFile& f : files_)
    for (const SafetensorsTensorInfo& t : f.tensors())
      out.push_back(t.name);
  return out;
}

const SafetensorsTensorInfo* SafetensorsShards::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : files_[it->second].find(name);
}

std::vector<float> SafetensorsShards::to_f32(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end())
    throw std::invalid_argument(path_ + ": no tensor '" + std::string(name) + "'");
  return files_[it->second].to_f32(name);
}

} // namespace mt
