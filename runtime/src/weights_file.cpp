// Mapping weights.safetensors (see weights_file.h).
#include "weights_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "metatune/runtime/compiled_model.h"

namespace mt::rt {

namespace {

size_t item_bytes(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
      {"I32", 4},  {"U32", 4}, {"F32", 4}, {"I64", 8}, {"U64", 8}, {"F64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

} // namespace

WeightsFile::WeightsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": missing or unreadable (the artifact's weights)");
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < 8) {
    ::close(fd);
    throw Error(path + ": too short for a safetensors file");
  }
  size_ = static_cast<size_t>(st.st_size);
  map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw Error(path + ": cannot be memory-mapped");
  }
  try {
    index();
  } catch (...) {
    ::munmap(map_, size_);
    throw;
  }
}

void WeightsFile::index() {
  const std::string& path = path_;
  const auto* bytes = static_cast<const unsigned char*>(map_);
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i)
    header = header << 8 | bytes[i];
  if (header > size_ - 8) throw Error(path + ": header length past the end of the file");
  nlohmann::json j = nlohmann::json::parse(bytes + 8, bytes + 8 + header, nullptr, false);
  if (!j.is_object()) throw Error(path + ": the header is not a JSON object");
  const size_t data_start = 8 + header;
  for (auto& [name, t] : j.items()) {
    if (name == "__metadata__") continue;
    try {
      WeightView v;
      v.dtype = t.at("dtype").get<std::string>();
      v.shape = t.at("shape").get<std::vector<int64_t>>();
      auto offsets = t.at("data_offsets").get<std::vector<uint64_t>>();
      size_t elems = 1;
      for (int64_t d : v.shape)
        elems *= static_cast<size_t>(d);
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > size_ - data_start ||
          offsets[1] - offsets[0] != elems * item_bytes(v.dtype))
        throw Error("data_offsets do not match its dtype and shape or the file size");
      v.data = bytes + data_start + offsets[0];
      v.bytes = offsets[1] - offsets[0];
      tensors_.emplace(name, std::move(v));
    } catch (const std::exception& e) {
      throw Error(path + ": tensor '" + name + "': " + e.what());
    }
  }
}

WeightsFile::~WeightsFile() {
  if (map_) ::munmap(map_, size_);
}

const WeightView& WeightsFile::tensor(const std::string& name, const std::string& what) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + ": no tensor '" + name + "' (" + what + ")");
  return it->second;
}

} // namespace mt::rt
